// Declared column domains: enumerated values, numeric ranges and date ranges with a granularity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dxpriv {

enum class DomainKind { Enumerated, Range, Date };

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

	DomainKind kind() const noexcept { return kind_; }
	std::size_t size() const noexcept { return size_; }
	// Numeric position of point i: the value for Range, the day number for Date, i for Enumerated.
	double ordinal(std::size_t i) const;
	// Canonical text of point i, accepted by the column type's input function: the label for
	// Enumerated, the shortest round-trip decimal ("%.15g") for Range, "YYYY-MM-DD" for Date.
	std::string label(std::size_t i) const;
	const std::vector<std::string> &labels() const noexcept { return labels_; }
	double lo() const noexcept { return lo_; }
	double step() const noexcept { return step_; }

	// Index of the point a numeric value maps to (Range/Date): round to the nearest grid point
	// (ties away from lo), clamp into [0, size-1]. NaN maps to default_index(). -inf/+inf clamp.
	std::size_t index_of(double value) const noexcept;
	// Index of a label (Enumerated) or -1 when absent.
	long find_label(const std::string &label) const;
	// Where NULL and values absent from an Enumerated domain are mapped: point 0.
	std::size_t default_index() const noexcept { return 0; }

private:
	Domain() = default;
	DomainKind kind_ = DomainKind::Enumerated;
	std::size_t size_ = 0;
	double lo_ = 0, step_ = 1;
	std::vector<std::string> labels_;
	std::vector<std::uint32_t> by_label_; // Enumerated: label indexes sorted by label, for find_label
};

} // namespace dxpriv
