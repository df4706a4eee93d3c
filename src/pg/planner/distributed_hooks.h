// Executor hooks that run analysts' distributed statements as the table owner.
#pragma once

namespace dxpriv::pg {

// Installs ExecutorStart/Run/Finish/End hooks (and a transaction callback) that run an analyst's
// statement with a Citus release as the table owner (distributed_run_as) after it was charged, and
// ship large per-point tables to the workers first. Call once from _PG_init, before the charging hooks.
void install_distributed_hooks();

} // namespace dxpriv::pg
