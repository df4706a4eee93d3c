// Analysts' statements on Citus tables run as the owner: the functions and tables they may use.
#include "pg/planner/distributed_owner.h"

#include "pg/planner/distributed_exposure.h"
#include "pg/guard.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/metadata/extension_objects.h"

#include "core/linear_query.h"

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <limits>
#include <map>
#include <optional>
#include <vector>
#include <set>
#include <string>

namespace dxpriv::pg::dist {

namespace {

// Built-in stable functions that run SQL or read server state as the current user: refused in
// statements that run as the owner (the immutable and other stable built-ins only compute).
const std::set<std::string> kRunsAsCurrentUser = {
    "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema",
    "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema", "schema_to_xml", "schema_to_xmlschema",
    "schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema", "database_to_xml_and_xmlschema",
    "ts_stat", "ts_rewrite", "current_setting", "pg_settings_get_flags", "has_table_privilege",
    "has_column_privilege", "has_any_column_privilege", "has_function_privilege", "has_schema_privilege"};

// Raises for a function an analyst's distributed statement must not run as the table owner: one
// that is not built-in (nor dxpriv's own), one the analyst may not execute, a volatile one (it may
// change state: set_config, pg_read_file, ...), or a stable one that runs SQL or reads settings as
// the current user.
bool
check_owner_safe_function(Oid fn, void *ctx)
{
	const Oid dx = get_namespace_oid("dx", true);
	if (get_func_namespace(fn) == dx)
		return false;
	char *name = get_func_name(fn);
	const std::string shown = name ? name : "?";
	const char *hint = "A query on a Citus table runs as the table owner once it is charged, so it may use only built-in "
	                   "immutable or stable functions and operators that you may execute; apply other functions to the "
	                   "answers in a separate statement.";
	if (fn >= FirstNormalObjectId)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "function " + shown + " cannot be used in analysts' queries on distributed tables", hint);
	if (pg_value([&] { return pg_proc_aclcheck(fn, GetUserId(), ACL_EXECUTE); }) != ACLCHECK_OK)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "permission denied for function " + shown, hint);
	const char volatility = func_volatile(fn);
	if (volatility == PROVOLATILE_VOLATILE || (volatility == PROVOLATILE_STABLE && kRunsAsCurrentUser.count(shown)))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     "function " + shown + " cannot be used in analysts' queries on distributed tables", hint);
	return false;
}

// Walker behind require_owner_safe: every function, and domain checks of user-defined domains.
bool
owner_safe_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(owner_safe_walker), ctx, 0);
	if (IsA(node, CoerceToDomain) && castNode(CoerceToDomain, node)->resulttype >= FirstNormalObjectId)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "casts to user-defined domains cannot be used in analysts' queries on distributed tables",
		     "A query on a Citus table runs as the table owner once it is charged; cast the answers in a separate statement.");
	check_functions_in_node(node, check_owner_safe_function, nullptr);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(owner_safe_walker), ctx);
}

// Collects the range table entries of every level of a query (views are already expanded: their
// entries carry the view owner in checkAsUser, the protected table's its owner).
bool
collect_rtes(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, RangeTblEntry)) {
		auto *out = static_cast<List **>(ctx);
		*out = lappend(*out, node);
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(collect_rtes), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(collect_rtes), ctx);
}

} // namespace

// See distributed_owner.h.
void
require_owner_safe(Query *split, List *releases, const ExtensionObjects *ext)
{
	if (worker_settings_propagated()) // refused before anything is charged
		refuse_propagated_settings();
	owner_safe_walker((Node *) split, nullptr);
	// the statement will run as the table owner: every other table it reads is checked as the
	// analyst now (and again when it starts), so the owner's privileges serve only the release
	List *rtes = NIL;
	collect_rtes((Node *) split, &rtes);
	pg_call([&] { ExecCheckRTPerms(rtes, true); });
	// and it reads no other table at all: row-level security or defaults of another table would
	// be evaluated as the owner
	std::set<Oid> released;
	ListCell *rc;
	foreach (rc, releases) {
		ReleaseScan one{ext, {}};
		release_walker((Node *) lfirst(rc), &one);
		released.insert(one.relid);
	}
	foreach (rc, rtes) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, rc);
		if (rte->rtekind == RTE_RELATION && !released.count(rte->relid)) {
			const char *name = get_rel_name(rte->relid);
			fail(ERRCODE_FEATURE_NOT_SUPPORTED,
			     std::string("analysts' queries on distributed tables cannot also read table \"") +
			         (name ? name : "?") + "\"",
			     "A query on a Citus table runs as the table owner once it is charged; join its answers with "
			     "other tables in a separate statement.");
		}
	}
}

} // namespace dxpriv::pg::dist
