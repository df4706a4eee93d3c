// pg_class's size estimates answered as unknown for analysts (pg_class_sizes.h).
#include "pg/analyst/pg_class_sizes.h"

extern "C" {
#include "access/sysattr.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "nodes/bitmapset.h"
#include "utils/lsyscache.h"
}

#include <initializer_list>

namespace dxpriv::pg {

// See pg_class_sizes.h.
void
swap_pg_class_sizes(RangeTblEntry *rte)
{
	if (rte->rtekind != RTE_RELATION || rte->relid != RelationRelationId)
		return;
	bool sizes = bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber, rte->selectedCols);
	for (const char *c : {"reltuples", "relpages", "relallvisible"}) {
		const AttrNumber att = get_attnum(RelationRelationId, c);
		sizes = sizes || bms_is_member(att - FirstLowInvalidHeapAttributeNumber, rte->selectedCols);
	}
	if (!sizes)
		return;
	const Oid nsp = get_namespace_oid("dx", true);
	const Oid view = OidIsValid(nsp) ? get_relname_relid("analyst_pg_class", nsp) : InvalidOid;
	if (!OidIsValid(view))
		return;
	rte->relid = view;
	rte->relkind = RELKIND_VIEW;
}

} // namespace dxpriv::pg
