// Progress and cancel of long releases and analyses (progress.h).
#include "pg/progress.h"

#include "pg/guard.h"

extern "C" {
#include "miscadmin.h"
#include "utils/guc.h"
}

namespace dxpriv::pg {

double guc_progress_interval = 1.0;
double guc_analysis_work_limit = 1.2e8;

// See progress.h.
void
define_release_progress_guc()
{
	DefineCustomRealVariable("dxpriv.progress_interval",
	                         "Seconds between progress notices of a long release or analysis (0 disables them).",
	                         "A synthetic release or a statement's analysis that runs longer than this sends NOTICE "
	                         "messages with its progress.",
	                         &guc_progress_interval, 1.0, 0.0, 86400.0, PGC_USERSET, 0, nullptr, nullptr, nullptr);
	DefineCustomRealVariable("dxpriv.analysis_work_limit",
	                         "Most pair-search work (units of about 7 ns of CPU) one statement's analysis may spend.",
	                         "Over l1/l2/linf point columns: the evaluation at every point, the pair trees' "
	                         "construction and their searches (point pairs rated, node pairs bounded, weighted by "
	                         "their arithmetic), summed over the statement; the work known up front is counted before "
	                         "it is done. Beyond it the statement is refused (54000) before any row is read. Only "
	                         "superusers may set it.",
	                         &guc_analysis_work_limit, 1.2e8, 1e5, 1e12, PGC_SUSET, 0, nullptr, nullptr, nullptr);
}

// See progress.h.
ReleaseProgress::ReleaseProgress(const char *entry) : entry_(entry)
{
	start_ = last_ = GetCurrentTimestamp();
}

// See progress.h.
bool
ReleaseProgress::due(double *seconds)
{
	bool out = false;
	pg_call([&] {
		CHECK_FOR_INTERRUPTS();
		if (!(guc_progress_interval > 0))
			return;
		const TimestampTz now = GetCurrentTimestamp();
		const long interval_us = static_cast<long>(guc_progress_interval * 1e6);
		if (!TimestampDifferenceExceeds(last_, now, static_cast<int>(interval_us / 1000)))
			return;
		last_ = now;
		*seconds = static_cast<double>(now - start_) / 1e6;
		out = true;
	});
	return out;
}

// See progress.h.
void
ReleaseProgress::round(int done, int total)
{
	double seconds = 0;
	if (due(&seconds))
		pg_call([&] {
			ereport(NOTICE, (errmsg("%s: round %d of %d", entry_, done, total), errdetail("%.1f s elapsed.", seconds)));
		});
}

// See progress.h.
void
ReleaseProgress::step(const char *what, double done, double total)
{
	double seconds = 0;
	if (due(&seconds))
		pg_call([&] {
			ereport(NOTICE, (errmsg("%s: %s, %.0f of %.0f", entry_, what, done, total),
			                 errdetail("%.1f s elapsed.", seconds)));
		});
}

// See progress.h.
void
CoreProgress::debug_work() const
{
	if (budget_.spent() > 0)
		pg_call([&] {
			elog(DEBUG1, "%s: pair-search work %.0f of the limit %.3g", progress_.entry(), budget_.spent(),
			     budget_.limit());
		});
}

} // namespace dxpriv::pg
