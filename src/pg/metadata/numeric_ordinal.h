// Conversion of a stored numeric to double without going through its text form (the per-row path of
// range-domain numeric columns; datum_to_ordinal in policy_domain.cpp).
#pragma once

extern "C" {
#include "postgres.h"
}

namespace dxpriv::pg {

// Contract: when it returns true, out is bit-identical to numeric_float8_no_overflow(value) (the
// correctly rounded double of the numeric's decimal value, what strtod of its text gives): it only
// answers when the value is M * 10^E with an integer |M| < 2^53 and |E| <= 22, where one IEEE
// multiplication or division of two exact doubles is correctly rounded. Returns false (the caller
// falls back to the text path) for NaN, infinities, compressed or external values and every other
// value. Reads the datum in place (packed short headers included); never allocates or errors.
bool numeric_to_double_exact(Datum value, double &out);

} // namespace dxpriv::pg
