// Release kinds: the list of the kinds behind the release-kind interface, in rewrite order.
#include "pg/planner/release_kind.h"
#include "pg/planner/em_kind.h"
#include "pg/planner/linear_kind.h"

namespace dxpriv::pg::analysis {

// See planner/release_kind.h.
const std::vector<const ReleaseKind *> &
release_kinds()
{
	static const std::vector<const ReleaseKind *> kinds{&linear_kind(), &em_kind()};
	return kinds;
}

} // namespace dxpriv::pg::analysis
