// Shared glue of the synthetic releases (dx.release_mwem, dx.release_smalldb, median sessions):
// the chosen columns' sub-universe, the workload argument, the true histogram read by mapping
// stored rows to their domain points, the target table and the catalog record.
#pragma once

#include "pg/metadata/policy.h"

extern "C" {
#include "fmgr.h"
}

#include <string>
#include <vector>

#include "core/sensitivity.h"
#include "core/workload.h"

namespace dxpriv::pg {

// The source table and the chosen declared columns, in table (attribute) order.
struct ReleaseSource {
	Oid relid = InvalidOid;
	TablePolicy policy;
	std::vector<const ColumnPolicy *> cols;
	SubUniverse sub;
	std::vector<std::string> names;
};

// Checks that relid is protected and every name is a distinct declared single column (no column
// group); builds the sub-universe (refused beyond kMaxSubUniverse points). Errors 42501 for an
// unprotected table or an undeclared column, 22023 for an empty, NULL or repeated column, 0A000
// for a column group.
void load_release_source(Oid relid, ArrayType *columns, ReleaseSource &out);

// Parses the text workload: 'marginals:K' (all K-way marginals of the chosen columns). 22023
// with a hint otherwise.
Workload text_workload(const ReleaseSource &src, const std::string &spec);

// A workload of explicit weight vectors: a two-dimensional float8 array, one row per query and
// one column per universe point (row-major over the chosen columns, last column fastest).
Workload array_workload(const ReleaseSource &src, ArrayType *weights);

// A workload of WHERE predicates (text[], one query per predicate): each parsed as a boolean
// condition on the chosen columns of the source (predicate_workload.cpp: one table, no subquery,
// aggregate or set operation, built-in immutable functions only; 22023 / 42501 / 0A000 with a hint
// otherwise) and evaluated on the declared domain points, never on rows: weight 1 where it holds,
// 0 where it is false or NULL. predicate_weights also returns the predicates' texts.
std::vector<std::vector<double>> predicate_weights(const ReleaseSource &src, ArrayType *predicates,
                                                   std::vector<std::string> &labels);
Workload predicate_workload(const ReleaseSource &src, ArrayType *predicates);

// The workload argument of the release functions, one of three spellings: predicates (text[]),
// weights (float8[][]) or the text spec (used when both arrays are null).
struct WorkloadArgument {
	std::string text;
	ArrayType *weights = nullptr;
	ArrayType *predicates = nullptr;
};
// Reads argument argno of the calling SQL function by its declared type (float8[] weights, text[]
// predicates, otherwise the text spec). A PostgreSQL frame: call inside pg_call.
WorkloadArgument read_workload_argument(FunctionCallInfo fcinfo, int argno);
// The workload the argument names (the three parsers above) and its label in dx.releases
// ("predicates:N", "weights:N" or the text spec).
Workload workload_of(const ReleaseSource &src, const WorkloadArgument &arg);
std::string workload_label(const WorkloadArgument &arg, const Workload &w);

// The arguments every release function starts with: (source regclass, columns text[], workload,
// epsilon float8 [, target name]). The functions' own arguments follow them.
struct ReleaseHead {
	Oid relid = InvalidOid;
	ArrayType *columns = nullptr;
	WorkloadArgument workload; // text spec, weight vectors or WHERE predicates
	double epsilon = 0;
	const char *target = nullptr; // with_target only
};
// Refuses a null one of them (22004, hint `example`), then reads them.
ReleaseHead read_release_head(FunctionCallInfo fcinfo, bool with_target, const char *example);
// Refuses an epsilon that is not positive and finite (22023); the callers check it after their own
// arguments, so that the first error reported stays the same.
void check_release_epsilon(double epsilon);

// Refuses (before anything is charged) a target that already exists or cannot be created by the
// current role in its creation schema; returns the quoted, schema-qualified target name. The
// target is "table" (created in the first schema of search_path, as CREATE TABLE does) or
// "schema.table".
std::string check_release_target(const char *target);

// The true histogram: every stored row mapped to its point by dxpriv's domain indexers (no
// expression of the caller runs on a row), read as the table owner with hooks off through
// ProtectedRowRead (0A000 on a table with a privacy unit: `entry` names the caller in the error).
std::vector<std::int64_t> read_histogram(const ReleaseSource &src, const char *entry);

// Creates the target table as the current role: one column per chosen column (its declared
// type, holding the domain point) plus `weight float8`, one row per universe point.
Oid write_histogram(const ReleaseSource &src, const std::string &target, const std::vector<double> &weights);

// What a release recorded in dx.releases.
struct ReleaseRecord {
	std::string mechanism, workload, output;
	double epsilon = 0;
	int iterations = 0; // MWEM: T; SmallDB: database size m
	double n_hat = 0, count_epsilon = 0, step_epsilon = 0, sensitivity = 0;
	int queries = 0;
};
void record_release(const ReleaseSource &src, Oid target, const ReleaseRecord &rec);

// The text of the calling statement (first 4096 bytes) and a fingerprint of a release for the ledger.
std::string statement_text();

} // namespace dxpriv::pg
