// Progress and cancel of long synthetic releases (release_progress.h).
#include "pg/release/release_progress.h"

#include "pg/guard.h"

extern "C" {
#include "miscadmin.h"
#include "utils/guc.h"
}

namespace dxpriv::pg {

double guc_progress_interval = 1.0;

// See release_progress.h.
void
define_release_progress_guc()
{
	DefineCustomRealVariable("dxpriv.progress_interval",
	                         "Seconds between progress notices of a long synthetic release (0 disables them).",
	                         "A release that runs longer than this sends NOTICE messages with its round count.",
	                         &guc_progress_interval, 1.0, 0.0, 86400.0, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

// See release_progress.h.
ReleaseProgress::ReleaseProgress(const char *entry) : entry_(entry)
{
	start_ = last_ = GetCurrentTimestamp();
}

// See release_progress.h.
void
ReleaseProgress::round(int done, int total)
{
	pg_call([&] {
		CHECK_FOR_INTERRUPTS();
		if (!(guc_progress_interval > 0))
			return;
		const TimestampTz now = GetCurrentTimestamp();
		const long interval_us = static_cast<long>(guc_progress_interval * 1e6);
		if (!TimestampDifferenceExceeds(last_, now, static_cast<int>(interval_us / 1000)))
			return;
		last_ = now;
		const double seconds = static_cast<double>(now - start_) / 1e6;
		ereport(NOTICE, (errmsg("%s: round %d of %d", entry_, done, total), errdetail("%.1f s elapsed.", seconds)));
	});
}

} // namespace dxpriv::pg
