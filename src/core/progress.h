// Progress of long core computations (issue 28): a per-thread sink that loops report to at safe points.
#pragma once

namespace dxpriv {

// Receives progress reports. report() may throw (the SQL side throws on a query cancel or a
// statement timeout): core loops call it only where unwinding leaves no broken state, and every
// object they own is released by its destructor.
class ProgressSink {
public:
	virtual ~ProgressSink() = default;
	// `stage` names the loop (a static string), `done` of `total` units of it are finished.
	virtual void report(const char *stage, double done, double total) = 0;
};

// Installs `sink` as the current thread's sink for the lifetime of the scope (the previous one
// is restored by the destructor; nullptr: no reports).
class ProgressScope {
public:
	explicit ProgressScope(ProgressSink *sink);
	~ProgressScope();
	ProgressScope(const ProgressScope &) = delete;
	ProgressScope &operator=(const ProgressScope &) = delete;

private:
	ProgressSink *previous_;
};

// Whether a sink is installed on this thread (loops may skip their bookkeeping otherwise).
bool progress_active();
// Sends one report to the current thread's sink, if any; propagates what the sink throws.
void report_progress(const char *stage, double done, double total);

// Units of work (pairs, edges) between two reports of a core loop.
constexpr double kProgressEvery = 1 << 20;

} // namespace dxpriv
