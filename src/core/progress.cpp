// Progress of long core computations: the per-thread sink (progress.h).
#include "core/progress.h"

namespace dxpriv {

namespace {
thread_local ProgressSink *current_sink = nullptr;
} // namespace

// See progress.h.
ProgressScope::ProgressScope(ProgressSink *sink) : previous_(current_sink)
{
	current_sink = sink;
}

// See progress.h.
ProgressScope::~ProgressScope()
{
	current_sink = previous_;
}

// See progress.h.
bool
progress_active()
{
	return current_sink != nullptr;
}

// See progress.h.
void
report_progress(const char *stage, double done, double total)
{
	if (current_sink)
		current_sink->report(stage, done, total);
}

} // namespace dxpriv
