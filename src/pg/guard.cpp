// Outer-guard support: capturing exceptions into palloc'd memory and raising them as PG errors.
#include "pg/guard.h"

extern "C" {
#include "utils/memutils.h"
}

namespace dxpriv::pg {

// Throws a UserError.
void
fail(int sqlstate, const std::string &message, const std::string &hint, const std::string &detail)
{
	throw UserError(sqlstate, message, hint, detail);
}

// SQLSTATE for each core error kind.
static int
sqlstate_for(ErrorKind kind)
{
	switch (kind) {
	case ErrorKind::InvalidParameter:
		return ERRCODE_INVALID_PARAMETER_VALUE;
	case ErrorKind::DataException:
		return ERRCODE_DATA_EXCEPTION;
	case ErrorKind::ProgramLimit:
		return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
	case ErrorKind::Internal:
		return ERRCODE_INTERNAL_ERROR;
	}
	return ERRCODE_INTERNAL_ERROR;
}

// Copies a std::string into the error context's memory (survives until the error is raised).
static char *
copy_text(const std::string &s)
{
	return s.empty() ? nullptr : MemoryContextStrdup(ErrorContext, s.c_str());
}

// Records the in-flight exception; never throws.
void
capture_current_exception(CapturedError &out) noexcept
{
	try {
		throw;
	} catch (const PgError &e) {
		out.pg = e.edata;
	} catch (const UserError &e) {
		out.sqlstate = e.sqlstate;
		out.message = copy_text(e.message);
		out.hint = copy_text(e.hint);
		out.detail = copy_text(e.detail);
	} catch (const CoreError &e) {
		out.sqlstate = sqlstate_for(e.kind());
		out.message = copy_text(e.what());
		out.hint = copy_text(e.hint());
	} catch (const std::bad_alloc &) {
		out.sqlstate = ERRCODE_OUT_OF_MEMORY;
		out.message = MemoryContextStrdup(ErrorContext, "out of memory in dxpriv");
	} catch (const std::exception &e) {
		out.sqlstate = ERRCODE_INTERNAL_ERROR;
		out.message = copy_text(std::string("dxpriv internal error: ") + e.what());
	} catch (...) {
		out.sqlstate = ERRCODE_INTERNAL_ERROR;
		out.message = MemoryContextStrdup(ErrorContext, "dxpriv internal error");
	}
}

// Raises the captured error; called after all C++ objects of the guarded body are destroyed.
void
raise_captured(const CapturedError &err)
{
	if (err.pg)
		ReThrowError(err.pg);
	ereport(ERROR, (errcode(err.sqlstate), errmsg_internal("%s", err.message ? err.message : "dxpriv error"),
	                err.detail ? errdetail_internal("%s", err.detail) : 0,
	                err.hint ? errhint("%s", err.hint) : 0));
	pg_unreachable();
}

} // namespace dxpriv::pg
