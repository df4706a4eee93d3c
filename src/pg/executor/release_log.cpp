// Backend-local log of the last statement's released answers with their error bars:
// dx.last_release() and the NOTICE of dxpriv.show_error_bars.
#include "pg/executor/release_log.h"

#include "pg/contract/noise_params.h"
#include "pg/executor/consistent_release.h"
#include "pg/guard.h"
#include "pg/ledger/answer_cache.h"
#include "pg/statement/statement_context.h"

#include "core/accuracy.h"
#include "core/error.h"
#include "core/release_interval.h"

extern "C" {
#include "access/parallel.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"
}

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <tuple>

namespace dxpriv::pg {

bool guc_show_error_bars = false;

// Descriptions of one analysed statement (registered in the statement context by its charge ids).
struct DescribedStatement {
	std::vector<int64> charge_ids;
	std::vector<ReleaseDescription> aggregates; // same order as charge_ids
	std::vector<std::string> group_labels;
};

namespace {

constexpr size_t kNoticeRows = 8; // answers listed in one NOTICE

// One aggregate of a charged statement, from its noise parameters.
struct Charged {
	int64 charge_id;
	int agg_index, components, groups, family;
	double epsilon, delta;
	int first_cell; // 0-based position of its first cell in the ledger's scales
	int sets;       // grouping sets allocated together (agg_index = aggregate * sets + set)
	double release_epsilon; // its allocation's total: what the statement was charged for its release
	bool exponential = false; // dx.mode/quantile/median/count_distinct (release_log_exponential)

