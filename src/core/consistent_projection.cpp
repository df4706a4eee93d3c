// Weighted least-squares projection of grouping-set cells onto consistent totals (consistent_projection.h).
#include "core/consistent_projection.h"

#include "core/error.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <map>

namespace dxpriv {

// See consistent_projection.h.
bool
consistent_system_from_weights(const std::vector<const std::vector<double> *> &q, ConsistentSystem &out)
{
	out = ConsistentSystem{};
	out.cells = q.size();
	if (q.empty())
		return true;
	const std::size_t points = q.front()->size();
	for (const auto *c : q)
		if (!c || c->size() != points)
			throw CoreError(ErrorKind::Internal, "consistent projection cells have different point counts");
	std::map<std::vector<std::size_t>, std::size_t> seen;
	std::vector<std::size_t> pattern;
	for (std::size_t p = 0; p < points; ++p) {
		pattern.clear();
		double w = 0;
		for (std::size_t k = 0; k < q.size(); ++k) {
			const double v = (*q[k])[p];
			if (v == 0)
				continue;
			if (!pattern.empty() && v != w)
				return false;
			w = v;
			pattern.push_back(k);
		}
		if (!pattern.empty() && seen.emplace(pattern, out.atoms.size()).second)
			out.atoms.push_back(pattern);
	}
	return true;
}

// See consistent_projection.h.
ConsistentProjection::ConsistentProjection(const ConsistentSystem &system, const std::vector<double> &variances)
    : system_(system)
{
	const std::size_t n = system.atoms.size();
	if (variances.size() != system.cells || n == 0 || n > kMaxConsistentAtoms)
		return;
	weights_.resize(system.cells);
	for (std::size_t k = 0; k < system.cells; ++k) {
		if (!(variances[k] > 0) || !std::isfinite(variances[k]))
			return;
		weights_[k] = 1.0 / variances[k];
	}
	// M = AᵀWA: M_ab = Σ over cells in both atoms of w_k
	std::vector<std::vector<std::size_t>> atoms_of_cell(system.cells);
	for (std::size_t a = 0; a < n; ++a)
		for (std::size_t k : system.atoms[a]) {
			if (k >= system.cells)
				throw CoreError(ErrorKind::Internal, "consistent projection atom names an unknown cell");
			atoms_of_cell[k].push_back(a);
		}
	Eigen::MatrixXd m = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(n));
	for (std::size_t k = 0; k < system.cells; ++k)
		for (std::size_t a : atoms_of_cell[k])
			for (std::size_t b : atoms_of_cell[k])
				m(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) += weights_[k];
	Eigen::LDLT<Eigen::MatrixXd> ldlt(m);
	if (ldlt.info() != Eigen::Success)
		return;
	const Eigen::VectorXd d = ldlt.vectorD();
	const double dmax = d.cwiseAbs().maxCoeff();
	if (!(d.minCoeff() > 1e-10 * dmax)) // dependent atoms: A has no full column rank
		return;
	const Eigen::MatrixXd inv = ldlt.solve(Eigen::MatrixXd::Identity(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(n)));
	inverse_.assign(inv.data(), inv.data() + n * n); // symmetric: row- and column-major agree
	projected_variances_.assign(system.cells, 0.0);
	for (std::size_t k = 0; k < system.cells; ++k) {
		double v = 0;
		for (std::size_t a : atoms_of_cell[k])
			for (std::size_t b : atoms_of_cell[k])
				v += inverse_[a * n + b];
		projected_variances_[k] = v;
	}
	usable_ = true;
}

// See consistent_projection.h.
std::vector<double>
ConsistentProjection::atom_estimate(const std::vector<double> &y) const
{
	if (!usable_ || y.size() != system_.cells)
		throw CoreError(ErrorKind::Internal, "consistent projection used without a usable system");
	const std::size_t n = system_.atoms.size();
	std::vector<double> rhs(n, 0.0); // AᵀW y
	for (std::size_t a = 0; a < n; ++a)
		for (std::size_t k : system_.atoms[a])
			rhs[a] += weights_[k] * y[k];
	std::vector<double> u(n, 0.0);
	for (std::size_t a = 0; a < n; ++a) {
		double s = 0;
		for (std::size_t b = 0; b < n; ++b)
			s += inverse_[a * n + b] * rhs[b];
		u[a] = s;
	}
	return u;
}

// See consistent_projection.h.
std::vector<double>
ConsistentProjection::cells_of_atoms(const std::vector<double> &u) const
{
	if (u.size() != system_.atoms.size())
		throw CoreError(ErrorKind::Internal, "consistent projection atom vector has the wrong size");
	std::vector<double> y(system_.cells, 0.0);
	for (std::size_t a = 0; a < u.size(); ++a)
		for (std::size_t k : system_.atoms[a])
			y[k] += u[a];
	return y;
}

// See consistent_projection.h.
std::vector<double>
consistent_noise_units(const ConsistentProjection &projection, const std::vector<double> &z)
{
	std::vector<double> u = projection.atom_estimate(z);
	for (double &v : u)
		v = std::floor(v + 0.5);
	return projection.cells_of_atoms(u);
}

} // namespace dxpriv
