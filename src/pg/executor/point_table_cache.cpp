// Content-addressed per-point tables on the workers (point_table_cache.h).
#include "pg/executor/point_table_cache.h"

#include "pg/metadata/extension_objects.h"
#include "pg/guard.h"
#include "pg/metadata/catalog.h"

extern "C" {
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include <cctype>
#include <cstring>
#include <map>
#include <vector>

namespace dxpriv::pg {

namespace {

// Digests this session has stored on the workers, and when. A table is stored again after
// kReshipAfter, which refreshes its stored_at on the workers: dx._store_point_table evicts entries
// not stored for a day, so an entry in use is never older than kReshipAfter.
std::map<std::string, TimestampTz> shipped;
constexpr int64 kReshipAfter = INT64CONST(3600) * USECS_PER_SEC;

// The tables this session stored on the workers, kept here too (TopMemoryContext, the last
// kLocalTables): a statement whose lookups Citus runs on the coordinator (a bounded privacy-unit
// source read through an intermediate result) reads them from this node.
std::map<std::string, bytea *> local_tables;
std::vector<std::string> local_order;
constexpr size_t kLocalTables = 16;

void
keep_locally(const std::string &key, bytea *table)
{
	if (local_tables.count(key))
		return;
	bytea *copy = nullptr;
	pg_call([&] { copy = static_cast<bytea *>(MemoryContextAlloc(TopMemoryContext, VARSIZE_ANY(table))); });
	memcpy(copy, table, VARSIZE_ANY(table));
	local_tables[key] = copy;
	local_order.push_back(key);
	if (local_order.size() > kLocalTables) {
		pfree(local_tables[local_order.front()]);
		local_tables.erase(local_order.front());
		local_order.erase(local_order.begin());
	}
}

// The session's key of a table stored in this database's workers.
std::string
key_of(bytea *digest)
{
	return std::to_string(MyDatabaseId) + ":" + std::string(VARDATA_ANY(digest), VARSIZE_ANY_EXHDR(digest));
}

// True for Citus's messages about a node it could not connect to (as opposed to a worker that
// answered with an error, e.g. because dxpriv is missing there).
bool
unreachable_message(const std::string &m)
{
	std::string lower;
	for (char ch : m)
		lower += static_cast<char>(tolower(static_cast<unsigned char>(ch)));
	return lower.find("connect") != std::string::npos || lower.find("connection") != std::string::npos ||
	       lower.find("timeout") != std::string::npos || lower.find("timed out") != std::string::npos;
}

} // namespace

// See point_table_cache.h.
bytea *
sha256_of(const char *data, size_t len)
{
	bytea *out = static_cast<bytea *>(palloc(VARHDRSZ + PG_SHA256_DIGEST_LENGTH));
	SET_VARSIZE(out, VARHDRSZ + PG_SHA256_DIGEST_LENGTH);
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	if (!ctx || pg_cryptohash_init(ctx) < 0 || pg_cryptohash_update(ctx, reinterpret_cast<const uint8 *>(data), len) < 0 ||
	    pg_cryptohash_final(ctx, reinterpret_cast<uint8 *>(VARDATA(out)), PG_SHA256_DIGEST_LENGTH) < 0) {
		if (ctx)
			pg_cryptohash_free(ctx);
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv could not compute a SHA-256 digest");
	}
	pg_cryptohash_free(ctx);
	return out;
}

// See point_table_cache.h.
bytea *
cached_point_table(bytea *digest)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv is not installed on this node");
	bytea *table = nullptr;
	auto here = local_tables.find(key_of(digest));
	if (here != local_tables.end()) {
		pg_call([&] {
			table = static_cast<bytea *>(MemoryContextAlloc(TopTransactionContext, VARSIZE_ANY(here->second)));
			memcpy(table, here->second, VARSIZE_ANY(here->second));
		});
	} else {
		InternalSpi spi(ext->schema_owner);
		if (spi.exec("SELECT bytes FROM dx._point_table_cache WHERE digest = $1", {{BYTEAOID, PointerGetDatum(digest)}},
		             true) == 1) {
			pg_call([&] {
				bytea *b = DatumGetByteaPP(spi.value(0, 0));
				table = static_cast<bytea *>(MemoryContextAlloc(TopTransactionContext, VARSIZE_ANY(b)));
				memcpy(table, b, VARSIZE_ANY(b));
			});
		}
	}
	if (!table)
		fail(ERRCODE_INTERNAL_ERROR, "a per-point table of this distributed dx query is missing on this node",
		     "The coordinator stores it before the query runs; run the query again from the coordinator.");
	bytea *check = sha256_of(VARDATA_ANY(table), VARSIZE_ANY_EXHDR(table));
	if (VARSIZE_ANY_EXHDR(digest) != PG_SHA256_DIGEST_LENGTH || memcmp(VARDATA_ANY(check), VARDATA_ANY(digest), PG_SHA256_DIGEST_LENGTH) != 0)
		fail(ERRCODE_DATA_CORRUPTED, "a cached per-point table does not match its digest",
		     "Delete the row from dx._point_table_cache on this node; the coordinator stores it again.");
	return table;
}

// See point_table_cache.h.
void
ship_point_table(bytea *digest, bytea *table)
{
	const std::string key = key_of(digest);
	keep_locally(key, table);
	const TimestampTz now = GetCurrentTimestamp();
	auto it = shipped.find(key);
	if (it != shipped.end() && now - it->second < kReshipAfter)
		return;
	std::string digest_hex, table_hex;
	pg_call([&] {
		digest_hex = DatumGetCString(DirectFunctionCall1(byteaout, PointerGetDatum(digest)));
		table_hex = DatumGetCString(DirectFunctionCall1(byteaout, PointerGetDatum(table)));
	});
	const std::string command =
	    "SELECT dx._store_point_table('" + digest_hex + "'::pg_catalog.bytea, '" + table_hex + "'::pg_catalog.bytea)";
	// dxpriv's own statement, sealed (the hooks stay out of the way), as the current user
	std::vector<WorkerResult> results = run_on_workers(command);
	int failed = 0, unreachable = 0;
	std::string message;
	for (const WorkerResult &r : results)
		if (!r.success || r.result != "t") {
			failed++;
			message = r.result.empty() ? "no result" : r.result;
			if (!r.success && unreachable_message(message))
				unreachable++;
		}
	if (unreachable)
		fail(ERRCODE_CONNECTION_FAILURE,
		     std::to_string(unreachable) + " of " + std::to_string(results.size()) +
		         " Citus workers could not be reached, so this distributed dx query did not run",
		     "Nothing was released (the budget the query was charged stays spent). Check that every node of pg_catalog.pg_dist_node is "
		     "running and accepts connections from the coordinator, then run the query again.",
		     "The worker said: " + message);
	if (failed)
		fail(ERRCODE_CONNECTION_FAILURE, "a worker did not store a per-point table of this distributed dx query",
		     "Check that dxpriv is installed on every worker; nothing was released.", "The worker said: " + message);
	shipped[key] = now;
}

} // namespace dxpriv::pg
