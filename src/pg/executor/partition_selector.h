// The partition selector of the running statement, shared by the local selection
// (dx._partition_select) and the coordinator's selection of a Citus release (dx._release_selection).
#pragma once

#include "core/partition_selection.h"

extern "C" {
#include "postgres.h"
#include "utils/array.h"
}

namespace dxpriv::pg {

// A selection's parameters as the analyzer writes them: float8[3] = [mechanism (0 optimal,
// 1 laplace), per-partition epsilon, per-partition delta].
struct SelectionParams {
	int mechanism = 0;
	double epsilon = 0, delta = 0;
};

// Reads sel; XX000 ("malformed dxpriv partition selection parameters") unless it is a
// one-dimensional float8 array of 3 without NULLs and a known mechanism.
SelectionParams read_selection_params(ArrayType *sel);

// The selector of the last (mechanism, epsilon, delta) seen by this backend (mechanism 0: optimal,
// otherwise laplace): building the optimal table costs one step per contributor count up to its
// threshold, so it is built once per statement, not once per partition. Throws what the
// PartitionSelector constructor throws (CoreError for invalid parameters); a failed construction
// leaves no stale selector behind.
const PartitionSelector &statement_partition_selector(int mechanism, double epsilon, double delta);

} // namespace dxpriv::pg
