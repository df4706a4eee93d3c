// The C heap during an analysis: large per-point vectors reuse freed memory instead of fresh pages.
#pragma once

namespace dxpriv::pg {

// While alive (outermost instance only), glibc malloc serves blocks below 32 MB (its largest mmap
// threshold) from the heap and returns no freed memory at the top of the heap to the kernel, so
// that an analysis's vectors of up to millions of doubles, allocated and freed one after another,
// reuse pages already mapped instead of faulting in and zeroing fresh ones. On destruction the
// trim threshold becomes 64 MB: a backend keeps at most 64 MB free at the top of its heap for the
// next analysis (the value glibc's dynamic trim threshold reaches by itself after a 32 MB block is
// freed) and the mmap threshold stays at 32 MB (both are then fixed, as after any mallopt call).
class AnalysisHeap {
public:
	AnalysisHeap();
	~AnalysisHeap();
	AnalysisHeap(const AnalysisHeap &) = delete;
	AnalysisHeap &operator=(const AnalysisHeap &) = delete;
};

} // namespace dxpriv::pg
