// The problem and the oracle's draws as bundles: a manifest (relative path -> content hash),
// itself a blob, so that a job names each by one hash and a worker fetches only the files it
// lacks. The candidate's process never sees a bundle: the worker's guard reads the expected
// outputs in its parent process, as on the orchestrator's host (docs/SECURITY.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/problem.h"
#include "distributed/blob_exchange.h"
#include "oracle/oracle.h"

namespace kernelarc {

/// Every file under the problem's directory, plus what recognition added to its definition
/// (op_family, op_params, bytes, flops: the speed-of-light bound needs them, and a worker
/// cannot trace the reference without PyTorch). Returns the bundle's hash.
std::string publish_problem(BlobExchange& blobs, const Problem& problem);
/// The problem of a bundle, its files written once under `root`/<hash>.
Problem materialize_problem(BlobExchange& blobs, const std::string& hash,
                            const std::filesystem::path& root);

/// The oracle cache of a workspace, as app/guard_session.cpp lays it out.
std::filesystem::path oracle_cache_dir(const std::filesystem::path& workspace);

/// Makes the draws a search guard reads (trials [0, trials) and the twin of trial 0 of each of
/// `workloads`) where missing, then bundles every draw `cache_dir` holds for the problem: the
/// cache keys are the oracle's own, so the bundle may carry draws of other workloads or of more
/// trials that this workspace made before; a worker fetches each file once. Returns the
/// bundle's hash.
std::string publish_oracle_draws(BlobExchange& blobs, Oracle& oracle, const Problem& problem,
                                 const std::vector<Workload>& workloads, int trials,
                                 const std::filesystem::path& cache_dir);
/// Writes a bundle's draws into an oracle cache directory (files already there are kept), so
/// that the worker's oracle serves them without running the reference.
void install_oracle_draws(BlobExchange& blobs, const std::string& hash,
                          const std::filesystem::path& cache_dir);

}  // namespace kernelarc
