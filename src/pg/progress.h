// Progress and cancel of long work (issue 28): dxpriv.progress_interval, a reporter called between
// the rounds of a release or at the safe points of an analysis, and the core progress sink.
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/timestamp.h"
}

#include "core/progress.h"
#include "core/work_budget.h"

namespace dxpriv::pg {

// dxpriv.progress_interval (seconds, 0 = never): a release or an analysis that runs longer than
// this reports its progress with a NOTICE at most once per interval.
extern double guc_progress_interval;

// dxpriv.analysis_work_limit (superusers): the most pair-search work (units of about the same CPU
// time: evaluation at the points, pair-tree construction, point pairs rated and node pairs bounded,
// core/pair_tree_cost.h, core/upfront_work.h) one statement's analysis may spend over its
// l1/l2/linf point columns before it is refused (54000, with the numbers; the work known up front
// is refused before it is done).
extern double guc_analysis_work_limit;

// Defines dxpriv.progress_interval and dxpriv.analysis_work_limit (called from _PG_init).
void define_release_progress_guc();

// Reports the progress of one long piece of work. Each call honours a cancel or a statement
// timeout (CHECK_FOR_INTERRUPTS, raised as a PgError through the C++ frames, so it must be called
// from guarded code) and sends a NOTICE when the interval has passed since the start or the last
// notice.
class ReleaseProgress {
public:
	explicit ReleaseProgress(const char *entry);
	// After every round of a release: "NOTICE: <entry>: round <done> of <total>".
	void round(int done, int total);
	// At a safe point of a computation: "NOTICE: <entry>: <what>, <done> of <total>".
	void step(const char *what, double done, double total);
	const char *entry() const { return entry_; }

private:
	// CHECK_FOR_INTERRUPTS, then whether a notice is due (and if so, restarts the interval);
	// *seconds receives the time since the start.
	bool due(double *seconds);
	const char *entry_;
	TimestampTz start_, last_;
};

// Installs a ReleaseProgress as the core progress sink (core/progress.h) for its lifetime: the
// core loops of an analysis (sensitivity pairs, constraint edges, allocation rounds) then honour
// a cancel and report "NOTICE: <entry>: <stage>, <done> of <total>". Only inside guarded code
// (a cancel is thrown as a PgError through the core frames). Also installs the statement's
// budget of pair-search work, dxpriv.analysis_work_limit (core/work_budget.h).
class CoreProgress : public dxpriv::ProgressSink {
public:
	explicit CoreProgress(const char *entry) : progress_(entry), scope_(this), budget_(guc_analysis_work_limit) {}
	void report(const char *stage, double done, double total) override { progress_.step(stage, done, total); }
	// Sends "DEBUG1: <entry>: pair-search work <spent> of the limit <limit>" when a pair search ran.
	void debug_work() const;

private:
	ReleaseProgress progress_;
	dxpriv::ProgressScope scope_;
	dxpriv::WorkBudgetScope budget_;
};

} // namespace dxpriv::pg
