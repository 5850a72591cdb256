// `kernelarc profile-run`: one candidate called a few times, for Nsight Compute to profile.
//
// Everything of a call is the guard's: the parent builds the solution as the guard does, lays
// trial 0's draw out as the worker's arena and writes the guard's request (eval/workload_run.h:
// call_shape, call_request, write_oracle_inputs); this process loads the candidate as the worker
// does (load_entry_point: a library's entry point, or a launch plan and its cubin) and makes each
// call as the guard makes its calls, Stage, Run and Collect (staged_call.h), through the
// worker's own execute loop (execute_request: fresh device buffers, poisoned outputs, guard
// bytes); then it exits.
//
// Only the process is not the guard's worker, because ncu must launch the process it profiles
// (it injects its library as the process starts, and reports on its own stdout):
// - the worker is spawned by the guard's Worker, which owns its process group, socket pair,
//   arena descriptor and /proc accounting; under ncu, the process it spawned would be ncu;
// - the worker times with CUPTI activity tracing, which conflicts with ncu's own collection, so
//   the CUDA device here is made without it;
// - the worker checks its integrity fingerprints at every Collect, and ncu's injected code runs
//   inside the profiled process, so here there are none: nothing it measures counts for the
//   score (the candidate passed the guard first);
// - the worker's stdout is its log, where the candidate may print: here the candidate's output
//   and this process's go to a log file, not to ncu's stdout, so that the only metrics table
//   there is ncu's, and a candidate cannot print a table of its own;
// - the sandbox is the worker's (no programs or processes started, no sockets but local ones,
//   the workspace hidden) with two more places to write: the scratch directory is also ncu's
//   TMPDIR, and /dev/shm is writable, where ncu's injected library shares memory with ncu.
#pragma once

#include <filesystem>
#include <string>

#include "backend/worker/worker_sandbox.h"

namespace kernelarc {

struct ProfileRunOptions {
  std::string device = "cuda:0";  ///< "cuda:N" ("cpu" runs too, for tests)
  std::filesystem::path library;  ///< a compiled library or a launch plan
  std::string symbol;             ///< the entry point of a library
  /// request_to_json() of the guard's request for one call; warmup + iterations calls are made
  std::filesystem::path request;
  std::filesystem::path arena;  ///< the inputs, at the request's offsets
  std::filesystem::path log;    ///< receives this process's stdout and stderr
  SandboxOptions sandbox;
};

/// Runs the calls; 0 when all returned Ok, else 1 with the reason in the log (2 when the log
/// cannot be opened, with the reason on stderr).
int profile_run_main(const ProfileRunOptions& options);

}  // namespace kernelarc
