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

void
put_double(std::string &out, double d)
{
	char b[8];
	std::memcpy(b, &d, 8);
	out.append(b, 8);
}

// The 12-byte header: magic, version, layout (a dictionary code width, kDirect or kAffine), a zero
// byte, the number of points and the dictionary size (0 outside the dictionary layout).
void
put_header(std::string &out, unsigned layout, std::size_t n, std::size_t k)
{
	out += static_cast<char>(kMagic);
	out += static_cast<char>(kVersion);
	out += static_cast<char>(layout);
	out += '\0';
	put_u32(out, static_cast<std::uint32_t>(n));
	put_u32(out, static_cast<std::uint32_t>(k));
}

// Header and presence bitmap of the direct and column-affine layouts.
std::string
header_and_bitmap(const std::vector<std::optional<double>> &values, unsigned layout)
{
	const std::size_t n = values.size();
	std::string out;
	put_header(out, layout, n, 0);
	std::string bitmap((n + 7) / 8, '\0');
	for (std::size_t u = 0; u < n; ++u)
		if (values[u])
			bitmap[u >> 3] = static_cast<char>(static_cast<unsigned char>(bitmap[u >> 3]) | (1u << (u & 7)));
	return out + bitmap;
}

// The column-affine layout when some column j makes every present value exactly
// a + b * ((u / d) % m) (d: the product of the sizes after j, m: its size); nullopt otherwise.
std::optional<std::string>
encode_affine(const std::vector<std::optional<double>> &values, const std::vector<std::size_t> &dims)
{
	const std::size_t n = values.size();
	std::size_t product = 1;
	for (std::size_t s : dims)
		product *= s;
	if (dims.empty() || product != n || n > std::numeric_limits<std::uint32_t>::max())
		return std::nullopt;
	std::size_t d = 1;
	for (std::size_t j = dims.size(); j-- > 0; d *= dims[j]) {
		const std::size_t m = dims[j];
		// a and b from the first present points at column indexes 0 and 1 (any other pair works
		// only if these do, since all present values must fit)
		std::optional<double> a, b;
		for (std::size_t u = 0; u < n && !(a && b); ++u) {
			if (!values[u])
				continue;
			const std::size_t i = (u / d) % m;
			if (i == 0 && !a)
				a = *values[u];
			else if (i == 1 && a && !b)
				b = *values[u] - *a;
		}
		if (!a)
			continue;
		if (!b)
			b = 0.0;
		bool exact = true;
		for (std::size_t u = 0; u < n && exact; ++u)
			exact = !values[u] || *a + *b * static_cast<double>((u / d) % m) == *values[u];
		if (!exact)
			continue;
		std::string out = header_and_bitmap(values, PointTableView::kAffine);
		put_double(out, *a);
		put_double(out, *b);
		put_u32(out, static_cast<std::uint32_t>(d));
		put_u32(out, static_cast<std::uint32_t>(m));
		return out;
	}
	return std::nullopt;
}

// The direct layout: header, presence bitmap, one double per point.
std::string
encode_direct(const std::vector<std::optional<double>> &values)
{
	std::string out = header_and_bitmap(values, PointTableView::kDirect);
	for (const std::optional<double> &v : values)
		put_double(out, v ? *v : 0.0);
	return out;
}

} // namespace

// See point_table.h.
bool
PointTableView::uniform(double &value, bool &every) const
{
	bool found = false;
	every = true;
	auto meet = [&](double v) {
		if (found && v != value)
			return false;
		value = v;
		found = true;
		return true;
	};
	if (width_ == kPieces) { // a + b * u on each piece: one value iff b == 0 (or a single point)
		for (std::size_t i = 0; i < pieces_.size(); ++i) {
			const PointTablePiece &p = pieces_[i];
			if (!p.present) {
				every = false;
				continue;
			}
			const std::size_t last = i + 1 < pieces_.size() ? pieces_[i + 1].start - 1 : n_ - 1;
			if (!meet(p.a + p.b * static_cast<double>(p.start)) || !meet(p.a + p.b * static_cast<double>(last)))
				return false;
			if (p.b != 0 && last > p.start + 1) // three or more points of a sloped line differ
				return false;
		}
		return found;
	}
	for (std::size_t u = 0; u < n_; ++u) {
		double v;
		if (!lookup(u, v)) {
			every = false;
			continue;
		}
		if (!meet(v))
			return false;
	}
	return found;
}

// See point_table.h.
std::string
encode_point_table_pieces(std::size_t n, const std::vector<PointTablePiece> &pieces)
{
	if (n == 0 || n > std::numeric_limits<std::uint32_t>::max() || pieces.empty() || pieces[0].start != 0)
		throw CoreError(ErrorKind::Internal, "malformed point table pieces");
	for (std::size_t i = 0; i < pieces.size(); ++i)
		if (pieces[i].start >= n || (i > 0 && pieces[i].start <= pieces[i - 1].start) || !std::isfinite(pieces[i].a) ||
		    !std::isfinite(pieces[i].b))
			throw CoreError(ErrorKind::Internal, "malformed point table pieces");
	std::string out;
	put_header(out, PointTableView::kPieces, n, pieces.size());
	for (const PointTablePiece &p : pieces) {
		put_u32(out, static_cast<std::uint32_t>(p.start));
		put_u32(out, p.present ? 1 : 0);
		put_double(out, p.a);
		put_double(out, p.b);
	}
	return out;
}

