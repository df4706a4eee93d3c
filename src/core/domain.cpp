// Declared column domains: construction, validation, value-to-point mapping and canonical labels.
#include "core/domain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/point_set.h"

namespace dxpriv {

namespace {

// Raises the ProgramLimit error shared by every domain kind when a domain has too many points.
[[noreturn]] void
too_many_points(const char *what)
{
	throw CoreError(ErrorKind::ProgramLimit, std::string(what) + " domain has more than 1000000 points",
	                "Use a coarser step or a narrower range.");
}

// Converts a day number (days since 2000-01-01) to a proleptic Gregorian civil date (H. Hinnant).
void
civil_from_days(std::int64_t day, std::int64_t &year, unsigned &month, unsigned &mday)
{
	const std::int64_t z = day + 10957 + 719468; // shift the epoch to 0000-03-01
	const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	const std::int64_t doe = z - era * 146097;                                  // [0, 146096]
	const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; // [0, 399]
	const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);          // [0, 365]
	const std::int64_t mp = (5 * doy + 2) / 153;                               // [0, 11]
	mday = static_cast<unsigned>(doy - (153 * mp + 2) / 5 + 1);
	month = static_cast<unsigned>(mp < 10 ? mp + 3 : mp - 9);
	year = yoe + era * 400 + (month <= 2 ? 1 : 0);
}

} // namespace

// Builds an enumerated domain; labels must be non-empty in number and pairwise distinct.
Domain
Domain::enumerated(std::vector<std::string> labels)
{
	if (labels.empty())
		throw CoreError(ErrorKind::InvalidParameter, "enumerated domain has no values",
		                "Declare at least one value.");
	if (labels.size() > kMaxDomainSize)
		too_many_points("enumerated");
	Domain d;
	d.kind_ = DomainKind::Enumerated;
	d.size_ = labels.size();
	d.labels_ = std::move(labels);
	d.by_label_.resize(d.size_);
	for (std::size_t i = 0; i < d.size_; i++)
		d.by_label_[i] = static_cast<std::uint32_t>(i);
	const auto &ls = d.labels_;
	std::sort(d.by_label_.begin(), d.by_label_.end(),
	          [&ls](std::uint32_t a, std::uint32_t b) { return ls[a] < ls[b]; });
	for (std::size_t k = 1; k < d.size_; k++)
		if (ls[d.by_label_[k - 1]] == ls[d.by_label_[k]])
			throw CoreError(ErrorKind::InvalidParameter, "enumerated domain has a duplicate value",
			                "List every value exactly once.");
	return d;
}

// Builds the numeric range lo, lo+step, ..., <= hi (hi included within 1e-9 of a step).
Domain
Domain::range(double lo, double hi, double step)
{
	if (!std::isfinite(lo) || !std::isfinite(hi))
		throw CoreError(ErrorKind::InvalidParameter, "range domain bounds must be finite",
		                "Give finite numbers for the lower and upper bounds.");
	if (lo > hi)
		throw CoreError(ErrorKind::InvalidParameter, "range domain lower bound exceeds its upper bound",
		                "Swap the bounds so that the lower bound comes first.");
	if (!std::isfinite(step) || !(step > 0))
		throw CoreError(ErrorKind::InvalidParameter, "range domain step must be positive and finite",
		                "Give the granularity of the column as a positive number.");
	const double intervals = (hi - lo) / step + 1e-9; // may be +inf when hi - lo overflows
	if (!(intervals < static_cast<double>(kMaxDomainSize)))
		too_many_points("range");
	Domain d;
	d.kind_ = DomainKind::Range;
	d.size_ = static_cast<std::size_t>(std::floor(intervals)) + 1;
	d.lo_ = lo;
	d.step_ = step;
	// Distinct points must keep distinct ordinals and distinct "%.15g" labels.
	if (d.size_ > 1 && step < 2e-14 * std::max(std::fabs(lo), std::fabs(hi)))
		throw CoreError(ErrorKind::InvalidParameter, "range domain step is too small for the magnitude of its bounds",
		                "Use a step of at least 2e-14 times the largest bound in absolute value.");
	return d;
}

