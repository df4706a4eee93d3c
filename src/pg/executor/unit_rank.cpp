// Privacy units at execution: the rank of a row within its unit (dx._unit_rank, SipHash-2-4 of the
// row's physical identity under a key drawn per execution) and the generator of table keys
// (dx._unit_key). The ranking rule itself is SQL placed by the analyzer (planner/unit_source.h).
#include "pg/executor/rank_key.h"
#include "pg/settings.h"
#include "pg/guard.h"

#include "core/random.h"
#include "core/siphash.h"

extern "C" {
#include "fmgr.h"
#include "storage/itemptr.h"
#include "utils/builtins.h"
}

#include <cstring>
#include <new>
#include <type_traits>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// The 16-byte rank key of one call site in one execution (fn_extra: allocated in fn_mcxt, which is
// the executor's per-query memory, so a new execution, prepared or not, draws a new key), with the
// specialised hash of that key (core SipRowRank: the same ranks as siphash24 of the 10-byte
// message) unless the superuser-only dxpriv.unit_rank_reference asked for the generic one.
struct RankKey {
	unsigned char key[16];
	bool reference;
	SipRowRank fast;
};

static_assert(std::is_trivially_destructible_v<RankKey>, "RankKey lives in PostgreSQL memory");

} // namespace

// See rank_key.h.
void
dxpriv::pg::draw_rank_key(unsigned char key[16], int attempt)
{
	SystemRandom secure;
	SeededRandom seeded(static_cast<std::uint64_t>(guc_test_seed) ^ 0x756e69745f72616bULL); // "unit_rak"
	RandomSource &source = guc_test_seed < 0 ? static_cast<RandomSource &>(secure) : seeded;
	for (int a = 0; a <= attempt; a++)
		for (int i = 0; i < 2; i++) {
			const std::uint64_t w = source.next_u64();
			std::memcpy(key + 8 * i, &w, 8);
		}
}

// dx._unit_rank(tableoid oid, ctid tid) -> bigint: SipHash-2-4 of the row's table and position
// under the key of this call site for this execution. Distinct rows of one scan have distinct
// (tableoid, ctid), so under a fresh random key their ranks are independent uniform 64-bit draws,
// whatever the rows' values and wherever UPDATE, VACUUM FULL or CLUSTER put them. VOLATILE: the
// planner evaluates it once per row in the level that reads the table (never duplicated into the
// window passes above, which read its output column); PARALLEL SAFE: a parallel worker draws its own
// key (still independent uniform ranks; the seeded key is the same everywhere).
DX_FUNCTION(dx_unit_rank)
{
	auto *k = static_cast<RankKey *>(fcinfo->flinfo->fn_extra);
	if (!k) {
		k = static_cast<RankKey *>(MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(RankKey)));
		draw_rank_key(k->key);
		k->reference = guc_unit_rank_reference;
		new (&k->fast) SipRowRank(k->key); // (trivially destructible: freed with fn_mcxt)
		fcinfo->flinfo->fn_extra = k;
	}
	const Oid table = PG_GETARG_OID(0);
	const ItemPointer tid = reinterpret_cast<ItemPointer>(DatumGetPointer(PG_GETARG_DATUM(1))); // tid: by reference
	const std::uint32_t block = ItemPointerGetBlockNumberNoCheck(tid);
	const std::uint16_t offset = ItemPointerGetOffsetNumberNoCheck(tid);
	if (!k->reference)
		PG_RETURN_INT64(static_cast<int64>(k->fast.rank(table, block, offset)));
	unsigned char msg[10];
	std::memcpy(msg, &table, 4);
	std::memcpy(msg + 4, &block, 4);
	std::memcpy(msg + 8, &offset, 2);
	PG_RETURN_INT64(static_cast<int64>(siphash24(k->key, msg, sizeof msg)));
}

// dx._unit_key() -> bytea: 16 bytes from the kernel CSPRNG (getrandom), a new table key.
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
