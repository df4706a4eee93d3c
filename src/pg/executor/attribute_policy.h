// The attribute-privacy policies of a table (dx.attribute_policies), read for one queried column
// and parsed into the core's models: Gaussian (APGM), Bayesian network (Markov quilt) and binary
// conditional (Wasserstein). Used by attribute_release.cpp.
#pragma once

#include "pg/metadata/extension_objects.h"

#include "core/attribute_privacy.h"
#include "core/binary_conditional.h"
#include "core/markov_quilt.h"

#include <string>
#include <vector>

namespace dxpriv::pg {

enum class AttributeFamily { Gaussian, BayesianNetwork, BinaryConditional };

// One row of dx.attribute_policies.
struct SecretPolicy {
	std::string attribute;
	AttributeFamily family = AttributeFamily::Gaussian;
	double diameter = 0, epsilon = 0, delta = 0;
	ApgmCalibration calibration = ApgmCalibration::Analytic;
	bool record_privacy = true;
	std::vector<std::string> attributes; // the model's columns
	int secret_index = -1;               // position of `attribute` in attributes
	int column_index = -1;               // position of the queried column (-1: not in the model)
	// gaussian
	std::vector<Eigen::MatrixXd> covariances;
	double approximation_lambda = 0, approximation_eta = 0; // §6.5 (0, 0: the data are Gaussian)
	// bayesian_network: names = attributes; influences of quilts of secret_index (finite ones only:
	// an infinite max-influence makes its quilt unusable)
	AttributeNetwork network;
	QuiltInfluences influences;
	// binary_conditional: attributes = {released, protected}
	BinaryConditionalModel theta;
};

// The policies of relid in attribute order, with the positions of their secret and of `column`.
std::vector<SecretPolicy> load_secrets(const ExtensionObjects &ext, Oid relid, const std::string &column);

} // namespace dxpriv::pg
