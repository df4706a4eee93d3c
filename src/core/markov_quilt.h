// Attribute-private Markov quilt mechanism, APMQM (MECHANISMS.md §6.6; Algorithm 3, Theorem 4):
// distributional attribute privacy over a declared Bayesian network of attributes. F(X) +
// Lap(max_{i in C} b_i), b_i the best quilt bound of sensitive attribute i; (epsilon, 0)-private.
//
// Quilts are found, not declared: for each candidate set Q of attributes (all subsets, up to
// kMaxQuiltAttributes attributes), N is the connected component of X_i in the moral graph of the
// network with Q removed and R the rest. Separation in the moral graph implies d-separation, so
// X_R is independent of X_i given X_Q. A quilt is usable when its max-influence e_Theta(X_Q | X_i)
// is declared (the caller computes it from its parameter model, e.g. max_influence below) and is
// strictly below epsilon; the empty quilt has influence 0.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dxpriv {

constexpr int kMaxQuiltAttributes = 20;

// A Bayesian network over attributes 0..names.size()-1: directed edges parent -> child (acyclic).
struct AttributeNetwork {
	std::vector<std::string> names;
	std::vector<std::pair<int, int>> edges;
};

// Validates the network: 1..kMaxQuiltAttributes distinct non-empty names, edges between existing
// distinct attributes, no cycle. CoreError(InvalidParameter) with a hint otherwise.
void validate_network(const AttributeNetwork &net);

// Declared max-influences of quilts: for sensitive attribute i, quilt (sorted attribute indexes)
// -> e_Theta(X_Q | X_i) >= 0.
using QuiltInfluences = std::map<int, std::map<std::vector<int>, double>>;

// Delta_S F: the largest change of F when the columns in S change arbitrarily (S sorted; 0 for
// the empty set is enforced by the planner).
using ColumnSensitivity = std::function<double(const std::vector<int> &columns)>;

// The bound chosen for one sensitive attribute.
struct QuiltChoice {
	int attribute = -1;
	double scale = 0;           // b_i
	std::vector<int> quilt;     // X_Q of the best quilt (empty: trivial or empty quilt)
	std::vector<int> nearby;    // X_N (with i)
	double influence = 0;       // e_Theta(X_Q | X_i) of the best quilt
};

struct MarkovQuiltPlan {
	double scale = 0; // Laplace scale max_i b_i
	int binding = -1; // index into choices of the attribute that set the scale (-1 when scale == 0)
	std::vector<QuiltChoice> choices;
};

// Algorithm 3: for every sensitive attribute i, b_i = min(Delta_A F / epsilon, min over usable
// quilts of Delta_{A ∩ N} F / (epsilon - e)). sensitive and queried attribute indexes must exist;
// epsilon > 0 finite; declared influences finite >= 0; column sensitivities finite >= 0.
// CoreError(InvalidParameter) otherwise.
MarkovQuiltPlan plan_markov_quilt(const AttributeNetwork &net, const std::vector<int> &sensitive,
                                  const std::vector<int> &queried, const QuiltInfluences &influences,
                                  const ColumnSensitivity &sensitivity, double epsilon);

// The index of a declared attribute name (CoreError(InvalidParameter) naming it otherwise).
int network_attribute(const AttributeNetwork &net, const std::string &name);

// The members of a quilt written "<name>,<name>,..." (spaces around names ignored), sorted and
// distinct, none equal to `sensitive`. CoreError(InvalidParameter) with a hint otherwise.
std::vector<int> parse_quilt(const AttributeNetwork &net, const std::string &key, int sensitive);

// Delta_S F for the sum (sum = true) or the mean of one column `column` over n = records rows whose
// values lie in the declared [lo, hi]: when `column` is in S every row's value may move across the
// whole range, so the sum moves by at most records * (hi - lo) and the mean by (hi - lo); when it is
// not in S, F does not change (0). lo <= hi finite, records >= 1 finite; CoreError(InvalidParameter).
ColumnSensitivity single_column_sensitivity(int column, double lo, double hi, double records, bool sum);

// Delta_S F of a count of the rows that satisfy a condition on the attributes `queried` (their
// union A): when S meets A every row's condition may flip, so the count moves by at most `records`
// (MECHANISMS.md §6.6 [DERIVED]: Delta_{s} F = n); otherwise no row's condition changes (0). A
// count without condition (A empty) never moves. records >= 1 finite; CoreError(InvalidParameter).
ColumnSensitivity count_sensitivity(const std::vector<int> &queried, double records);

// Definition 8 on a finite parameter model: table[a][k] = P(phi_A = k | phi_i = a) for every value
// a of phi_i (rows are laws); returns max over a, b, k of ln(table[a][k] / table[b][k]) (+inf
// when some k has mass under a but not under b). At least two rows of equal non-zero length.
double max_influence(const std::vector<std::vector<double>> &table);

} // namespace dxpriv