// Builds the date range lo_day, lo_day+step_days, ..., <= hi_day (day numbers since 2000-01-01).
Domain
Domain::dates(std::int32_t lo_day, std::int32_t hi_day, std::int32_t step_days)
{
	if (lo_day > hi_day)
		throw CoreError(ErrorKind::InvalidParameter, "date domain lower bound exceeds its upper bound",
		                "Swap the bounds so that the earlier date comes first.");
	if (step_days < 1)
		throw CoreError(ErrorKind::InvalidParameter, "date domain step must be at least one day",
		                "Give the granularity of the column as a positive number of days.");
	const std::int64_t intervals = (static_cast<std::int64_t>(hi_day) - lo_day) / step_days;
	if (intervals >= static_cast<std::int64_t>(kMaxDomainSize))
		too_many_points("date");
	Domain d;
	d.kind_ = DomainKind::Date;
	d.size_ = static_cast<std::size_t>(intervals) + 1;
	d.lo_ = lo_day;
	d.step_ = step_days;
	return d;
}

// Builds a domain of k distinct points in R^dims from row-major coordinates.
Domain
Domain::points(std::size_t dims, std::vector<double> coords)
{
	if (dims < 1 || dims > kMaxPointDims)
		throw CoreError(ErrorKind::InvalidParameter, "points domain must have between 1 and 8 dimensions",
		                "Give every point the same number of coordinates, from 1 to 8.");
	if (coords.empty())
		throw CoreError(ErrorKind::InvalidParameter, "points domain has no points", "Declare at least one point.");
	if (coords.size() % dims != 0)
		throw CoreError(ErrorKind::InvalidParameter,
		                "points domain has " + std::to_string(coords.size()) +
		                    " coordinates, which is not a multiple of its dimension " + std::to_string(dims),
		                "Give every point exactly the same number of coordinates.");
	const std::size_t k = coords.size() / dims;
	if (k > kMaxDomainSize)
		too_many_points("points");
	for (double c : coords) {
		if (!std::isfinite(c))
			throw CoreError(ErrorKind::InvalidParameter, "points domain coordinates must be finite",
			                "Remove NaN and infinite coordinates from the point list.");
		if (std::fabs(c) > kMaxPointCoordinate)
			throw CoreError(ErrorKind::InvalidParameter, "points domain coordinate exceeds 1e150 in absolute value",
			                "Express the coordinates in a unit that keeps them below 1e150.");
	}
	// Within each dimension, distinct values must stay distinct as "%.15g" labels (the rule of
	// Domain::range); exact duplicates of whole points are caught below.
	std::vector<double> vals(k);
	for (std::size_t d = 0; d < dims; d++) {
		for (std::size_t i = 0; i < k; i++)
			vals[i] = coords[i * dims + d];
		std::sort(vals.begin(), vals.end());
		for (std::size_t i = 1; i < k; i++)
			if (vals[i] > vals[i - 1] &&
			    vals[i] - vals[i - 1] < 2e-14 * std::max(std::fabs(vals[i]), std::fabs(vals[i - 1])))
				throw CoreError(ErrorKind::InvalidParameter,
				                "points domain has coordinates too close to tell apart in dimension " +
				                    std::to_string(d + 1),
				                "Round the coordinates to at most 13 significant digits.");
	}
	std::vector<std::uint32_t> order(k);
	for (std::size_t i = 0; i < k; i++)
		order[i] = static_cast<std::uint32_t>(i);
	const double *c = coords.data();
	auto lex_less = [c, dims](std::uint32_t a, std::uint32_t b) {
		return std::lexicographical_compare(c + a * dims, c + a * dims + dims, c + b * dims, c + b * dims + dims);
	};
	std::sort(order.begin(), order.end(), lex_less);
	for (std::size_t i = 1; i < k; i++)
		if (std::equal(c + order[i - 1] * dims, c + order[i - 1] * dims + dims, c + order[i] * dims))
			throw CoreError(ErrorKind::InvalidParameter, "points domain has a duplicate point",
			                "List every point exactly once.");
	Domain dom;
	dom.kind_ = DomainKind::Points;
	dom.size_ = k;
	dom.points_ = std::make_shared<const PointSet>(dims, std::move(coords));
	return dom;
}

