// Evaluates one loaded solution on one workload: correctness trials, then the timed calls, every
// one of them on a fresh oracle draw and checked. Used by the Guard; separate so each step reads
// as a list.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <span>
#include <string>

#include "backend/worker/worker.h"
#include "core/problem.h"
#include "eval/arena_layout.h"
#include "eval/guard.h"
#include "eval/phase_timer.h"
#include "eval/timing_bounds.h"
#include "eval/trace.h"
#include "oracle/oracle.h"

namespace kernelarc {

/// solution.ext["workspace_bytes"] at these axes: an integer or an expression over the axes; 0
/// when absent. InputError naming the solution file otherwise.
std::size_t workspace_bytes_for(const Solution& solution, const AxisValues& axes);

/// The guard's request for one call on `layout`: its tensors, the outputs' poison
/// (`poison_variant`), `workspace_bytes`; one call, the cache flushed, results copied back. The
/// guard's calls, its null calls and the profiler's calls are all made from it.
ExecuteRequest call_request(const ArenaLayout& layout, std::size_t workspace_bytes,
                            int poison_variant);

/// What every call of a solution on a workload shares, whoever makes it: the arena's layout at
/// the workload's axes and the solution's workspace. The guard's calls (WorkloadRun) and the
/// profiled call (diagnosis/ncu_runner.h) are made from it with call_request() and
/// write_oracle_inputs().
struct CallShape {
  ArenaLayout layout;
  std::size_t workspace_bytes = 0;
};
CallShape call_shape(const Definition& definition, const Workload& workload,
                     const Solution& solution);

/// Trial `trial`'s oracle draw of the workload's inputs, written into `arena` at `layout`'s
/// offsets; the draw itself is returned for the checks.
std::shared_ptr<const TrialInputs> write_oracle_inputs(std::span<std::byte> arena,
                                                       const ArenaLayout& layout,
                                                       const Problem& problem,
                                                       const Workload& workload, Oracle& oracle,
                                                       int trial);

/// The most timed calls per workload: `iterations`, but no more than there are timing draws
/// (`timing_draws`, at least `min_iterations`), and at least 3. An explicit small `iterations`
/// (a quick search) thus also means few draws to prepare.
int most_timed_calls(const GuardOptions& options);
/// Oracle draws per workload that the guard needs: the correctness trials, then the timing
/// draws (the warm-ups and most_timed_calls()).
int timing_draw_count(const GuardOptions& options);
int oracle_trials_needed(const GuardOptions& options);

/// What a timed request of this workload's shape costs around the call: requests exactly like
/// the timed ones, with the worker's null kernel. Run it on a worker that has loaded no
/// candidate, whose code could otherwise slow these requests down to hide its work in them.
RequestOverhead measure_request_overhead(Worker& worker, const Problem& problem,
                                         const Workload& workload);

class WorkloadRun {
 public:
  WorkloadRun(const GuardOptions& options, const Problem& problem, const Workload& workload,
              const Solution& solution, Oracle& oracle, Worker& worker, Trace& trace);

  /// Runs every correctness trial; false (with the trace's status and log set) on the first
  /// failure.
  bool check_correctness();
  /// Times the solution: warm-up calls and then the timed calls, each one request on a fresh
  /// draw whose outputs and inputs are checked, the twin audit among them at a position nobody
  /// can predict;
  /// then bounds the reported times with `overhead` and the parent's own observations. False
  /// (with status and log set) on a wrong output, a bound broken, launches that vary or threads
  /// that outlive the calls.
  bool measure(const RequestOverhead& overhead);

 private:
  /// A call's request: every call alike, at the next address slot (next_address_slot()).
  ExecuteRequest make_request(int poison_variant);
  /// The planned slot, else one drawn from the system's entropy: a cache keyed on the address
  /// meets an earlier address with other contents, and the worker cannot predict which.
  int next_address_slot();
  /// Plans the slots of the next `calls` calls with at least one address repeated.
  void plan_address_slots(int calls);
  /// Which of the timed calls' `positions` are checked: all, or GuardOptions::
  /// checked_timed_calls of them drawn in secret; the twin's position (`twin_at`, -1 for none)
  /// always is.
  std::vector<bool> checked_positions(int positions, int twin_at);
  /// Sets status/log for a worker outcome other than Ok; returns false then.
  bool accept_outcome(const ExecuteResult& result, const std::string& during);
  /// Compares the arena's outputs with the expected ones; sets status/log on failure.
  bool check_outputs(const TensorMap& expected, int poison_variant, const std::string& during);
  /// The checks after a call: inputs unchanged, outputs as expected.
  bool check_call(const TrialInputs& inputs, int trial, int poison_variant,
                  const std::string& during);
  /// One request like every timed call on trial `trial`'s draw, then check_call() and a check
  /// that the outputs did not change after the reply; false with status and log set.
  bool run_checked(int trial, int poison_variant, const std::string& during, ExecuteResult& result);
  /// Draws trial `trial`'s inputs from the oracle and writes them into the arena.
  std::shared_ptr<const TrialInputs> write_trial_inputs(int trial);
  /// A call on trial `trial`'s draw, run like every other but neither collected nor checked
  /// (GuardOptions::checked_timed_calls); false with status and log set when it failed.
  bool run_unchecked(int trial, int poison_variant, const std::string& during,
                     ExecuteResult& result);
  /// One call (staged_call.h), its time and the host link's share of it added to the trace.
  ExecuteResult execute(const ExecuteRequest& request, bool collect = true);
  /// A hash of the outputs' bytes in the arena.
  uint64_t output_hash();
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
  /// Seeded from the system's entropy: the address slots, the twin's position and the checked
  /// calls, none of which the worker can predict.
  std::mt19937_64 secret_draws_;
  std::deque<int> planned_slots_;
};

}  // namespace kernelarc
