// The C heap during an analysis (analysis_heap.h).
#include "pg/analysis_heap.h"

#include <malloc.h>

namespace dxpriv::pg {

namespace {
int depth = 0;                            // nested analyses: only the outermost acts
constexpr int kMmap = 32 * 1024 * 1024;   // glibc's largest mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX, 64-bit)
constexpr int kTrimDuring = 1 << 30;      // 1 GB: no trim while analysing
constexpr int kTrimAfter = 2 * kMmap;     // what glibc's dynamic trim threshold becomes
} // namespace

// See analysis_heap.h.
AnalysisHeap::AnalysisHeap()
{
	if (depth++ > 0)
		return;
	mallopt(M_MMAP_THRESHOLD, kMmap);
	mallopt(M_TRIM_THRESHOLD, kTrimDuring);
}

// See analysis_heap.h.
AnalysisHeap::~AnalysisHeap()
{
	if (--depth > 0)
		return;
	mallopt(M_TRIM_THRESHOLD, kTrimAfter);
}

} // namespace dxpriv::pg
