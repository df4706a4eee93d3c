// Data-independent mapping of one column's stored values to the index of their point in the
// column's declared domain: the only code that runs on stored rows in a dx query (besides the
// lookup of the row's weight). Used by the row lookups dx._weigh / dx._weigh_int (lookup.cpp).
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

#include "core/domain.h"

namespace dxpriv::pg {

// Contract: built once per call site in a long-lived memory context (fn_mcxt) by create(), which
// registers a reset callback that destroys it with the context; index() and nearest() neither
// allocate nor call user code, and their cost does not depend on anything but the value's size.
class DomainIndexer {
public:
	// An indexer for a column of `type`/`typmod` over `domain`. Points of enumerated domains are the
	// column type's values of the labels (read under fixed settings, domain_datums); stored values
	// match a label when their bytes are equal.
	static DomainIndexer *create(MemoryContext mcxt, Domain domain, Oid type, int32 typmod);

	const Domain &domain() const { return domain_; }
	// Enumerated: the index of the declared value, or default_index() for NULL and undeclared
	// values. Range and date: the nearest grid point (NULL and NaN: default_index()).
	size_t index(Datum value, bool isnull) const;
	// Points: the declared point nearest to x (domain().dims() coordinates; NaN: default_index()).
	size_t nearest(const double *x) const { return domain_.nearest(x); }
	Oid type() const { return type_; }
	// Enumerated domains of at most max labels (and at most 16), of a by-value type or of a varlena
	// type whose labels are all at most 8 bytes: each label's bytes as index() compares them packed
	// into a word (a by-value type: its Datum, length 8; a varlena: its bytes little-endian,
	// zero-padded, and their length), and its point, in the order index() tries them, so that a
	// caller may match a value inline with the same result as index() (row_point.h); byval says
	// which. False otherwise (n and the arrays untouched).
	bool short_keys(size_t max, uint64 *words, uint8 *lens, uint32 *points, size_t &n, bool &byval) const;

	DomainIndexer(Domain domain, Oid type) : domain_(std::move(domain)), type_(type) {}

private:
	struct Key {
		const char *data;
		size_t len;
		size_t index;
	};
	static bool key_less(const Key &a, const Key &b);
	void fill_points(int32 typmod);

	Domain domain_;
	Oid type_;
	bool byval_ = true;
	int16 typlen_ = 0;
	Datum *points_ = nullptr; // domain_datums in mcxt (enumerated domains: a range is indexed by arithmetic)
	Key *keys_ = nullptr;     // enumerated: the points' bytes, sorted for binary search
	size_t nkeys_ = 0;
};

} // namespace dxpriv::pg
