// dx.last_release() of a release grouped by an open key: the HAVING that labels kept partitions.
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg::analysis {

// The HAVING of an open release q (keys already put back, GROUP BY complete): with selection the
// dx._partition_select aggregate and having the analyst's HAVING (or nullptr),
//   CASE WHEN selection THEN dx._open_cells(true, names, key values as text) [AND having]
//        ELSE dx._open_cells(false, NULL, NULL) END
// so that the answers of a kept partition enter dx.last_release() labelled with its GROUP BY
// values, and those of a withheld one are dropped (executor/release_log.h). The analyst's HAVING
// still runs only on kept partitions; the key values are converted to text only for them.
Node *open_release_having(Query *q, const ExtensionObjects &ext, Expr *selection, Node *having);

} // namespace dxpriv::pg::analysis
