// Parse analysis of statements with dx aggregates: analysis, allocation and rewrite (analyzer.cpp).
#pragma once

namespace dxpriv::pg {

// Installs the post-parse-analysis hook (called once from _PG_init).
void install_analyzer_hooks();

} // namespace dxpriv::pg
