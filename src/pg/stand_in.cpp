// The bytes of a planner stand-in, and the check of its readers (stand_in.h).
#include "pg/stand_in.h"

#include "pg/guard.h"

#include <cstring>
#include <string>

namespace dxpriv::pg {

// int32 ndim 1, int32 dataoffset 0, Oid element type 0, int32 dims[0] -1, in the machine's byte order.
const unsigned char kStandInMagic[kStandInMagicBytes] = {
#ifdef WORDS_BIGENDIAN
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF,
#else
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF,
#endif
};

// See stand_in.h.
bool
is_stand_in(const void *p)
{
	if (!p)
		return false;
	if (VARATT_IS_EXTERNAL(p) || VARATT_IS_COMPRESSED(p)) // (a stand-in is inline and plain, its header
		return false;                                      // short when a tuple copied it)
	return VARSIZE_ANY_EXHDR(p) == kStandInSize - VARHDRSZ &&
	       memcmp(VARDATA_ANY(p), kStandInMagic, kStandInMagicBytes) == 0;
}

namespace {

constexpr const char *kStandInHint = "This is a bug in dxpriv: the statement was refused before any row was read. Report it "
                              "with the statement; SET dxpriv.test_skip_stand_in_restore = off if a test set it.";

} // namespace

// See stand_in.h.
void
reject_stand_in(const void *p, const char *what)
{
	if (is_stand_in(p))
		fail(ERRCODE_INTERNAL_ERROR, std::string("a dxpriv planner stand-in reached ") + what, kStandInHint);
}

// See stand_in.h.
void
ereport_stand_in(const char *what)
{
	ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("a dxpriv planner stand-in reached %s", what),
	                errhint("%s", kStandInHint)));
}

} // namespace dxpriv::pg
