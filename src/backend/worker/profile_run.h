// `kernelarc profile-run`: one candidate called a few times, for Nsight Compute to profile.
//
// The guard's worker is not the process to profile: it is started by the guard with a pipe
// protocol, and times with CUPTI activity tracing, which conflicts with ncu's own collection.
// So ncu launches this process instead. It loads the candidate as the worker does (a library's
// entry point, or a launch plan and its cubin), reads one workload's inputs from a file laid out as
// the worker's arena, and runs the request through the worker's own execute loop (execute_request:
// fresh device buffers, poisoned outputs, guard bytes), untimed; then it exits. What differs from
// the worker:
// - the CUDA device is made without CUPTI activity tracing;
// - the sandbox is the worker's (no programs or processes started, no sockets but local ones,
//   the workspace hidden) with two more places to write: the scratch directory is also ncu's
//   TMPDIR, and /dev/shm is writable, where ncu's injected library shares memory with ncu;
// - no integrity fingerprints: nothing it measures counts for the score (the candidate passed
//   the guard first), and ncu's injected code runs inside it;
// - its own and the candidate's output go to a log file, not to ncu's stdout, so that the only
//   metrics table there is ncu's: a candidate cannot print a table of its own.
#pragma once

#include <filesystem>
#include <string>

#include "backend/worker/worker_sandbox.h"

namespace kernelarc {

struct ProfileRunOptions {
  std::string device = "cuda:0";  ///< "cuda:N" ("cpu" runs too, for tests)
  std::filesystem::path library;  ///< a compiled library or a launch plan
  std::string symbol;             ///< the entry point of a library
  std::filesystem::path request;  ///< request_to_json() of the calls to make
  std::filesystem::path arena;    ///< the inputs, at the request's offsets
  std::filesystem::path log;      ///< receives this process's stdout and stderr
  SandboxOptions sandbox;
};

/// Runs the calls; 0 when all returned Ok, else 1 with the reason in the log (2 when the log
/// cannot be opened, with the reason on stderr).
int profile_run_main(const ProfileRunOptions& options);

}  // namespace kernelarc
