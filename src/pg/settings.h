// dxpriv's settings (GUC variables): defined and registered in dxpriv.cpp (_PG_init), read everywhere.
#pragma once

extern "C" {
#include "postgres.h"
}

namespace dxpriv::pg {

extern double guc_epsilon;   // dxpriv.epsilon: default epsilon of a dx aggregate
extern int guc_test_seed;    // dxpriv.test_seed: superuser-only; -1 = secure randomness
extern int guc_allocation;   // dxpriv.allocation: 0 relative, 1 min_total_variance (alias optimal),
                             // 2 algorithm3, 3 equal_scale, 4 equal_split
extern int guc_top_k;        // dxpriv.top_k: 0 noisy, 1 exponential (planner/top_k_rewrite.h)
extern int guc_noise;        // dxpriv.noise: 0 laplace, 1 gaussian, 2 truncated_laplace (core NoiseFamily order)
extern int guc_partition_selection; // dxpriv.partition_selection: 0 optimal, 1 laplace (open GROUP BY keys)
extern int guc_analysis_time_limit;   // dxpriv.analysis_time_limit (ms): one evaluation pass over the domain points
extern int guc_analysis_memory_limit; // dxpriv.analysis_memory_limit (kB): memory of one point's evaluation
extern int guc_unit_bounding;         // dxpriv.unit_bounding: superuser-only; 0 hash, 1 sort (planner/unit_source.h)
extern bool guc_exhaustive_analysis;  // dxpriv.exhaustive_analysis: superuser-only; true evaluates every point (no closed forms)
extern bool guc_key_columns_in_source; // dxpriv.keys_in_scan: superuser-only; false computes GROUP BY keys above the row source
extern bool guc_unit_profiles;         // dxpriv.unit_profiles: superuser-only; bound units through cached profiles (executor/unit_profile.h)
extern int guc_unit_profile_memory;    // dxpriv.unit_profile_memory (kB, postmaster)
extern int guc_unit_profile_build_memory; // dxpriv.unit_profile_build_memory (kB, superusers): one profile build's arrays
extern int guc_unit_profile_max_size;     // dxpriv.unit_profile_max_size (kB, superusers): the largest unit profile (executor/unit_profile.h)
extern bool guc_unit_rank_reference;  // dxpriv.unit_rank_reference: superuser-only; true ranks with the generic SipHash (executor/unit_rank.cpp)
extern bool guc_one_pass;             // dxpriv.one_pass: superuser-only; false plans one lookup and transition per aggregate
extern bool guc_test_skip_stand_in_restore; // dxpriv.test_skip_stand_in_restore: superuser-only, tests only (planner/large_const_stand_ins.h)
extern bool guc_citus_grouped_stage;  // dxpriv.citus_grouped_stage: superuser-only; false reads a Citus GROUP BY's sums through a subplan (planner/distributed_stage.h)
extern bool guc_group_fold;           // dxpriv.group_fold: superuser-only; false groups a one-pass GROUP BY row by row (planner/group_fold.h)

} // namespace dxpriv::pg
