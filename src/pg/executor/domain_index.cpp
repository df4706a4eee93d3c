// Mapping of stored values to declared domain points (domain_index.h).
#include "pg/executor/domain_index.h"

#include "pg/guard.h"
#include "pg/metadata/policy_domain.h"

extern "C" {
#include "utils/lsyscache.h"
#include "utils/memutils.h"
}

#include <algorithm>
#include <cstring>
#include <new>

namespace dxpriv::pg {

namespace {

void
destroy_indexer(void *arg)
{
	static_cast<DomainIndexer *>(arg)->~DomainIndexer();
}

// The bytes that identify a value: its Datum for by-value types, its payload for varlena.
void
value_bytes(bool byval, Datum v, const char *&data, size_t &len, Datum &scratch)
{
	if (byval) {
		scratch = v;
		data = reinterpret_cast<const char *>(&scratch);
		len = sizeof(Datum);
	} else {
		// PG_DETOAST_DATUM_PACKED without its call for a value stored inline and uncompressed
		struct varlena *p = reinterpret_cast<struct varlena *>(DatumGetPointer(v));
		if (unlikely(VARATT_IS_COMPRESSED(p) || VARATT_IS_EXTERNAL(p)))
			p = pg_detoast_datum_packed(p);
		data = VARDATA_ANY(p);
		len = VARSIZE_ANY_EXHDR(p);
	}
}

} // namespace

// The keys' order for sorting and binary search: by length, then by bytes.
bool
DomainIndexer::key_less(const Key &a, const Key &b)
{
	return a.len != b.len ? a.len < b.len : std::memcmp(a.data, b.data, a.len) < 0;
}

// See domain_index.h.
DomainIndexer *
DomainIndexer::create(MemoryContext mcxt, Domain domain, Oid type, int32 typmod)
{
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	void *mem = palloc(sizeof(DomainIndexer));
	auto *ix = new (mem) DomainIndexer(std::move(domain), type);
	auto *cb = static_cast<MemoryContextCallback *>(palloc(sizeof(MemoryContextCallback)));
	cb->func = destroy_indexer;
	cb->arg = ix;
	MemoryContextRegisterResetCallback(mcxt, cb);
	try {
		ix->fill_points(typmod);
	} catch (...) {
		MemoryContextSwitchTo(old);
		throw;
	}
	MemoryContextSwitchTo(old);
	return ix;
}

// Builds the points' values and the enumerated keys in the current (long-lived) context.
void
DomainIndexer::fill_points(int32 typmod)
{
	if (domain_.kind() == DomainKind::Enumerated) { // (ranges and dates are indexed by arithmetic)
		int16 typlen;
		get_typlenbyval(type_, &typlen, &byval_);
		typlen_ = typlen;
		std::vector<Datum> pts = domain_datums(domain_, type_, typmod);
		points_ = static_cast<Datum *>(palloc(sizeof(Datum) * pts.size()));
		std::copy(pts.begin(), pts.end(), points_);
		nkeys_ = pts.size();
		keys_ = static_cast<Key *>(palloc(sizeof(Key) * pts.size()));
		for (size_t i = 0; i < pts.size(); ++i) {
			Datum scratch;
			const char *data;
			size_t len;
			value_bytes(byval_, pts[i], data, len, scratch);
			char *copy = static_cast<char *>(palloc(len > 0 ? len : 1));
			std::memcpy(copy, data, len);
			keys_[i] = {copy, len, i};
		}
		std::sort(keys_, keys_ + nkeys_, key_less);
	}
}

// See domain_index.h.
bool
DomainIndexer::short_keys(size_t max, uint64 *words, uint8 *lens, uint32 *points, size_t &n, bool &byval) const
{
	if (domain_.kind() != DomainKind::Enumerated || (!byval_ && typlen_ != -1) || nkeys_ == 0 || nkeys_ > max ||
	    nkeys_ > 16) // (index() scans at most 16 keys in this order)
		return false;
	for (size_t i = 0; i < nkeys_; ++i)
		if (keys_[i].len > 8 || keys_[i].index > PG_UINT32_MAX)
			return false;
	for (size_t i = 0; i < nkeys_; ++i) {
		const Key &k = keys_[i];
		uint64 w = 0;
		if (byval_) { // (value_bytes: the Datum's bytes)
			std::memcpy(&w, k.data, sizeof w);
		} else {
			for (size_t b = 0; b < k.len; ++b)
				w |= static_cast<uint64>(static_cast<unsigned char>(k.data[b])) << (8 * b);
		}
		words[i] = w;
		lens[i] = static_cast<uint8>(k.len);
		points[i] = static_cast<uint32>(k.index);
	}
	n = nkeys_;
	byval = byval_;
	return true;
}

// See domain_index.h.
size_t
DomainIndexer::index(Datum value, bool isnull) const
{
	if (isnull)
		return domain_.default_index();
	if (domain_.kind() != DomainKind::Enumerated)
		return domain_.index_of(datum_to_ordinal(value, type_));
	Key probe{nullptr, 0, 0};
	Datum scratch;
	value_bytes(byval_, value, probe.data, probe.len, scratch);
	if (nkeys_ <= 16) {
		// few labels: a scan of the sorted keys finds the same (first) equal key as the binary
		// search below, and rejects most keys on their length or first byte without a memcmp call
		for (size_t i = 0; i < nkeys_; ++i) {
			const Key &k = keys_[i];
			if (k.len == probe.len &&
			    (k.len == 0 || (k.data[0] == probe.data[0] && std::memcmp(k.data, probe.data, k.len) == 0)))
				return k.index;
		}
		return domain_.default_index();
	}
	const Key *end = keys_ + nkeys_;
	const Key *hit = std::lower_bound(static_cast<const Key *>(keys_), end, probe, key_less);
	if (hit != end && hit->len == probe.len && std::memcmp(hit->data, probe.data, probe.len) == 0)
		return hit->index;
	return domain_.default_index();
}

} // namespace dxpriv::pg
