// The pipeline's one entry: installs every PostgreSQL hook of dxpriv (see hooks.cpp's table).
#pragma once

namespace dxpriv::pg {

// Installs each hook dxpriv uses exactly once, plus one transaction and one subtransaction
// callback that reset every stage. Called once from _PG_init, after the GUCs are defined.
void install_hooks();

} // namespace dxpriv::pg
