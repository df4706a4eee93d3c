// Table policies: column declarations validated, policies loaded (declared in dxpriv.h until it is retired).
#pragma once

#include "pg/dxpriv.h"
