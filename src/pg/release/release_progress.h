// Progress and cancel of long synthetic releases (issue 28): dxpriv.progress_interval and a
// per-release reporter called between rounds.
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/timestamp.h"
}

namespace dxpriv::pg {

// dxpriv.progress_interval (seconds, 0 = never): a release that runs longer than this reports its
// progress with a NOTICE at most once per interval.
extern double guc_progress_interval;

// Defines dxpriv.progress_interval (called from _PG_init).
void define_release_progress_guc();

// Called after every round of a release: honours a cancel or a statement timeout
// (CHECK_FOR_INTERRUPTS, raised as a PgError through the C++ frames) and sends
// "NOTICE: <entry>: round <done> of <total>" (DETAIL: the seconds elapsed) when the interval has
// passed since the start or the last notice.
class ReleaseProgress {
public:
	explicit ReleaseProgress(const char *entry);
	void round(int done, int total);

private:
	const char *entry_;
	TimestampTz start_, last_;
};

} // namespace dxpriv::pg
