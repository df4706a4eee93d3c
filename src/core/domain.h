// Declared column domains: enumerated values, numeric ranges and date ranges with a granularity,
// and tables of points in R^dims (locations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dxpriv {

enum class DomainKind { Enumerated, Range, Date, Points };

class PointSet;
class ColumnMetric;

// Largest dimension of a Points domain.
constexpr std::size_t kMaxPointDims = 8;
// Largest absolute value of a point coordinate (keeps squared distances finite).
constexpr double kMaxPointCoordinate = 1e150;

// Hard cap on the number of points of one column domain (documented in README).
constexpr std::size_t kMaxDomainSize = 1000000;

// A finite, ordered set of values a protected column may take. Values are indexed 0..size()-1.
// Domains are declared by the DBA and never read from the data; every data value is mapped into
// the domain by index_of() before it reaches a query (data-independent clamping).
class Domain {
public:
	// Enumerated labels in the given order (the order defines ordinals 0,1,2,...). Labels must be
	// distinct and non-empty in number. Throws CoreError(InvalidParameter) otherwise.
	static Domain enumerated(std::vector<std::string> labels);
	// Values lo, lo+step, ..., up to hi (hi is included when (hi-lo)/step is integral within 1e-9).
	// Requires finite lo <= hi, finite step > 0, at most kMaxDomainSize points.
	static Domain range(double lo, double hi, double step);
	// Dates as day numbers (days since 2000-01-01, PostgreSQL's DateADT): lo, lo+step, ..., <= hi.
	static Domain dates(std::int32_t lo_day, std::int32_t hi_day, std::int32_t step_days);
	// k = coords.size() / dims points in R^dims, row-major (point i is coords[i*dims .. i*dims+dims-1]).
	// Requires 1 <= dims <= kMaxPointDims, 1 <= k <= kMaxDomainSize, finite coordinates of absolute
	// value at most kMaxPointCoordinate, pairwise distinct points, and, within each dimension,
	// distinct coordinate values at least 2e-14 times their magnitude apart (so that labels stay
	// distinct). Builds a k-d tree for nearest(). Throws CoreError(InvalidParameter/ProgramLimit).
	static Domain points(std::size_t dims, std::vector<double> coords);

	DomainKind kind() const noexcept { return kind_; }
	std::size_t size() const noexcept { return size_; }
	// Numeric position of point i: the value for Range, the day number for Date, i for Enumerated
	// and Points.
	double ordinal(std::size_t i) const;
	// Canonical text of point i, accepted by the column type's input function: the label for
	// Enumerated, the shortest round-trip decimal ("%.15g") for Range, "YYYY-MM-DD" for Date,
	// "(x,y,...)" with "%.15g" coordinates for Points (PostgreSQL's point syntax in 2-D).
	std::string label(std::size_t i) const;
	// Dimension of the points: dims for Points, 1 for every other kind.
	std::size_t dims() const noexcept;
	// Coordinate `dim` of point i: the point's coordinate for Points, ordinal(i) (dim 0 only) for
	// the one-dimensional kinds. Throws CoreError(Internal) for an index out of range.
	double coordinate(std::size_t i, std::size_t dim) const;
	// Index of the point nearest to x (dims() values). Points: Euclidean nearest point (ties to the
	// lowest index) after clamping each coordinate of x into the points' bounding box widened on
	// every side by its largest extent (so +-inf and huge values map to boundary points in
	// O(log k)); any NaN coordinate maps to default_index(). Other kinds: index_of(x[0]).
	std::size_t nearest(const double *x) const noexcept;
	const std::vector<std::string> &labels() const noexcept { return labels_; }
	double lo() const noexcept { return lo_; }
	double step() const noexcept { return step_; }

	// Index of the point a numeric value maps to (Range/Date): round to the nearest grid point
	// (ties away from lo), clamp into [0, size-1]. NaN maps to default_index(). -inf/+inf clamp.
	// Points: nearest(&value) when dims() == 1, default_index() otherwise (use nearest()).
	std::size_t index_of(double value) const noexcept;
	// Index of a label (Enumerated) or -1 when absent.
	long find_label(const std::string &label) const;
	// Where NULL and values absent from an Enumerated domain are mapped: point 0.
	std::size_t default_index() const noexcept { return 0; }

private:
	friend class ColumnMetric; // reads the point set of location and threshold metrics
	Domain() = default;
	DomainKind kind_ = DomainKind::Enumerated;
	std::size_t size_ = 0;
	double lo_ = 0, step_ = 1;
	std::vector<std::string> labels_;
	std::vector<std::uint32_t> by_label_; // Enumerated: label indexes sorted by label, for find_label
	std::shared_ptr<const PointSet> points_; // Points: coordinates and k-d tree (shared by copies)
};

} // namespace dxpriv
