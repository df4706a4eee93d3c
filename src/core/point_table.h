// The per-point table of an analysed query: for every point of a sub-universe, the value a row at
// that point contributes (or none), in a compact dictionary encoding that travels inside the plan.
//
// Execution by lookup: the analyst's expressions (WHERE, FILTER, aggregate arguments) are evaluated
// once, at analysis, on the declared domain points; at execution a row is only mapped to its point
// by dxpriv's own clamping code and weighed from this table. So what is charged is by construction
// what is computed, whatever settings, casts or functions the expressions involve, and the per-row
// cost does not depend on the analyst's expression.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace dxpriv {

// Encoded layout (little-endian, self-describing, no pointers or OIDs):
//   [0]      magic 'P'
//   [1]      version 1
//   [2]      code width w in bytes: 1, 2 or 4 (dictionary), or 8 (direct)
//   [3]      reserved (0)
//   [4..8)   number of points n (uint32)
//   [8..12)  number of distinct values K (uint32; 0 when direct)
// dictionary (w = 1, 2, 4):
//   K values as IEEE-754 doubles (8 bytes each), sorted ascending, no NaN
//   n codes of w bytes: 0 = no contribution (the row is filtered out or its value is NULL),
//   c in 1..K = values[c - 1]
// direct (w = 8; chosen when the dictionary would not be smaller, e.g. sum over a wide range,
// where every point has its own value): a presence bitmap of ceil(n / 8) bytes (bit u % 8 of
// byte u / 8 set: point u contributes), then n doubles (0 where absent), no NaN.
// column-affine (w = 16; chosen first when exact, e.g. sum(income) [GROUP BY sex]: the value is a linear
// function of one column's index): the presence bitmap, then doubles a, b and uint32 d, m with
// value(u) = a + b * ((u / d) % m), checked bit for bit against every present value at encoding.
// pieces (w = 24; written by encode_point_table_pieces from a closed form, line_form.h): K pieces,
// each a uint32 start (the first piece at 0, strictly increasing, below n), a uint32 presence flag
// (0 or 1) and doubles a, b: a point u of the piece starting at s (the last start <= u) weighs
// a + b * u when present, nothing otherwise. Its size does not depend on n.
// dims (optional): the sub-universe's domain sizes in point order (last fastest), for the
// column-affine layout; n must be their product when given.
std::string encode_point_table(const std::vector<std::optional<double>> &values,
                               const std::vector<std::size_t> &dims = {});

// One piece of the pieces layout (above).
struct PointTablePiece {
	std::size_t start = 0;
	bool present = false;
	double a = 0, b = 0;
};

// The pieces layout over n points (pieces as described above, finite a and b; CoreError(Internal)
// otherwise). The caller guarantees that a + b * u is the value meant at every point u.
std::string encode_point_table_pieces(std::size_t n, const std::vector<PointTablePiece> &pieces);

// Drops from a table over a sub-universe of domain sizes `dims` (row-major, last fastest) every
// dimension along which it is constant (equal values, or nothing, at every pair of points that
// differ only in that coordinate): the table over the remaining dimensions gives every point the
// same value as before, so a lookup that maps each row to a point of every dimension (a total
// mapping, as dxpriv's indexers are) may ignore the dropped columns. Returns the indexes of the
// kept dimensions (ascending); `values` and `dims` are replaced by the reduced table and sizes.
// values.size() must be the product of dims (CoreError(InvalidParameter) otherwise).
std::vector<std::size_t> drop_constant_dimensions(std::vector<std::optional<double>> &values,
                                                  std::vector<std::size_t> &dims);

// A decoded view over an encoded table (the bytes must outlive it). Construction validates the
// layout (throws CoreError DataException when malformed); lookups are O(1) and allocation-free.
class PointTableView {
public:
	PointTableView(const unsigned char *data, std::size_t len);
	std::size_t size() const { return n_; }
	std::size_t distinct() const { return k_; }
	// True when lookup() succeeds at every point (no point is filtered out). O(size()).
	bool every_point_contributes() const
	{
		double v;
		for (std::size_t u = 0; u < n_; ++u)
			if (!lookup(u, v))
				return false;
		return true;
	}
	// Whether every point that contributes holds one value (its `value`; false when none
	// contributes or two values differ; a sloped piece of three or more points counts as varying);
	// `every` tells whether every point contributes. O(pieces) for a pieces table, O(size()) otherwise.
	bool uniform(double &value, bool &every) const;
	// The value of point u, or false when the point contributes nothing. u must be < size().
	bool lookup(std::size_t u, double &out) const
	{
		if (width_ >= kDirect) {
			if (width_ == kPieces)
				return lookup_piece(u, out);
			if (!((presence_[u >> 3] >> (u & 7)) & 1))
				return false;
			if (width_ == kAffine) // one-column tables (d = 1, u < m) need no integer division
				out = affine_a_ + affine_b_ * static_cast<double>(affine_d_ == 1 && u < affine_m_ ? u : (u / affine_d_) % affine_m_);
			else
				std::memcpy(&out, codes_ + 8 * u, 8);
			return true;
		}
		const std::uint32_t c = code(u);
		if (c == 0)
			return false;
		out = values_[c - 1];
		return true;
	}

	static constexpr unsigned kDirect = 8;
	static constexpr unsigned kAffine = 16;
	static constexpr unsigned kPieces = 24;

private:
	std::size_t n_ = 0, k_ = 0;
	const unsigned char *presence_ = nullptr; // direct and column-affine tables
	double affine_a_ = 0, affine_b_ = 0;       // column-affine tables
	std::size_t affine_d_ = 1, affine_m_ = 1;
	unsigned width_ = 1;
	std::vector<double> values_;
	const unsigned char *codes_ = nullptr;
	std::vector<PointTablePiece> pieces_; // pieces tables

	// lookup() of a pieces table: the last piece starting at or before u.
	bool lookup_piece(std::size_t u, double &out) const
	{
		std::size_t lo = 0, hi = pieces_.size() - 1; // pieces_[0].start == 0 <= u
		while (lo < hi) {
			const std::size_t mid = (lo + hi + 1) / 2;
			if (pieces_[mid].start <= u)
				lo = mid;
			else
				hi = mid - 1;
		}
		const PointTablePiece &p = pieces_[lo];
		if (!p.present)
			return false;
		out = p.a + p.b * static_cast<double>(u);
		return true;
	}

	// The code of point u (0: no contribution, else 1 + index into values_).
	std::uint32_t code(std::size_t u) const
	{
		const unsigned char *p = codes_ + width_ * u;
		switch (width_) {
		case 1:
			return p[0];
		case 2:
			return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8);
		default:
			return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
			       (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
		}
	}
};

} // namespace dxpriv
