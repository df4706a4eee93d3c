// InternalScope: while alive, dxpriv's hooks stay out of the way of dxpriv's own statements.
// (SPI and owner switches live in src/pg/elevated/sealed_execution.cpp.)
#include "pg/metadata/catalog.h"

namespace dxpriv::pg {

static int internal_depth = 0;

// See dxpriv.h.
bool
in_internal_query()
{
	return internal_depth > 0;
}

// See sealed_execution.h.
InternalScope::InternalScope()
{
	++internal_depth;
}

InternalScope::~InternalScope()
{
	if (internal_depth > 0) // 0 after internal_scope_reset()
		--internal_depth;
}

// See sealed_execution.h.
void
internal_scope_reset()
{
	internal_depth = 0;
}

} // namespace dxpriv::pg
