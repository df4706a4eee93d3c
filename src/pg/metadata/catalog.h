// Running dxpriv's own catalog SQL as the extension owner, outside the hooks' view: the sealed path
// of src/pg/elevated (InternalSpi is its SealedSpi; the names stay for the callers).
#pragma once

extern "C" {
#include "postgres.h"
}

#include "pg/elevated/sealed_execution.h"

namespace dxpriv::pg {

// SPI as the owner of schema dx (or another owner), sealed: see sealed_execution.h.
using InternalSpi = SealedSpi;

} // namespace dxpriv::pg