// See point_table.h.
std::string
encode_point_table(const std::vector<std::optional<double>> &values, const std::vector<std::size_t> &dims)
{
	if (values.size() > std::numeric_limits<std::uint32_t>::max())
		throw CoreError(ErrorKind::ProgramLimit, "point table has too many points");
	for (const std::optional<double> &v : values)
		if (v && std::isnan(*v))
			throw CoreError(ErrorKind::Internal, "point table value is NaN");
	if (std::optional<std::string> affine = encode_affine(values, dims)) // smallest when exact (no dictionary)
		return *affine;
	std::vector<double> dict;
	for (const std::optional<double> &v : values)
		if (v)
			dict.push_back(*v);
	std::sort(dict.begin(), dict.end());
	// -0.0 and 0.0 compare equal: keep one (the first), they weigh the same
	dict.erase(std::unique(dict.begin(), dict.end()), dict.end());
	const std::size_t k = dict.size();
	const std::size_t n = values.size();
	const unsigned width = k < 0xff ? 1 : k < 0xffff ? 2 : 4;
	if (8 * k + width * n >= (n + 7) / 8 + 8 * n) // the dictionary does not compress
		return encode_direct(values);
	std::string out;
	out.reserve(kHeader + 8 * k + width * n);
	put_header(out, width, n, k);
	for (double d : dict)
		put_double(out, d);
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
	if (width_ != 1 && width_ != 2 && width_ != 4 && width_ != kDirect && width_ != kAffine && width_ != kPieces)
		malformed();
	n_ = get_u32(data + 4);
	k_ = get_u32(data + 8);
	if (width_ == kPieces) {
		if (k_ == 0 || len != kHeader + 24 * k_)
			malformed();
		for (std::size_t i = 0; i < k_; ++i) {
			const unsigned char *p = data + kHeader + 24 * i;
			PointTablePiece piece;
			piece.start = get_u32(p);
			const std::uint32_t flag = get_u32(p + 4);
			piece.present = flag == 1;
			std::memcpy(&piece.a, p + 8, 8);
			std::memcpy(&piece.b, p + 16, 8);
			if (flag > 1 || piece.start >= n_ || (i == 0 ? piece.start != 0 : piece.start <= pieces_.back().start) ||
			    !std::isfinite(piece.a) || !std::isfinite(piece.b))
				malformed();
			pieces_.push_back(piece);
		}
		for (std::size_t i = 0; i < k_; ++i) { // every present value finite: a + b * u is monotone in u
			const std::size_t last = i + 1 < k_ ? pieces_[i + 1].start - 1 : n_ - 1;
			const PointTablePiece &p = pieces_[i];
			if (p.present && (!std::isfinite(p.a + p.b * static_cast<double>(p.start)) ||
			                  !std::isfinite(p.a + p.b * static_cast<double>(last))))
				malformed();
		}
		return;
	}
	if (width_ == kAffine) {
		const std::size_t bitmap = (n_ + 7) / 8;
		if (k_ != 0 || len != kHeader + bitmap + 24)
			malformed();
		presence_ = data + kHeader;
		const unsigned char *p = presence_ + bitmap;
		std::memcpy(&affine_a_, p, 8);
		std::memcpy(&affine_b_, p + 8, 8);
		affine_d_ = get_u32(p + 16);
		affine_m_ = get_u32(p + 20);
		if (!std::isfinite(affine_a_) || !std::isfinite(affine_b_) || affine_d_ == 0 || affine_m_ == 0 ||
		    (n_ % 8 != 0 && (presence_[bitmap - 1] >> (n_ % 8)) != 0))
			malformed();
		for (std::size_t u = 0; u < n_; ++u) // every present value finite
			if (((presence_[u >> 3] >> (u & 7)) & 1) &&
			    !std::isfinite(affine_a_ + affine_b_ * static_cast<double>((u / affine_d_) % affine_m_)))
				malformed();
		return;
	}
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

// See point_table.h.
std::vector<std::size_t>
drop_constant_dimensions(std::vector<std::optional<double>> &values, std::vector<std::size_t> &dims)
{
	std::size_t total = 1;
	for (std::size_t d : dims)
		total *= d;
	if (total != values.size())
		throw CoreError(ErrorKind::InvalidParameter, "a point table's size must be the product of its dimensions",
		                "The table is built over the sub-universe of its columns.");
	std::vector<std::size_t> kept(dims.size());
	for (std::size_t i = 0; i < kept.size(); ++i)
		kept[i] = i;
	for (std::size_t i = dims.size(); i-- > 0;) {
		std::size_t stride = 1;
		for (std::size_t j = i + 1; j < dims.size(); ++j)
			stride *= dims[j];
		const std::size_t n = dims[i];
		bool constant = true;
		// point u has coordinate (u / stride) % n along dimension i; compare with coordinate 0
		for (std::size_t u = 0; u < values.size() && constant; ++u)
			if ((u / stride) % n != 0) {
				const std::optional<double> &a = values[u], &b = values[u - ((u / stride) % n) * stride];
				constant = a.has_value() == b.has_value() && (!a || *a == *b);
			}
		if (!constant)
			continue;
		std::vector<std::optional<double>> reduced;
		reduced.reserve(values.size() / n);
		for (std::size_t u = 0; u < values.size(); ++u)
			if ((u / stride) % n == 0)
				reduced.push_back(values[u]);
		values.swap(reduced);
		dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(i));
		kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
	}
	return kept;
}

} // namespace dxpriv
