// The benchmark guard: builds a solution, runs it in an isolated worker, checks correctness
// against the oracle in this (the parent) process, times it, and returns one Trace per workload.
//
// Deterministic: the same problem, solution binary, options and seed give the same draws; only
// the twin audit's position among the timed calls comes from the system's entropy, so that no
// candidate can predict it (an honest candidate's verdict does not depend on it).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/calibrate.h"
#include "backend/cpu/cpu_compiler.h"
#include "core/problem.h"
#include "eval/trace.h"
#include "oracle/oracle.h"

namespace kernelarc {

struct GuardOptions {
  std::string device = "cpu";                      ///< "cpu" or "cuda:N"
  std::filesystem::path workspace = ".kernelarc";  ///< build cache, calibration
  int correctness_trials = 10;  ///< fresh input draws per workload (SOL-ExecBench: 10)
  /// Untimed calls before timing, requests like the timed ones on fresh draws, checked: one
  /// loads the kernel and warms the device's instruction caches.
  int warmup = 1;
  int iterations = 50;  ///< timed calls at most (and at most timing_draws)
  /// Fresh oracle draws for the timed calls: each timed call runs on one draw no call saw before.
  /// At least min_iterations.
  int timing_draws = 10;
  /// Timed calls whose outputs are checked against their draw's expected ones: 0 for every one;
  /// k for k of them at positions drawn from the system's entropy, which the worker never sees
  /// (an unchecked call is staged and run exactly like a checked one, and only then left
  /// uncollected). Every timed call is a sample, so a candidate that skips its work in enough
  /// calls to move the median is caught with probability 1 - 2^-k per workload. For screening
  /// during a search; the finalists' re-measurement checks every call.
  int checked_timed_calls = 0;
  /// Timed calls at least, whatever the budget; a smaller `iterations` wins (a quick search).
  int min_iterations = 10;
  double timing_budget_s = 2.0;  ///< per workload; caps iterations for slow kernels
  uint64_t seed = 200;
  std::chrono::milliseconds call_timeout{10'000};          ///< one call longer than this is a hang
  std::size_t memory_limit_bytes = std::size_t{16} << 30;  ///< worker RLIMIT_AS (CPU)
  /// The kernelarc executable that hosts workers; empty = this process's.
  std::filesystem::path worker_executable;
  /// The cores the worker runs on (WorkerOptions::cpus); empty = all of this process's.
  std::vector<int> cpus;
  CpuCompileOptions cpu_compile;
  /// The Python that builds and hosts `binding: torch` solutions; empty = the oracle's detection.
  std::string python;
  bool time_baselines = true;  ///< time the PyTorch reference (eager; compiled on CUDA)
  /// A median below sol_margin x T_SOL is rejected as impossible (the margin absorbs the error
  /// of the calibrated ceilings).
  double sol_margin = 0.8;
  /// Without a calibration in the workspace, measure the device first (and save it there), so
  /// that the speed-of-light floor always applies; false leaves such a workspace without a floor
  /// (every trace then says so), for tests that measure nothing against it.
  bool auto_calibrate = true;
};

class Guard {
 public:
  Guard(GuardOptions options, Oracle& oracle);
  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  /// Evaluates `solution` on `workloads` (all of the problem's when empty). A failing candidate
  /// gives failing traces, never an exception; InputError only for unusable input (a solution
  /// for another definition, an unsupported language for the device).
  std::vector<Trace> evaluate(const Problem& problem, const Solution& solution,
                              std::span<const Workload> workloads = {});

  /// Learns the device's architecture (starting the worker when needed), so that prebuild()
  /// may then run on other threads while this one evaluates.
  void prepare_builds();
  /// The architecture the builds target (CudaCompileOptions::device_arch; empty on the CPU and
  /// before prepare_builds()), for a caller that builds a solution as the guard does.
  const std::string& device_arch() const;
  /// Compiles the solution into the build cache exactly as evaluate() would, without running
  /// it; true when it compiled (a failure is left for evaluate() to report). Thread-safe after
  /// prepare_builds(): a search compiles its next candidates while the device measures.
  bool prebuild(const Definition& definition, const Solution& solution) const;

  const GuardOptions& options() const { return options_; }

  /// The calibration the speed-of-light floor uses: the workspace's, or, where it has none and
  /// auto_calibrate is set, one measured now and saved there (calibrate_automatically.h). Callers
  /// that quote the hardware (prompts, fitness, SOL scores) ask here first, so that the first run
  /// in a fresh workspace sees the same calibration as every later one.
  const std::optional<Calibration>& calibration();

 private:
  /// Median of a PyTorch baseline in ms; notes how it was measured (or why not) in the trace.
  std::optional<double> baseline_median(const Problem& problem, const Workload& workload,
                                        Baseline baseline, Trace& trace);

  struct Impl;
  GuardOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kernelarc
