// Parents and ancestors of a relation in pg_inherits (inheritance_parents.h).
#include "pg/metadata/inheritance_parents.h"

#include "pg/guard.h"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_inherits.h"
#include "utils/fmgroids.h"
}

#include <algorithm>
#include <cstddef>

namespace dxpriv::pg {

// See inheritance_parents.h.
std::vector<Oid>
inheritance_parents(Oid relid)
{
	List *parents = NIL;
	pg_call([&] {
		Relation rel = table_open(InheritsRelationId, AccessShareLock);
		ScanKeyData key;
		ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
		SysScanDesc scan = systable_beginscan(rel, InheritsRelidSeqnoIndexId, true, nullptr, 1, &key);
		HeapTuple tup;
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
			parents = lappend_oid(parents, ((Form_pg_inherits) GETSTRUCT(tup))->inhparent);
		systable_endscan(scan);
		table_close(rel, AccessShareLock);
	});
	std::vector<Oid> out;
	ListCell *lc;
	foreach (lc, parents)
		out.push_back(lfirst_oid(lc));
	return out;
}

// See inheritance_parents.h.
std::vector<Oid>
inheritance_ancestors(Oid relid)
{
	std::vector<Oid> out = inheritance_parents(relid); // (a relation's parents are distinct)
	for (std::size_t i = 0; i < out.size(); ++i)         // breadth first: out grows while read
		for (Oid parent : inheritance_parents(out[i]))
			if (std::find(out.begin(), out.end(), parent) == out.end())
				out.push_back(parent);
	return out;
}

} // namespace dxpriv::pg
