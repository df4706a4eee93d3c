// Shared declarations of the PostgreSQL glue (src/pg): GUCs, OIDs, hooks, policies, noise.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "utils/jsonb.h"
}

#include <cstdint>
#include <string>
#include <vector>

#include "core/domain.h"
#include "core/metric.h"
#include "core/random.h"

namespace dxpriv::pg {

// ---- GUCs (defined in dxpriv.cpp) ----
extern double guc_epsilon;   // dxpriv.epsilon: default epsilon of a dx aggregate
extern int guc_test_seed;    // dxpriv.test_seed: superuser-only; -1 = secure randomness
extern int guc_allocation;   // dxpriv.allocation: 0 relative, 1 min_total_variance (alias optimal),
                             // 2 algorithm3, 3 equal_scale, 4 equal_split
extern int guc_noise;        // dxpriv.noise: 0 laplace, 1 gaussian, 2 truncated_laplace (core NoiseFamily order)
extern int guc_analysis_time_limit;   // dxpriv.analysis_time_limit (ms): one evaluation pass over the domain points
extern int guc_analysis_memory_limit; // dxpriv.analysis_memory_limit (kB): memory of one point's evaluation

// ---- Objects of the installed extension, looked up lazily (extension_objects.cpp) ----
struct ExtensionObjects {
	Oid extension = InvalidOid;
	Oid schema_owner = InvalidOid;
	Oid count_star = InvalidOid, count_any = InvalidOid, count_any_eps = InvalidOid;
	Oid sum_any = InvalidOid, sum_any_eps = InvalidOid;
	Oid avg_any = InvalidOid, avg_any_eps = InvalidOid, linear_any = InvalidOid, linear_any_eps = InvalidOid;
	// privacy units (sql/12_privacy_units.sql): dx.count_units markers and the row-ranking hash
	Oid count_units = InvalidOid, count_units_eps = InvalidOid, unit_rank = InvalidOid;
	Oid noisy_count = InvalidOid, noisy_sum = InvalidOid, noisy_avg = InvalidOid;
	Oid noisy_avg_pairs = InvalidOid; // dx._noisy_avg(..., float8 count weight): dx.avg over a join's pairs
	// distributed tables (planner/distributed.h): the exact partial aggregate, its shippable state
	// type and the coordinator's release functions
	Oid partial = InvalidOid, linear_partial_type = InvalidOid;
	Oid release_count = InvalidOid, release_sum = InvalidOid, release_avg = InvalidOid;
	bool is_release(Oid f) const { return f == release_count || f == release_sum || f == release_avg; }
	// native partial sums of distributed releases (sql/50_distributed.sql)
	Oid units = InvalidOid, units_by_group = InvalidOid, state_of = InvalidOid, collect = InvalidOid, em_collect = InvalidOid;
	// per-point tables travelling by digest (executor/point_table_cache.h)
	Oid weigh_cached = InvalidOid, weigh_int_cached = InvalidOid, store_point_table = InvalidOid;
	Oid indicator = InvalidOid;
	// execution by lookup (point_lookup.h): a row's weight from the per-point table at its point
	Oid weigh = InvalidOid, weigh_int = InvalidOid, group_key = InvalidOid;
	// exponential mechanism (em_rewrite.h): markers, the internal aggregate and the index -> value maps
	Oid mode_any = InvalidOid, mode_any_eps = InvalidOid, quantile_any = InvalidOid, quantile_any_eps = InvalidOid;
	Oid median_any = InvalidOid, median_any_eps = InvalidOid;
	Oid em_select = InvalidOid, em_point_range = InvalidOid, em_point_enum = InvalidOid;
	bool is_marker(Oid f) const
	{
		return f == count_star || f == count_any || f == count_any_eps || f == sum_any || f == sum_any_eps ||
		       f == avg_any || f == avg_any_eps || f == linear_any || f == linear_any_eps || f == mode_any ||
		       f == mode_any_eps || f == quantile_any || f == quantile_any_eps || f == median_any ||
		       f == median_any_eps || f == count_units || f == count_units_eps;
	}
	// Internal noisy aggregates: (..., ..., float8[] NoiseParams [, ...]) — charged by charge.cpp.
	bool is_internal(Oid f) const
	{
		return f == noisy_count || f == noisy_sum || f == noisy_avg || f == noisy_avg_pairs || f == em_select ||
		       f == partial;
	}
};
// The extension's objects in the current database, or nullptr when dxpriv is not installed
// (or is being created). Never errors.
const ExtensionObjects *extension_objects();

// ---- Running our own catalog SQL (catalog.cpp) ----
// True while dxpriv runs its own SPI queries: hooks must then stay out of the way.
bool in_internal_query();

// ---- Policies (policy.cpp) ----
// One declared column: where it is, how its values are mapped and how far apart they are.
// A declared column, or a group of numeric columns sharing one vector metric (location): the
// group's domain is a set of points, coordinate m of a point being the value of member m.
struct ColumnPolicy {
	struct Member {
		std::string name;
		AttrNumber attnum = 0;
		Oid type = InvalidOid;
		int32 typmod = -1;
		Oid collation = InvalidOid;
	};
	std::string name;                // column name, or "(a, b)" for a group
	AttrNumber attnum = 0;           // first member's attribute number
	Oid type = InvalidOid;           // first member's type (single columns)
	int32 typmod = -1;
	Oid collation = InvalidOid;
	std::vector<Member> members;     // one entry for a single column
	Domain domain = Domain::enumerated({"_"});
	ColumnMetric metric = ColumnMetric::none();

