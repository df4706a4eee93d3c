// Content-addressed per-point tables on the workers (point_table_cache.h).
#include "pg/executor/point_table_cache.h"

#include "pg/dxpriv.h"
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

#include <cstring>
#include <map>

namespace dxpriv::pg {

namespace {

// Digests this session has stored on the workers, and when. A table is stored again after
// kReshipAfter, which refreshes its stored_at on the workers: dx._store_point_table evicts entries
// not stored for a day, so an entry in use is never older than kReshipAfter.
std::map<std::string, TimestampTz> shipped;
constexpr int64 kReshipAfter = INT64CONST(3600) * USECS_PER_SEC;

// The session's key of a table stored in this database's workers.
std::string
key_of(bytea *digest)
{
	return std::to_string(MyDatabaseId) + ":" + std::string(VARDATA_ANY(digest), VARSIZE_ANY_EXHDR(digest));
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
	{
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
	    "SELECT dx._store_point_table('" + digest_hex + "'::bytea, '" + table_hex + "'::bytea)";
	InternalScope internal; // dxpriv's own statement: the hooks stay out of the way
	int failed = 0;
	std::string message;
	pg_call([&] {
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		Datum arg = CStringGetTextDatum(command.c_str());
		Oid type = TEXTOID;
		if (SPI_execute_with_args("SELECT success, result FROM pg_catalog.run_command_on_workers($1)", 1, &type, &arg,
		                          nullptr, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "run_command_on_workers failed");
		for (uint64 i = 0; i < SPI_processed; ++i) {
			bool isnull;
			bool ok = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
			char *result = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
			if (!ok || !result || strcmp(result, "t") != 0) {
				failed++;
				message = result ? result : "no result";
			}
		}
		SPI_finish();
	});
	if (failed)
		fail(ERRCODE_CONNECTION_FAILURE, "a worker did not store a per-point table of this distributed dx query",
		     "Check that dxpriv is installed on every worker; nothing was released.", "The worker said: " + message);
	shipped[key] = now;
}

} // namespace dxpriv::pg
