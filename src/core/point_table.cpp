// Dictionary encoding of per-point tables (point_table.h).
#include "core/point_table.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace dxpriv {

namespace {

constexpr unsigned char kMagic = 'P';
constexpr unsigned char kVersion = 1;
constexpr std::size_t kHeader = 12;

void
put_u32(std::string &out, std::uint32_t v)
{
	for (int i = 0; i < 4; ++i)
		out += static_cast<char>((v >> (8 * i)) & 0xff);
}

std::uint32_t
get_u32(const unsigned char *p)
{
	return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
	       (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

[[noreturn]] void
malformed()
{
	throw CoreError(ErrorKind::DataException, "invalid dxpriv point table",
	                "The table is built by dxpriv's analyzer; it cannot be written by hand.");
}

// The direct layout: header, presence bitmap, one double per point.
std::string
encode_direct(const std::vector<std::optional<double>> &values)
{
	const std::size_t n = values.size();
	std::string out;
	out.reserve(kHeader + (n + 7) / 8 + 8 * n);
	out += static_cast<char>(kMagic);
	out += static_cast<char>(kVersion);
	out += static_cast<char>(PointTableView::kDirect);
	out += '\0';
	put_u32(out, static_cast<std::uint32_t>(n));
	put_u32(out, 0);
	std::string bitmap((n + 7) / 8, '\0');
	for (std::size_t u = 0; u < n; ++u)
		if (values[u])
			bitmap[u >> 3] = static_cast<char>(static_cast<unsigned char>(bitmap[u >> 3]) | (1u << (u & 7)));
	out += bitmap;
	for (const std::optional<double> &v : values) {
		const double d = v ? *v : 0.0;
		char b[8];
		std::memcpy(b, &d, 8);
		out.append(b, 8);
	}
	return out;
}

} // namespace

// See point_table.h.
std::string
encode_point_table(const std::vector<std::optional<double>> &values)
{
	if (values.size() > std::numeric_limits<std::uint32_t>::max())
		throw CoreError(ErrorKind::ProgramLimit, "point table has too many points");
	std::vector<double> dict;
	for (const std::optional<double> &v : values) {
		if (!v)
			continue;
		if (std::isnan(*v))
			throw CoreError(ErrorKind::Internal, "point table value is NaN");
		dict.push_back(*v);
	}
	std::sort(dict.begin(), dict.end());
	// -0.0 and 0.0 compare equal: keep one (the first), they weigh the same
	dict.erase(std::unique(dict.begin(), dict.end()), dict.end());
	const std::size_t k = dict.size();
	const std::size_t n = values.size();
	const unsigned width = k < 0xff ? 1 : k < 0xffff ? 2 : 4;
	if (8 * k + width * n >= (n + 7) / 8 + 8 * n)
		return encode_direct(values);
	std::string out;
	out.reserve(kHeader + 8 * k + width * values.size());
	out += static_cast<char>(kMagic);
	out += static_cast<char>(kVersion);
	out += static_cast<char>(width);
	out += '\0';
	put_u32(out, static_cast<std::uint32_t>(values.size()));
	put_u32(out, static_cast<std::uint32_t>(k));
	for (double d : dict) {
		unsigned char b[8];
		std::memcpy(b, &d, 8);
		out.append(reinterpret_cast<const char *>(b), 8);
	}
	for (const std::optional<double> &v : values) {
		std::uint32_t code = 0;
		if (v)
			code = static_cast<std::uint32_t>(std::lower_bound(dict.begin(), dict.end(), *v) - dict.begin()) + 1;
		for (unsigned i = 0; i < width; ++i)
			out += static_cast<char>((code >> (8 * i)) & 0xff);
	}
	return out;
}

// See point_table.h.
PointTableView::PointTableView(const unsigned char *data, std::size_t len)
{
	static_assert(sizeof(double) == 8, "IEEE-754 doubles expected");
	if (len < kHeader || data[0] != kMagic || data[1] != kVersion || data[3] != 0)
		malformed();
	width_ = data[2];
	if (width_ != 1 && width_ != 2 && width_ != 4 && width_ != kDirect)
		malformed();
	n_ = get_u32(data + 4);
	k_ = get_u32(data + 8);
	if (width_ == kDirect) {
		const std::size_t bitmap = (n_ + 7) / 8;
		if (k_ != 0 || len != kHeader + bitmap + 8 * n_)
			malformed();
		presence_ = data + kHeader;
		codes_ = presence_ + bitmap;
		for (std::size_t u = 0; u < n_; ++u) {
			double v;
			std::memcpy(&v, codes_ + 8 * u, 8);
			if (std::isnan(v))
				malformed();
		}
		if (n_ % 8 != 0 && (presence_[bitmap - 1] >> (n_ % 8)) != 0) // bits past the last point
			malformed();
		return;
	}
	if (len != kHeader + 8 * k_ + width_ * n_)
		malformed();
	values_.resize(k_);
	for (std::size_t i = 0; i < k_; ++i) {
		std::memcpy(&values_[i], data + kHeader + 8 * i, 8);
		if (std::isnan(values_[i]))
			malformed();
	}
	codes_ = data + kHeader + 8 * k_;
	for (std::size_t u = 0; u < n_; ++u) // every code must name a value: lookups need no check
		if (code(u) > k_)
			malformed();
}

} // namespace dxpriv
