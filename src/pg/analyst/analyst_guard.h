// The analyst layer's interface as the analyzer and the hooks use it (every analyst header);
// other files include the header of the analyst file they use.
#pragma once

#include "pg/analyst/analyst_context.h"
#include "pg/analyst/catalog_sizes.h"
#include "pg/analyst/citus_surface.h"
#include "pg/analyst/executor_admission.h"
#include "pg/analyst/inheritance.h"
#include "pg/analyst/plain_aggregates.h"
#include "pg/analyst/query_admission.h"
#include "pg/analyst/refusals.h"
#include "pg/analyst/side_channels.h"
