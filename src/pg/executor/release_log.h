// The error bars of what a session just received (dx.last_release, dxpriv.show_error_bars).
//
// Backend-local. The log itself (the last statement that released answers) lives here; what is
// looked up by charge id (descriptions, the statement a charge id belongs to) lives in the statement
// context. The analyzer describes each linear dx aggregate it rewrites (kind, argument text,
// group labels) under its charge id; charging (or replaying from the answer cache) starts a new
// statement in the log; the final functions record every answer they release with its noise law.
// dx.last_release() lists the releases of the last statement that released answers; nothing is
// charged and nothing but the session's own releases is ever visible.
#pragma once

#include "pg/contract/noise_params.h"

extern "C" {
#include "executor/execdesc.h"
}

#include "core/linear_query.h"

#include <string>
#include <vector>

namespace dxpriv::pg {

struct NoiseParams;

extern bool guc_show_error_bars; // dxpriv.show_error_bars: a NOTICE with the error bars after each release

// What one linear aggregate of an analysed statement computes (registered at analysis).
struct ReleaseDescription {
	int aggregate = 0;       // 1-based position among the statement's dx aggregates
	std::string kind;        // count, sum, avg, linear
	std::string expression;  // deparsed argument ("*" for count(*)), at most 200 bytes
};

// Registers the descriptions of one analysed statement (same order as charge_ids, one per aggregate)
// and the labels of its groups (empty: no GROUP BY). Keeps the last statements only (bounded).
void release_log_describe(const std::vector<int64> &charge_ids, std::vector<ReleaseDescription> descriptions,
                          std::vector<std::string> group_labels);
// The registration that holds charge_id (its ids, descriptions and labels); false when none is kept.
bool release_log_described(int64 charge_id, std::vector<int64> &charge_ids, std::vector<ReleaseDescription> &descriptions,
                           std::vector<std::string> &group_labels);

// A statement with dx aggregates was charged (reused = its answers come from the answer cache):
// the log now belongs to it and is emptied. aggregates in aggregate order (the ledger's cells);
// exponential[i] marks dx.mode/quantile/median, whose releases are not logged.
// plan identifies the statement (its PlannedStmt): its ExecutorEnd emits the NOTICE.
void release_log_begin(const void *plan, const std::vector<NoiseParams> &aggregates, const std::vector<bool> &exponential,
                       bool reused);

// A final function released `answer` for (charge_id, group); parts holds avg's noisy sum and count
// (nullptr otherwise). Recording the same (charge_id, group) twice keeps the first.
void release_log_record(int64 charge_id, int group, int components, const LinearNoisePlan plans[2], double answer,
                        const double *parts);

// A release grouped by an open key (planner/open_keys.h): release_log_record holds the answers of
// its charge ids, released for every partition before the selection, without key values. The
// selection's final function gives its verdict on the partition (release_log_open_verdict); the
// HAVING of the release then calls dx._open_cells, which calls release_log_open_cells: when kept
// is true and the last verdict was "kept", the held answers enter the log under label (the
// partition's "name=value, ..."); in every case the held answers are dropped and the verdict
// consumed. dx.last_release() lists open partitions sorted by label, never a withheld one.
void release_log_open_verdict(bool kept);
void release_log_open_cells(bool kept, const std::string &label);
// Drops held answers and the verdict: a statement failed between a partition's final functions and
// its HAVING (subtransaction abort, transaction end), so that no later partition's label (a cursor
// opened before a savepoint) ever takes them.
void release_log_abandon_partitions();

// Notes what free post-processing did to the answer of (charge_id, group), recorded just before
// (dx.last_release's `postprocessing`), and for a consistent release the 95% half-widths of its
// projected cells (component 0 and 1; NaN: unchanged, interval_method `projected` otherwise).
void release_log_annotate(int64 charge_id, int group, const std::string &note, double half_width0, double half_width1);

// A statistic computed from parts this statement released (stddev, corr, ...: executor dispersion):
// one row of dx.last_release next to the part (charge_id, group) already recorded, with kind and
// expression (the statistic's name and arguments), its answer (NaN: NULL), its delta-method
// half-width and what post-processing did. order tells apart statistics sharing that part. Does
// nothing when that part was not recorded by the log's statement.
void release_log_statistic(int64 charge_id, int group, int order, const std::string &kind, const std::string &expression,
                           double answer, double half_width, const std::string &note);

// What an exponential-mechanism aggregate of the log's statement released for (charge_id, group):
// kind (mode, quantile, count_distinct), component, answer (NaN: NULL, e.g. a mode's value, which
// the log does not hold), its 95% half-width, interval_method ("exponential_bound": Theorem 4's
// utility-loss bound in rows; "exact": count_distinct's Laplace law) and noise scale (NaN: none).
// Recording the same (charge_id, group) twice keeps the first.
void release_log_exponential(int64 charge_id, int group, const std::string &kind, const std::string &component,
                             double answer, double half_width, const std::string &method, double noise_scale);

// Transaction end: the consistent releases' state (consistent_release.h). Which charged statement
// each charge id belongs to and the descriptions are kept in the statement context
// (statement/statement_context.h: ChargeState::logged, freed at transaction end; describe/described,
// the last kMaxDescribedStatements analysed statements).
void release_log_end_transaction();

// Stage "release" (ExecutorEnd, first): after a statement that released answers, one NOTICE with
// their error bars when dxpriv.show_error_bars is on. Nothing else; the log itself is kept.
void release_log_report(QueryDesc *qd);

// Defines dxpriv.show_error_bars (called once from _PG_init through hooks.cpp).
void release_log_define_gucs();

} // namespace dxpriv::pg
