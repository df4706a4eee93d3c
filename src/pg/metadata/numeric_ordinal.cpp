// Stored numeric to double without text (numeric_ordinal.h).
#include "pg/metadata/numeric_ordinal.h"

#include <cstdint>
#include <cstring>

namespace dxpriv::pg {

namespace {

// The on-disk numeric format of PostgreSQL (src/backend/utils/adt/numeric.c, stable since 9.1):
// after the varlena header, a uint16 header word; short format (header & 0xC000 == 0x8000): sign,
// display scale and a 7-bit signed weight in that word, base-10000 int16 digits follow; long format
// (0x0000 positive, 0x4000 negative): the word holds sign and dscale, an int16 weight follows, then
// the digits; 0xC000 marks NaN and the infinities.
constexpr uint16 kSignMask = 0xC000;
constexpr uint16 kPos = 0x0000;
constexpr uint16 kNeg = 0x4000;
constexpr uint16 kShort = 0x8000;
constexpr uint16 kShortSignMask = 0x2000;
constexpr uint16 kShortWeightSignMask = 0x0040;
constexpr uint16 kShortWeightMask = 0x003F;

constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
constexpr uint64_t kTwo53 = uint64_t{1} << 53;

} // namespace

// See numeric_ordinal.h.
bool
numeric_to_double_exact(Datum value, double &out)
{
	const struct varlena *v = reinterpret_cast<const struct varlena *>(DatumGetPointer(value));
	if (VARATT_IS_EXTENDED(v) && !VARATT_IS_SHORT(v))
		return false; // compressed or external: the text path detoasts
	const char *p = VARDATA_ANY(v);
	const size_t len = VARSIZE_ANY_EXHDR(v);
	if (len < sizeof(uint16))
		return false;
	uint16 header;
	std::memcpy(&header, p, sizeof header);
	bool negative;
	int weight;
	size_t head;
	if ((header & kSignMask) == kShort) {
		negative = (header & kShortSignMask) != 0;
		weight = (header & kShortWeightSignMask) ? static_cast<int>(~kShortWeightMask | (header & kShortWeightMask))
		                                         : static_cast<int>(header & kShortWeightMask);
		head = sizeof(uint16);
	} else if ((header & kSignMask) == kPos || (header & kSignMask) == kNeg) {
		if (len < 2 * sizeof(uint16))
			return false;
		negative = (header & kSignMask) == kNeg;
		int16 w;
		std::memcpy(&w, p + sizeof(uint16), sizeof w);
		weight = w;
		head = 2 * sizeof(uint16);
	} else {
		return false; // NaN, +-Infinity
	}
	if ((len - head) % sizeof(int16) != 0)
		return false;
	const int ndigits = static_cast<int>((len - head) / sizeof(int16));
	// value = sum_i digit[i] * 10000^(weight - i) = M * 10^(4 * (weight - ndigits + 1))
	uint64_t m = 0;
	for (int i = 0; i < ndigits; ++i) {
		int16 d;
		std::memcpy(&d, p + head + sizeof(int16) * i, sizeof d);
		if (d < 0 || d >= 10000)
			return false;
		m = m * 10000 + static_cast<uint64_t>(d);
		if (m >= kTwo53)
			return false; // also keeps the next multiplication from overflowing
	}
	int exponent = ndigits == 0 ? 0 : 4 * (weight - ndigits + 1);
	while (exponent < 0 && m != 0 && m % 10 == 0) { // 1.50 stored as 1|5000 * 10^-4: shorten M
		m /= 10;
		++exponent;
	}
	if (exponent > 22 || exponent < -22)
		return false;
	const double x = static_cast<double>(m); // exact: m < 2^53
	double r = exponent >= 0 ? x * kPow10[exponent] : x / kPow10[-exponent];
	out = negative ? -r : r;
	return true;
}

} // namespace dxpriv::pg
