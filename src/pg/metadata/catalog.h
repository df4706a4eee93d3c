// Running dxpriv's own catalog SQL as the extension owner, outside the hooks' view.
#pragma once

#include "pg/dxpriv.h"

extern "C" {
#include "executor/spi.h"
}

#include <initializer_list>
#include <string>

namespace dxpriv::pg {

// One typed SQL argument.
struct SqlArg {
	Oid type;
	Datum value;
	bool is_null = false;
};

// RAII scope: while alive, dxpriv's hooks ignore the statements being analysed (dxpriv's own
// generated SQL).
class InternalScope {
public:
	InternalScope();
	~InternalScope();
	InternalScope(const InternalScope &) = delete;
	InternalScope &operator=(const InternalScope &) = delete;
};

// RAII scope: connects SPI as the owner of schema dx with the hooks disabled. On the normal path
// the destructor disconnects; on an exception the transaction abort cleans SPI up.
// Contract: every call into PostgreSQL from inside the scope goes through exec() or pg_call().
class InternalSpi {
public:
	explicit InternalSpi(Oid owner);
	~InternalSpi();
	InternalSpi(const InternalSpi &) = delete;
	InternalSpi &operator=(const InternalSpi &) = delete;

	// Executes sql; returns the number of rows processed. Throws PgError on failure.
	uint64 exec(const char *sql, std::initializer_list<SqlArg> args, bool read_only);
	// Executes a read-only statement built at run time (not prepared or cached).
	uint64 exec_dynamic(const char *sql);
	// Accessors of the last result (row and column from 0); valid until the next exec().
	bool is_null(uint64 row, int col) const;
	Datum value(uint64 row, int col) const;
	std::string text(uint64 row, int col) const;

private:
	Oid saved_user_ = InvalidOid;
	int saved_context_ = 0;
	bool connected_ = false;
	bool pushed_snapshot_ = false;
};

} // namespace dxpriv::pg