	// 1-based position of the aggregate among the statement's dx aggregates
	int aggregate() const { return agg_index / sets + 1; }
};

} // namespace

// A charged statement whose releases the log shows (each of its charge ids points to it through
// the statement context's ChargeState::logged until the transaction ends).
struct LoggedStatement {
	const void *plan = nullptr; // its PlannedStmt
	Oid role = InvalidOid;      // the role that ran it: the only one shown its open partitions' keys
	std::vector<Charged> aggregates;
	bool reused = false;
};

namespace {

// One released value.
struct Row {
	int cell;              // 1-based ledger cell, 0 for the average itself
	std::string component; // value; avg: avg, sum, count
	double answer;
	LinearNoisePlan plan;  // noise of the cell (unused for the average)
	double half_width;
	bool delta_method;
	std::string post = {};    // free post-processing applied (dx.last_release's postprocessing)
	bool projected = false; // half_width is that of a consistent projection
	std::string kind = {}, expression = {}; // a statistic computed from parts (release_log_statistic)
	std::string method = {};                // interval_method when neither exact nor delta_method
};

// An answer of an open release's partition, held until the selection's verdict on that partition
// (release_log_open_cells): the final functions know no key value and run for every partition.
struct PendingCell {
	int64 charge_id;
	int group, components;
	LinearNoisePlan plans[2];
	double answer;
	double parts[2];
	bool has_parts;
};

// The log: the statement whose releases it shows, and the rows by (aggregate, group, order).
struct Log {
	std::shared_ptr<LoggedStatement> statement;
	std::map<std::tuple<int, int, int>, Row> rows; // by (aggregate's first ledger cell, group, order)
	std::set<std::pair<int64, int>> recorded;
	// a release grouped by an open key: the rows of the partitions the selection kept, by (first
	// ledger cell, the partition's label, order); sorted by label, so that their order does not
	// depend on the partitions that were withheld (nor on the order the executor met them in).
	// Built on first read (open_rows_of) from open_kept, the kept partitions' cells in verdict order:
	// a release of 50,000 partitions does not build 250,000 rows nobody reads.
	std::map<std::tuple<int, std::string, int>, std::pair<int, Row>> open_rows; // -> (declared group, row)
	std::vector<std::string> open_labels;                            // kept partitions, in verdict order
	std::vector<std::tuple<size_t, Charged, PendingCell>> open_kept; // (label index, aggregate, answer)
	size_t open_built = 0;                                           // entries of open_kept in open_rows
	bool unreported = false;
};
Log current;

std::vector<PendingCell> pending;
int open_verdict = 0; // the last dx._partition_select final of this backend: 1 kept, -1 withheld, 0 consumed

// The aggregate of the current statement whose first ledger cell is first_cell, or nullptr (the
// key of its rows: unique in the statement, also when several releases number their aggregates
// from 0, and in ledger order).
const Charged *
charged_aggregate(int first_cell)
{
	for (const Charged &a : current.statement->aggregates)
		if (a.first_cell == first_cell)
			return &a;
	return nullptr;
}


// The charged aggregate of the log's statement with this charge id, or nullptr.
const Charged *
find_charged(const LoggedStatement &s, int64 charge_id)
{
	for (const Charged &c : s.aggregates)
		if (c.charge_id == charge_id)
			return &c;
	return nullptr;
}

// The registered description of a charge id, or nullptr (and the statement's labels).
const ReleaseDescription *
find_description(int64 charge_id, const std::vector<std::string> **labels)
{
	const auto [d, i] = statement::described(charge_id); // (the context keeps d alive)
	if (!d)
		return nullptr;
	*labels = &d->group_labels;
	return &d->aggregates[i];
}

// "kind(expression)" for messages.
std::string
aggregate_text(const Charged &c)
{
	const std::vector<std::string> *labels = nullptr;
	const ReleaseDescription *d = find_description(c.charge_id, &labels);
	if (!d)
		return std::string(c.components == 2 ? "avg" : "aggregate ") + (c.components == 2 ? "" : std::to_string(c.aggregate()));
	return d->kind + "(" + d->expression + ")";
}

// Group label of (charge id, group), or "" without GROUP BY or description.
std::string
group_text(int64 charge_id, int group)
{
	const std::vector<std::string> *labels = nullptr;
	if (!find_description(charge_id, &labels) || !labels || static_cast<size_t>(group) >= labels->size())
		return "";
	return (*labels)[static_cast<size_t>(group)];
}

const std::map<std::tuple<int, std::string, int>, std::pair<int, Row>> &open_rows_of(Log &log);

// The compact NOTICE of dxpriv.show_error_bars: the first answers with their 95% half-widths.
std::string
notice_text()
{
	std::string text;
	size_t shown = 0, total = 0;
	for (const auto &[key, row] : current.rows) {
		if (row.component == "sum" || row.component == "count") // parts of an average
			continue;
		{ // parts of a dispersion statistic: the statistic's row stands for them
			const Charged *owner = charged_aggregate(std::get<0>(key));
			const std::vector<std::string> *labels = nullptr;
			const ReleaseDescription *d = owner ? find_description(owner->charge_id, &labels) : nullptr;
			if (row.kind.empty() && d && d->kind == "part")
				continue;
		}
		++total;
		if (shown == kNoticeRows)
			continue;
		const Charged *c = charged_aggregate(std::get<0>(key));
		if (!c)
			continue;
		char buf[96];
		if (row.method == "exponential_bound") // dx.mode/quantile/median: the utility interval only
			snprintf(buf, sizeof buf, " %s within %.4g rows", row.component.c_str(), row.half_width);
		else if (std::isnan(row.answer)) // an average withheld by post-processing
			snprintf(buf, sizeof buf, " = NULL");
		else
			snprintf(buf, sizeof buf, " = %.10g ± %.4g", row.answer, row.half_width);
		const std::string group = group_text(c->charge_id, std::get<1>(key));
		const std::string what = row.kind.empty()       ? aggregate_text(*c)
		                         : row.expression.empty() ? row.kind
		                                                  : row.kind + "(" + row.expression + ")";
		text += (text.empty() ? "" : "; ") + what + (group.empty() ? "" : " [" + group + "]") + buf;
		++shown;
	}
	for (const auto &[key, entry] : open_rows_of(current)) { // partitions kept by an open key's selection
		const Row &row = entry.second;
		if (row.component == "sum" || row.component == "count")
			continue;
		++total;
		const Charged *c = charged_aggregate(std::get<0>(key));
		if (shown == kNoticeRows || !c)
			continue;
		char buf[96];
		if (std::isnan(row.answer))
			snprintf(buf, sizeof buf, " = NULL");
		else
			snprintf(buf, sizeof buf, " = %.10g ± %.4g", row.answer, row.half_width);
		text += (text.empty() ? "" : "; ") + aggregate_text(*c) + " [" + std::get<1>(key) + "]" + buf;
		++shown;
	}
	if (total > shown)
		text += "; " + std::to_string(total - shown) + " more";
	return text;
}

} // namespace

// See release_log.h.
void
release_log_report(QueryDesc *qd)
{
	if (guc_show_error_bars && current.unreported && current.statement && current.statement->plan == qd->plannedstmt &&
	    !IsParallelWorker()) {
		current.unreported = false;
		std::string text;
		guarded([&] { text = notice_text(); });
		ereport(NOTICE, (errmsg("dxpriv 95%% error bars: %s", text.c_str()),
		                 errdetail("Details, free of charge: SELECT * FROM dx.last_release();")));
	}
}

// See release_log.h.
void
release_log_describe(const std::vector<int64> &charge_ids, std::vector<ReleaseDescription> descriptions,
                     std::vector<std::string> group_labels)
{
	auto d = std::make_shared<DescribedStatement>();
	d->charge_ids = charge_ids;
	d->aggregates = std::move(descriptions);
	d->group_labels = std::move(group_labels);
	if (d->aggregates.size() != d->charge_ids.size())
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv release descriptions do not match the aggregates");
	statement::describe(d->charge_ids, d);
}

// See release_log.h.
bool
release_log_described(int64 charge_id, std::vector<int64> &charge_ids, std::vector<ReleaseDescription> &descriptions,
                      std::vector<std::string> &group_labels)
{
	const auto found = statement::described(charge_id);
	if (!found.first)
		return false;
	const DescribedStatement &d = *found.first;
	charge_ids = d.charge_ids;
	descriptions = d.aggregates;
	group_labels = d.group_labels;
	return true;
}

// See release_log.h.
void
release_log_begin(const void *plan, const std::vector<NoiseParams> &aggregates, const std::vector<bool> &exponential,
                  bool reused)
{
	auto s = std::make_shared<LoggedStatement>();
	s->plan = plan;
	s->reused = reused;
	s->role = GetUserId();
	int cell = 0;
	for (size_t i = 0; i < aggregates.size(); ++i) { // in aggregate order, as the ledger's scales
		const NoiseParams &p = aggregates[i];
		s->aggregates.push_back(Charged{p.charge_id, p.agg_index, p.components, p.groups, p.family, p.epsilon, p.delta, cell,
		                                p.sets, p.alloc_epsilon, exponential[i]});
		cell += p.groups * p.components;
	}
	for (const Charged &c : s->aggregates) // a cursor FETCHed later finds its statement (release_log_record)
		statement::charge_state(c.charge_id).logged = s;
	std::vector<int64> ids; // consistent releases draw their noise anew (consistent_release.h)
	for (const NoiseParams &p : aggregates)
		ids.push_back(p.charge_id);
	consistent_charged(ids);
	current = Log();
	current.statement = s;
	pending.clear();
	open_verdict = 0;
}

// The charged entry of charge_id in the log being written, switching the log to the statement
// that charge belongs to (a cursor of an earlier statement: the log is now its); nullptr when no
// logged statement knows it.
static const Charged *
charged_in_log(int64 charge_id)
{
	const Charged *c = current.statement ? find_charged(*current.statement, charge_id) : nullptr;
	if (c)
		return c;
	const statement::ChargeState *st = statement::find_charge_state(charge_id);
	if (!st || !st->logged)
		return nullptr;
	current = Log();
	current.statement = st->logged;
	return find_charged(*current.statement, charge_id);
}

// The rows of one released answer of aggregate c (a value; an average, its sum and its count),
// passed to put(order, row).
template <typename Put>
static void
record_rows(const Charged &c, int group, int components, const LinearNoisePlan plans[2], double answer,
            const double *parts, Put put)
{
	const int first = c.first_cell + group * c.components + 1;
	if (components == 1) {
		put(0, Row{first, "value", answer, plans[0], confidence_half_width(plans[0]), false});
		return;
	}
	double half = std::nan(""); // unknown: the parts were not stored (an answer cached by an older version)
	try {
		if (parts)
			half = average_half_width(plans[0], plans[1], answer, parts[1]);
	} catch (const CoreError &) { // a non-finite part: no interval rather than a failed release
	}
	put(0, Row{0, "avg", answer, LinearNoisePlan{}, half, true});
	if (parts) {
		put(1, Row{first, "sum", parts[0], plans[0], confidence_half_width(plans[0]), false});
		put(2, Row{first + 1, "count", parts[1], plans[1], confidence_half_width(plans[1]), false});
	}
}

// See release_log.h.
void
release_log_record(int64 charge_id, int group, int components, const LinearNoisePlan plans[2], double answer,
                   const double *parts)
{
	if (IsParallelWorker())
		return; // final functions run in the leader; never record elsewhere
	if (answer_cache_excluded(charge_id)) { // grouped by an open key: held until the selection's verdict
		PendingCell p{charge_id, group, components, {plans[0], components == 2 ? plans[1] : plans[0]}, answer,
		              {parts ? parts[0] : 0.0, parts ? parts[1] : 0.0}, parts != nullptr};
		pending.push_back(p);
		return;
	}
	const Charged *c = charged_in_log(charge_id);
	if (!c || !current.recorded.insert({charge_id, group}).second)
		return;
	current.unreported = true;
	const int a = c->first_cell;
	record_rows(*c, group, components, plans, answer, parts,
	            [&](int order, const Row &row) { current.rows[{a, group, order}] = row; });
}

// See release_log.h.
void
release_log_open_verdict(bool kept)
{
	if (!IsParallelWorker())
		open_verdict = kept ? 1 : -1;
}

// See release_log.h.
void
release_log_open_cells(bool kept, const std::string &label)
{
	std::vector<PendingCell> cells;
	cells.swap(pending);
	const bool keep = kept && open_verdict == 1;
	open_verdict = 0;
	if (!keep || IsParallelWorker())
		return; // withheld: its cells are dropped, nothing of them stays
	bool labelled = false;
	for (const PendingCell &p : cells) {
		const Charged *c = charged_in_log(p.charge_id);
		if (!c)
			continue;
		if (!labelled) {
			current.open_labels.push_back(label);
			labelled = true;
		}
		current.unreported = true;
		current.open_kept.emplace_back(current.open_labels.size() - 1, *c, p);
	}
}

// The rows of the open partitions kept so far (release_log_open_cells), built from the cells not
// yet listed, in verdict order (what listing each partition at its verdict gave).
namespace {
const std::map<std::tuple<int, std::string, int>, std::pair<int, Row>> &
open_rows_of(Log &log)
{
	for (; log.open_built < log.open_kept.size(); ++log.open_built) {
		const auto &[index, c, p] = log.open_kept[log.open_built];
		const std::string &label = log.open_labels[index];
		std::string shown = label; // (two values printed alike, e.g. NULL and 'NULL', stay apart)
		for (int n = 2; log.open_rows.count({c.first_cell, shown, 0}); ++n)
			shown = label + " #" + std::to_string(n);
		record_rows(c, p.group, p.components, p.plans, p.answer, p.has_parts ? p.parts : nullptr,
		            [&](int order, const Row &row) { log.open_rows[{c.first_cell, shown, order}] = {p.group, row}; });
	}
	return log.open_rows;
}
} // namespace

// See release_log.h.
void
release_log_annotate(int64 charge_id, int group, const std::string &note, double half_width0, double half_width1)
{
	if (answer_cache_excluded(charge_id))
		return;
	const Charged *c = current.statement ? find_charged(*current.statement, charge_id) : nullptr;
	if (!c || IsParallelWorker())
		return;
	const double half[2] = {half_width0, half_width1};
	for (int order = 0; order < 3; ++order) {
		auto it = current.rows.find({c->first_cell, group, order});
		if (it == current.rows.end())
			continue;
		Row &row = it->second;
		if (order == 0)
			row.post = note;
		const int part = c->components == 1 ? 0 : order - 1; // avg: the sum and count rows
		if (part >= 0 && std::isfinite(half[part])) {
			row.half_width = half[part];
			row.projected = true;
		}
	}
}

// See release_log.h.
void
release_log_statistic(int64 charge_id, int group, int order, const std::string &kind, const std::string &expression,
                      double answer, double half_width, const std::string &note)
{
	if (IsParallelWorker() || !current.statement || !current.recorded.count({charge_id, group}))
		return; // only next to a part this statement released (a call written by hand adds nothing)
	const Charged *c = find_charged(*current.statement, charge_id);
	if (!c)
		return;
	Row row{0, kind, answer, LinearNoisePlan{}, half_width, true, note};
	row.kind = kind;
	row.expression = expression;
	current.rows[{c->first_cell, group, -100 + order}] = row;
}

// See release_log.h.
void
release_log_exponential(int64 charge_id, int group, const std::string &kind, const std::string &component,
                        double answer, double half_width, const std::string &method, double noise_scale)
{
	if (IsParallelWorker())
		return;
	const Charged *c = charged_in_log(charge_id);
	if (!c || !c->exponential || !current.recorded.insert({charge_id, group}).second)
		return;
	current.unreported = true;
	LinearNoisePlan plan;
	plan.scale = noise_scale;
	Row row{c->first_cell + group + 1, component, answer, plan, half_width, false};
	row.kind = kind;
	row.method = method;
	current.rows[{c->first_cell, group, 0}] = row;
}

// See release_log.h.
void
release_log_abandon_partitions()
{
	pending.clear();
	open_verdict = 0;
}

// See release_log.h.
void
release_log_end_transaction()
{
	release_log_abandon_partitions(); // (a statement failed between a partition's finals and its HAVING)
	// (which statement each charge id belongs to is in the statement context, reset with it)
	consistent_end_transaction(); // consistent_release.h
}

// See release_log.h.
void
release_log_define_gucs()
{
	DefineCustomBoolVariable("dxpriv.show_error_bars", "Reports the 95% error bars of released answers as a NOTICE.",
	                         "One NOTICE after each statement that released dx answers; dx.last_release() gives "
	                         "the same as rows. Costs no budget.",
	                         &guc_show_error_bars, false, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

} // namespace dxpriv::pg

using namespace dxpriv;
using namespace dxpriv::pg;

// dx.last_release() RETURNS TABLE(...): the releases of the session's last statement that released
// dx answers, with their noise and 95% intervals. Reads backend-local memory only; charges nothing.
DX_FUNCTION(dx_last_release)
{
	struct Out {
		int cell, aggregate;
		std::string kind, expression, group, component, noise, method, post;
		bool has_kind, has_expression;
		double answer, scale, half, epsilon, delta, release_epsilon;
		bool has_scale, has_half, reused;
	};
	std::vector<Out> out;
	// one row of the log: (first ledger cell, group) and, for a partition of an open key, its label
	auto emit = [&](int first_cell, int group, const std::string *label, const Row &row) {
			const Charged *c = charged_aggregate(first_cell);
			if (!c)
				return;
			const std::vector<std::string> *labels = nullptr;
			const ReleaseDescription *d = find_description(c->charge_id, &labels);
			Out o;
			o.cell = row.cell;
			o.aggregate = c->aggregate();
			o.has_kind = d || c->components == 2 || !row.kind.empty();
			o.kind = !row.kind.empty() ? row.kind : d ? d->kind : "avg";
			o.has_expression = d != nullptr || !row.expression.empty();
			o.expression = !row.kind.empty() ? row.expression : d ? d->expression : "";
			o.group = label ? *label : group_text(c->charge_id, group);
			o.component = row.component;
			o.answer = row.answer;
			o.noise = !c->exponential                  ? noise_family_name(static_cast<NoiseFamily>(c->family))
			          : row.method == "exponential_bound" ? "exponential"
			                                              : "laplace";
			o.has_scale = !row.delta_method && std::isfinite(row.plan.scale);
			o.scale = row.plan.scale;
			o.has_half = std::isfinite(row.half_width);
			o.half = row.half_width;
			o.method = !row.method.empty() ? row.method : row.projected ? "projected" : row.delta_method ? "delta_method" : "exact";
			o.post = row.post;
			o.epsilon = c->epsilon;
			o.delta = c->delta;
			o.release_epsilon = c->release_epsilon;
			o.reused = current.statement->reused;
			out.push_back(std::move(o));
	};
	if (current.statement) {
		for (const auto &[key, row] : current.rows)
			emit(std::get<0>(key), std::get<1>(key), nullptr, row);
		// the keys of an open release's partitions: to the role that ran it only (another role of the
		// same session, after SET ROLE, sees none of them)
		if (current.statement->role == GetUserId())
			for (const auto &[key, entry] : open_rows_of(current))
				emit(std::get<0>(key), entry.first, &std::get<1>(key), entry.second);
	}
	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		for (const Out &o : out) {
			Datum values[18];
			bool nulls[18] = {false};
			values[0] = Int32GetDatum(o.cell);
			nulls[0] = o.cell == 0;
			values[1] = Int32GetDatum(o.aggregate);
			values[2] = CStringGetTextDatum(o.kind.c_str());
			nulls[2] = !o.has_kind;
			values[3] = CStringGetTextDatum(o.expression.c_str());
			nulls[3] = !o.has_expression;
			values[4] = CStringGetTextDatum(o.group.c_str());
			nulls[4] = o.group.empty();
			values[5] = CStringGetTextDatum(o.component.c_str());
			values[6] = Float8GetDatum(o.answer);
			values[7] = CStringGetTextDatum(o.noise.c_str());
			values[8] = Float8GetDatum(o.scale);
			nulls[8] = !o.has_scale;
			values[9] = Float8GetDatum(o.half);
			values[10] = Float8GetDatum(o.answer - o.half);
			values[11] = Float8GetDatum(o.answer + o.half);
			nulls[9] = nulls[10] = nulls[11] = !o.has_half;
			values[12] = CStringGetTextDatum(o.method.c_str());
			values[13] = Float8GetDatum(o.epsilon);
			values[14] = Float8GetDatum(o.delta);
			values[15] = BoolGetDatum(o.reused);
			values[16] = Float8GetDatum(o.release_epsilon);
			values[17] = CStringGetTextDatum(o.post.c_str());
			nulls[17] = o.post.empty();
			nulls[6] = nulls[6] || std::isnan(o.answer); // an average withheld by post-processing
			nulls[10] = nulls[10] || std::isnan(o.answer);
			nulls[11] = nulls[11] || std::isnan(o.answer);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	});
	return (Datum) 0;
}

// dx._open_cells(kept boolean, names text[], key_values text[]) RETURNS boolean: placed by the
// analyzer in the HAVING of a release grouped by an open key (planner/open_release_log.h), after
// dx._partition_select's verdict on the partition: kept, the answers its final functions just
// released enter dx.last_release() labelled "name=value, ..."; otherwise they are dropped. Returns
// kept. Called by hand it can label nothing: only a partition the selection has just kept (and
// not yet labelled) has answers waiting.
DX_FUNCTION(dx_open_cells)
{
	const bool kept = !PG_ARGISNULL(0) && PG_GETARG_BOOL(0);
	std::string label;
	if (kept && !PG_ARGISNULL(1) && !PG_ARGISNULL(2)) {
		Datum *elems[2];
		bool *nulls[2];
		int n[2];
		pg_call([&] {
			for (int k = 0; k < 2; ++k)
				deconstruct_array(PG_GETARG_ARRAYTYPE_P(k + 1), TEXTOID, -1, false, TYPALIGN_INT, &elems[k], &nulls[k], &n[k]);
		});
		std::vector<std::string> names, values;
		std::vector<bool> null_values;
		for (int k = 0; k < 2; ++k)
			for (int i = 0; i < n[k]; ++i) {
				const char *v = nulls[k][i] ? "" : pg_value([&] { return text_to_cstring(DatumGetTextPP(elems[k][i])); });
				(k == 0 ? names : values).push_back(v);
				if (k == 1)
					null_values.push_back(nulls[k][i]);
			}
		for (size_t i = 0; i < names.size() && i < values.size(); ++i)
			label += (i ? ", " : "") + names[i] + "=" + (null_values[i] ? std::string("NULL") : values[i]);
	}
	release_log_open_cells(kept, label);
	PG_RETURN_BOOL(kept);
}
