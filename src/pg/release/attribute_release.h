// dx.explain's view of the attribute-privacy releases (attribute_release.cpp).
#pragma once

#include "pg/planner/explain.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// When q is SELECT dx.attr_avg(<rel>, <col>) or dx.attr_sum(...) with constant arguments (several
// calls allowed, nothing else in the target list), fills `cap` with one cell per protected
// attribute (APGM) and one for the d_X component, as dx.explain_attribute reports them, marks it
// as an attribute capture and returns true; returns false for any other query. Spends nothing.
bool explain_attribute_calls(Query *q, ExplainCapture &cap);

} // namespace dxpriv::pg
