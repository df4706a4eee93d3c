// Privacy units at execution: the keyed SipHash-2-4 that ranks a unit's rows (dx._unit_hash) and
// the generator of new keys (dx._unit_key). The ranking rule itself is SQL placed by the analyzer
// (planner/unit_source.h); the hash is core/siphash.h.
#include "pg/dxpriv.h"
#include "pg/guard.h"

#include "core/random.h"
#include "core/siphash.h"

extern "C" {
#include "access/tupmacs.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <cstring>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// Per-call-site cache: the hash state after absorbing the key, and each argument's type layout.
struct UnitHashCache {
	unsigned char key[16];
	bool have_key;
	int nargs;
	Oid types[FUNC_MAX_ARGS];
	int16 typlen[FUNC_MAX_ARGS];
	bool byval[FUNC_MAX_ARGS];
};

// The cache of this call site (argument types are fixed by the call's expression).
UnitHashCache &
hash_cache(FunctionCallInfo fcinfo)
{
	auto *c = static_cast<UnitHashCache *>(fcinfo->flinfo->fn_extra);
	if (c)
		return *c;
	c = static_cast<UnitHashCache *>(MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(UnitHashCache)));
	c->nargs = PG_NARGS();
	for (int i = 1; i < c->nargs; i++) {
		c->types[i] = get_fn_expr_argtype(fcinfo->flinfo, i);
		if (!OidIsValid(c->types[i]))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "dx._unit_hash needs arguments of known types",
			     "The function is placed by dxpriv's analyzer; cast literal arguments, e.g. 'a'::text.");
		get_typlenbyval(c->types[i], &c->typlen[i], &c->byval[i]);
	}
	fcinfo->flinfo->fn_extra = c;
	return *c;
}

} // namespace

// dx._unit_hash(key bytea, VARIADIC "any") -> bigint: SipHash-2-4 under the 16-byte key of each
// argument's type, NULL flag and binary value (by-value types: their typlen bytes; variable-length
// ones: their detoasted bytes and length). Equal values of one type hash equally in every backend
// and parallel worker (IMMUTABLE, PARALLEL SAFE); values that display the same but are stored
// differently (numeric 1.0 and 1.00) may hash differently, which only changes which of two
// equal-looking rows is kept.
DX_FUNCTION(dx_unit_hash)
{
	UnitHashCache &c = hash_cache(fcinfo);
	if (PG_ARGISNULL(0))
		fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "the key of dx._unit_hash must not be null",
		     "The function is placed by dxpriv's analyzer with the table's key.");
	if (!c.have_key) {
		bytea *k = PG_GETARG_BYTEA_PP(0);
		if (VARSIZE_ANY_EXHDR(k) != 16)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "the key of dx._unit_hash must be 16 bytes",
			     "The function is placed by dxpriv's analyzer with the table's key.");
		std::memcpy(c.key, VARDATA_ANY(k), 16);
		c.have_key = true;
	}
	SipHash24 h(c.key);
	for (int i = 1; i < c.nargs; i++) {
		const bool null = PG_ARGISNULL(i);
		unsigned char head[5];
		std::memcpy(head, &c.types[i], 4);
		head[4] = null ? 1 : 0;
		h.update(head, sizeof head);
		if (null)
			continue;
		const Datum d = PG_GETARG_DATUM(i);
		if (c.byval[i]) {
			unsigned char buf[sizeof(Datum)];
			store_att_byval(buf, d, c.typlen[i]);
			h.update(buf, static_cast<size_t>(c.typlen[i]));
		} else if (c.typlen[i] == -1) {
			struct varlena *v = PG_DETOAST_DATUM_PACKED(d);
			const uint32 len = VARSIZE_ANY_EXHDR(v);
			h.update(&len, sizeof len);
			h.update(VARDATA_ANY(v), len);
		} else if (c.typlen[i] == -2) {
			const char *s = DatumGetCString(d);
			const uint32 len = static_cast<uint32>(std::strlen(s));
			h.update(&len, sizeof len);
			h.update(s, len);
		} else {
			h.update(DatumGetPointer(d), static_cast<size_t>(c.typlen[i]));
		}
	}
	PG_RETURN_INT64(static_cast<int64>(h.finish()));
}

// dx._unit_key() -> bytea: 16 bytes from the kernel CSPRNG (getrandom), a new row-ranking key.
DX_FUNCTION(dx_unit_key)
{
	SystemRandom rng;
	unsigned char key[16];
	for (int i = 0; i < 2; i++) {
		const std::uint64_t w = rng.next_u64();
		std::memcpy(key + 8 * i, &w, 8);
	}
	bytea *out = static_cast<bytea *>(palloc(VARHDRSZ + 16));
	SET_VARSIZE(out, VARHDRSZ + 16);
	std::memcpy(VARDATA(out), key, 16);
	PG_RETURN_BYTEA_P(out);
}