	bool is_group() const { return members.size() > 1; }
	const Member *member(AttrNumber att) const;
	int member_index(AttrNumber att) const;
};

// The privacy unit of a table (dx.set_privacy_unit): the record is the unit's bounded row set.
struct UnitPolicy {
	std::string column;        // the unit column (never a declared column)
	AttrNumber attnum = 0;     // 0: the table has no privacy unit
	Oid type = InvalidOid;
	int max_rows = 0;          // k >= 1
	int max_groups = 0;        // G, 0 when not declared (then k)
	int max_rows_per_group = 0; // kg, 0 when not declared (then k)
	std::string key_hex;       // the row-ranking key, 32 hex digits (never shown to anyone)
	bool present() const { return attnum != 0; }
};

struct TablePolicy {
	Oid relid = InvalidOid;
	UnitPolicy unit;
	double presence = 1.0;
	double delta = 0;  // per-query delta allowed for (epsilon, delta) noise; 0 = pure epsilon only
	std::vector<ColumnPolicy> columns;
	const ColumnPolicy *find(AttrNumber attnum) const;
};

// Parses and validates a column declaration for a column of the given type. Throws UserError
// with errcode and hint on any problem.
ColumnPolicy parse_column_policy(Oid type, int32 typmod, Jsonb *domain, Jsonb *metric);
// Parses a column group declaration (points or grid domain, vector metric) for members of the
// given types. Throws UserError with errcode and hint on any problem.
ColumnPolicy parse_group_policy(const std::vector<Oid> &types, Jsonb *domain, Jsonb *metric);
// The Datum of member m's coordinate at every point of a group (or of every point of a single
// column when m == 0): the values rows are mapped to.
std::vector<Datum> member_datums(const ColumnPolicy &col, size_t m);
// Set while dx.set_column validates a declaration: closing an explicit matrix raises a NOTICE.
extern bool notice_matrix_closure;
// Set while dx._validate_column / dx._validate_group check a new declaration: the tables it names
// ("table", "points_table") are read once, as the calling role and after the checks of
// policy.cpp (no dx, system or protected table, SELECT privilege), and their rows are copied here
// as JSON arrays, so that the stored declaration holds the rows instead of the table's name.
// nullptr otherwise: a stored declaration that names a table is refused, never read.
struct DeclarationCopy {
	std::string metric_key;  // "edges" or "pairs" when the metric was read from a table
	std::string metric_rows; // JSON array of [a, b, number]
	std::string points_rows; // JSON array of coordinate arrays when the domain was read from a table
};
extern DeclarationCopy *declaration_copy;
// Loads the policy of relid; returns false when the table is not protected.
bool load_table_policy(Oid relid, TablePolicy &out);
// "schema"."table" of relid, quoted where needed, for messages and generated SQL (calls PostgreSQL:
// run it in a pg_call from code that may throw C++ exceptions).
std::string qualified_relation_name(Oid relid);
// The owner of relid (the role dxpriv's own statements read a protected table as), InvalidOid when
// the relation does not exist (calls PostgreSQL: run it in a pg_call).
Oid relation_owner(Oid relid);
// The Datum of every domain point, built with the column type's input rules (palloc'd in the
// current memory context). The domain indexers and the analyzer use this same function, so a
// clamped data value is bit-identical to the domain point the sensitivity was computed on.
std::vector<Datum> domain_datums(const Domain &domain, Oid type, int32 typmod);
// Numeric position of a value of a range-domain type (ints, floats, numeric, date).
double datum_to_ordinal(Datum value, Oid type);
// True when range domains are supported on the type.
bool is_range_type(Oid type);

// ---- Noise (noise_source.cpp) ----
// The backend's random source: the kernel CSPRNG, or the test stream when dxpriv.test_seed is set.
RandomSource &backend_random();
void reset_test_stream();

// ---- Query analysis and charging ----
// Charges epsilon on table relid to the current role for a release made by a function rather than
// a planned statement (dx.release_mwem, dx.release_smalldb, median sessions), through the same
// ledger worker as statements: committed durably outside the caller's transaction before this
// returns; raises the usual errors (no budget, exhausted, over the per-query cap, ledger down)
// and charges nothing then.
void charge_release(Oid relid, double epsilon, const std::string &mechanism, const std::vector<double> &scales,
                    const std::string &fingerprint, const std::string &query_text);
// True when a final function of a noisy aggregate of the plan may run in a parallel worker (a whole
// aggregate under a Gather: a single-copy Gather, a Parallel Append of whole aggregates). The
// planner hook then plans the statement again without those (parameters.cpp), so that the leader
// releases, logs (dx.last_release) and caches every answer.
bool releases_in_workers(PlannedStmt *stmt);
// True when q (or a query nested in it) holds a rewritten noisy aggregate.
bool holds_noisy_aggregates(Query *q);

struct NoiseParams;

} // namespace dxpriv::pg
