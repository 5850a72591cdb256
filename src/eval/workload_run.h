// Evaluates one loaded solution on one workload: correctness trials, then the timed loop with
// its hidden audit run. Used by the Guard; separate so each step reads as a list.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/worker.h"
#include "core/problem.h"
#include "eval/arena_layout.h"
#include "eval/guard.h"
#include "eval/phase_timer.h"
#include "eval/trace.h"
#include "oracle/oracle.h"

namespace kernelarc {

/// solution.ext["workspace_bytes"] at these axes: an integer or an expression over the axes; 0
/// when absent. InputError naming the solution file otherwise.
std::size_t workspace_bytes_for(const Solution& solution, const AxisValues& axes);

class WorkloadRun {
 public:
  WorkloadRun(const GuardOptions& options, const Problem& problem, const Workload& workload,
              const Solution& solution, Oracle& oracle, Worker& worker, Trace& trace);

  /// Runs every correctness trial; false (with the trace's status and log set) on the first
  /// failure.
  bool check_correctness();
  /// Times the solution with an audit run at a point chosen from the seed; false (with status
  /// and log set) when the audit output is wrong, the launches vary or threads were started.
  bool measure();

 private:
  ExecuteRequest make_request(int poison_variant) const;
  /// Sets status/log for a worker outcome other than Ok; returns false then.
  bool accept_outcome(const ExecuteResult& result, const std::string& during);
  /// Compares the arena's outputs with the expected ones; sets status/log on failure.
  bool check_outputs(const TensorMap& expected, int poison_variant, const std::string& during);
  /// Timed calls on the inputs in the arena; an audited chunk (one call) is neither perturbed
  /// nor left in place: its outputs and inputs are copied back to be checked.
  ExecuteResult run_chunk(int warmup, int iterations, bool audited);
  /// One timed call on trial `trial`'s inputs, its outputs checked against that trial's.
  bool audit(int trial, const std::string& during, ExecuteResult& result);
  /// Draws trial `trial`'s inputs from the oracle and writes them into the arena.
  std::shared_ptr<const TensorMap> write_trial_inputs(int trial);
  /// One worker request, its time and the host link's share of it added to the trace.
  ExecuteResult execute(const ExecuteRequest& request);
  /// Runs `step`, adding its wall time to the trace's guard_seconds/parts/<part>: "inputs",
  /// "worker" (with "host_link", the worker's copies, inside it) and "checks".
  template <class Step>
  auto in_part(const char* part, Step&& step) {
    const PhaseTimer timer(trace_.extra, std::string("parts/") + part);
    return step();
  }

  const GuardOptions& options_;
  const Problem& problem_;
  const Workload& workload_;
  Oracle& oracle_;
  Worker& worker_;
  Trace& trace_;
  ArenaLayout layout_;
  std::size_t workspace_bytes_ = 0;
  uint64_t stream_seed_ = 0;
};

}  // namespace kernelarc
