// The C++/PostgreSQL boundary: outer guard for fmgr entry points and hooks, inner guard for PG calls.
//
// Why: a C++ exception must never unwind through PostgreSQL frames, and ereport(ERROR) must never
// longjmp over live C++ objects. Entry points run their C++ body inside guarded(); failures become
// exceptions; the PostgreSQL error is raised only after every C++ object is gone, with its SQLSTATE.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/elog.h"
}

#include <exception>
#include <new>
#include <string>
#include <utility>

#include "core/error.h"

namespace dxpriv::pg {

// An error to report to the client: SQLSTATE, lowercase message, optional detail and hint.
struct UserError : public std::exception {
	UserError(int code, std::string msg, std::string hint_text = "", std::string detail_text = "")
	    : sqlstate(code), message(std::move(msg)), hint(std::move(hint_text)), detail(std::move(detail_text)) {}
	const char *what() const noexcept override { return message.c_str(); }
	int sqlstate;
	std::string message, hint, detail;
};

// A PostgreSQL error caught by pg_call(), carried so that its SQLSTATE and text survive.
struct PgError : public std::exception {
	explicit PgError(ErrorData *data) : edata(data) {}
	const char *what() const noexcept override { return edata && edata->message ? edata->message : "postgres error"; }
	ErrorData *edata;
};

// Throws UserError; the usual way glue code reports a problem.
[[noreturn]] void fail(int sqlstate, const std::string &message, const std::string &hint = "",
                       const std::string &detail = "");

// Error captured in the outer guard, stored in palloc'd memory only.
struct CapturedError {
	ErrorData *pg = nullptr; // re-thrown as is
	int sqlstate = 0;
	char *message = nullptr, *hint = nullptr, *detail = nullptr;
};

void capture_current_exception(CapturedError &out) noexcept;
[[noreturn]] void raise_captured(const CapturedError &err);

// Outer guard: runs body (which must not be left by longjmp) and turns exceptions into ereport.
template <class Body>
auto guarded(Body &&body) -> decltype(body()) {
	CapturedError err;
	try {
		return body();
	} catch (...) {
		capture_current_exception(err);
	}
	raise_captured(err);
}

// Inner guard: runs a PostgreSQL call that may ereport and converts the error into PgError.
// The transaction is aborted later when the outer guard re-throws it, which releases resources.
// A C++ exception thrown by `call` itself (C++ code called from inside the lambda) is caught inside
// the PG_TRY block and re-thrown only after PG_END_TRY, so it never leaves the block with
// PG_exception_stack and error_context_stack pointing into this dead frame (as pg_duckdb's
// cpp_wrapper does). The exception_ptr is assigned only on that path, never after a longjmp.
template <class Call>
void pg_call(Call &&call) {
	MemoryContext mcxt = CurrentMemoryContext;
	ErrorData *edata = nullptr;
	std::exception_ptr cpp_error;
	PG_TRY();
	{
		try {
			call();
		} catch (...) {
			cpp_error = std::current_exception();
		}
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(mcxt);
		edata = CopyErrorData();
		FlushErrorState();
	}
	PG_END_TRY();
	if (edata)
		throw PgError(edata);
	if (cpp_error)
		std::rethrow_exception(cpp_error);
}

// pg_call for a PostgreSQL call that returns a value: `ArrayType *a = pg_value([&] { return
// PG_GETARG_ARRAYTYPE_P(1); });`. The lambda must construct no C++ object (test/check_guarded_calls.sh).
template <class Call>
auto pg_value(Call &&call) -> decltype(call()) {
	decltype(call()) out{};
	pg_call([&] { out = call(); });
	return out;
}

} // namespace dxpriv::pg

// Declares an SQL-callable C function whose body `name##_impl` runs inside the outer guard.
#define DX_FUNCTION(name)                                                                          \
	static Datum name##_impl(FunctionCallInfo fcinfo);                                             \
	extern "C" {                                                                                   \
	PG_FUNCTION_INFO_V1(name);                                                                     \
	Datum name(PG_FUNCTION_ARGS) { return dxpriv::pg::guarded([&] { return name##_impl(fcinfo); }); } \
	}                                                                                              \
	static Datum name##_impl(FunctionCallInfo fcinfo)
