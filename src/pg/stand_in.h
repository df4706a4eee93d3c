// The bytes of a planner stand-in (planner/large_const_stand_ins.h), recognised by every reader of an
// internal aggregate's arguments so that a stand-in that ever reached execution fails closed.
#pragma once

extern "C" {
#include "postgres.h"
}

namespace dxpriv::pg {

// A stand-in's value: a varlena of kStandInSize bytes whose first 16 data bytes are kStandInMagic,
// then three words (the planner's per-backend nonce, the nonce ^ the class, the table's length).
// The magic is a one-dimensional array header (ndim 1, dataoffset 0, element type InvalidOid) of
// dimension -1: every array reader of PostgreSQL (ArrayGetNItems: deconstruct_array, array_out,
// the iterators) raises "array size exceeds the maximum allowed" on it instead of reading an empty
// array, and no valid array has these bytes. Fixed (not the nonce): a parallel worker or another
// node recognises a stand-in it was never told about.
constexpr Size kStandInMagicBytes = 16;
constexpr Size kStandInWords = 3;
constexpr Size kStandInSize = VARHDRSZ + kStandInMagicBytes + kStandInWords * sizeof(uint64);
extern const unsigned char kStandInMagic[kStandInMagicBytes];

// Whether the varlena at p (uncompressed, inline, 4-byte header or a short header) holds a
// stand-in's bytes. Never errors; false for nullptr and for compressed or external values (a
// stand-in is never either: it is a palloc'd Const value, never stored).
bool is_stand_in(const void *p);

// The error of a stand-in met where a table was expected: XX000, "a dxpriv planner stand-in reached
// <what>", with a hint.
// Contract: throws that error as UserError (guard.h: call inside guarded) when is_stand_in(p);
// returns otherwise.
void reject_stand_in(const void *p, const char *what);
// The same, as a PostgreSQL ereport(ERROR): for PostgreSQL frames where no C++ object is alive.
void ereport_stand_in(const char *what);

} // namespace dxpriv::pg