// Dimension of the points (1 for the one-dimensional kinds).
std::size_t
Domain::dims() const noexcept
{
	return points_ ? points_->dims() : 1;
}

// Coordinate `dim` of point i (ordinal(i) for the one-dimensional kinds).
double
Domain::coordinate(std::size_t i, std::size_t dim) const
{
	if (i >= size_ || dim >= dims())
		throw CoreError(ErrorKind::Internal, "domain coordinate index out of range");
	if (kind_ == DomainKind::Points)
		return points_->coord(i, dim);
	return ordinal(i);
}

// Nearest point to x: k-d tree search for Points, index_of(x[0]) for the one-dimensional kinds.
std::size_t
Domain::nearest(const double *x) const noexcept
{
	if (kind_ != DomainKind::Points)
		return index_of(x[0]);
	for (std::size_t d = 0; d < points_->dims(); d++)
		if (std::isnan(x[d]))
			return default_index();
	return points_->nearest(x);
}

// Numeric position of point i (value, day number or enumeration index).
double
Domain::ordinal(std::size_t i) const
{
	if (i >= size_)
		throw CoreError(ErrorKind::Internal, "domain point index out of range");
	if (kind_ == DomainKind::Enumerated || kind_ == DomainKind::Points)
		return static_cast<double>(i);
	return lo_ + static_cast<double>(i) * step_;
}

// Canonical text of point i, accepted by the column type's input function.
std::string
Domain::label(std::size_t i) const
{
	if (i >= size_)
		throw CoreError(ErrorKind::Internal, "domain point index out of range");
	char buf[64];
	switch (kind_) {
	case DomainKind::Enumerated:
		return labels_[i];
	case DomainKind::Range:
		std::snprintf(buf, sizeof buf, "%.15g", ordinal(i));
		return buf;
	case DomainKind::Date: {
		std::int64_t year;
		unsigned month, mday;
		civil_from_days(static_cast<std::int64_t>(ordinal(i)), year, month, mday);
		// PostgreSQL's ISO output has no year 0: astronomical year y <= 0 is year 1-y BC.
		if (year > 0)
			std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u", static_cast<long long>(year), month, mday);
		else
			std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u BC", static_cast<long long>(1 - year), month,
			              mday);
		return buf;
	}
	case DomainKind::Points: {
		std::string out = "(";
		for (std::size_t d = 0; d < points_->dims(); d++) {
			std::snprintf(buf, sizeof buf, "%.15g", points_->coord(i, d));
			if (d > 0)
				out += ',';
			out += buf;
		}
		out += ')';
		return out;
	}
	}
	throw CoreError(ErrorKind::Internal, "unknown domain kind");
}

// Maps a numeric value to the nearest grid point (ties away from lo), clamped; NaN to the default.
std::size_t
Domain::index_of(double value) const noexcept
{
	if (std::isnan(value))
		return default_index();
	if (kind_ == DomainKind::Points)
		return points_->dims() == 1 ? points_->nearest(&value) : default_index();
	const double x = (value - lo_) / step_; // lo_ finite, step_ > 0: NaN impossible here
	if (!(x > 0))
		return 0;
	const double last = static_cast<double>(size_ - 1);
	if (x >= last)
		return size_ - 1;
	return std::min(static_cast<std::size_t>(std::round(x)), size_ - 1);
}

// Index of an enumerated label, or -1 when the label is not in the domain.
long
Domain::find_label(const std::string &label) const
{
	const auto &ls = labels_;
	auto it = std::lower_bound(by_label_.begin(), by_label_.end(), label,
	                           [&ls](std::uint32_t a, const std::string &l) { return ls[a] < l; });
	if (it == by_label_.end() || ls[*it] != label)
		return -1;
	return static_cast<long>(*it);
}

} // namespace dxpriv
