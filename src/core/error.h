// Typed errors raised by the core; the PostgreSQL glue maps each kind to a SQLSTATE.
#pragma once

#include <stdexcept>
#include <string>

namespace dxpriv {

// What went wrong, in terms the glue can translate into an errcode.
enum class ErrorKind {
	InvalidParameter, // a DBA or analyst argument is invalid (22023)
	DataException,    // a value cannot be represented or computed (22000)
	ProgramLimit,     // a documented size or work cap was exceeded (54000)
	Internal          // a broken invariant: a bug, never an answer (XX000)
};

// Contract: message is lowercase without trailing period; hint is a full sentence (may be empty).
class CoreError : public std::runtime_error {
public:
	CoreError(ErrorKind kind, const std::string &message, const std::string &hint = "")
	    : std::runtime_error(message), kind_(kind), hint_(hint) {}
	ErrorKind kind() const noexcept { return kind_; }
	const std::string &hint() const noexcept { return hint_; }

private:
	ErrorKind kind_;
	std::string hint_;
};

} // namespace dxpriv
