// How the orchestrator measures a candidate: through the guard on the selected workloads, or
// through any other implementation (the tests use a deterministic stand-in). The search never
// sees expected outputs or timings other than what an evaluator returns.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "backend/calibrate.h"
#include "core/problem.h"
#include "eval/guard.h"

namespace kernelarc {

/// Any call may throw Interrupted when a stop request cut its work short (the reference's
/// draws, on a guard whose oracle has the stop flag): the orchestrator then stops the run.
class CandidateEvaluator {
 public:
  virtual ~CandidateEvaluator() = default;
  /// One trace per selected workload; a failing candidate gives failing traces.
  virtual std::vector<Trace> evaluate(const Solution& solution) = 0;
  /// The full-strength guard (every correctness trial) that also times the PyTorch baselines
  /// (eager, torch.compile; cached after the first call): for the finalists' side-by-side
  /// re-measurement, whose last round is the winner's report.
  virtual std::vector<Trace> evaluate_final(const Solution& solution) { return evaluate(solution); }
  /// Compiles ahead (any thread, after prepare()); evaluate() must still work without it.
  virtual void prebuild(const Solution& solution) { (void)solution; }
  /// Called once on the orchestrator's thread before any prebuild.
  virtual void prepare() {}
  /// The device in words, for the board's conclusions ("cpu", "NVIDIA H200").
  virtual std::string device_name() const = 0;
};

/// The guard on a problem's selected workloads: `search_guard` for the search (no PyTorch
/// baselines, possibly fewer correctness trials), `final_guard` (may be the same) for the
/// finalists.
class GuardEvaluator : public CandidateEvaluator {
 public:
  GuardEvaluator(Guard& search_guard, Guard& final_guard, const Problem& problem,
                 std::vector<Workload> workloads, std::string device_name);

  std::vector<Trace> evaluate(const Solution& solution) override;
  std::vector<Trace> evaluate_final(const Solution& solution) override;
  void prebuild(const Solution& solution) override;
  void prepare() override;
  std::string device_name() const override { return device_name_; }

 private:
  Guard* search_guard_;
  Guard* final_guard_;
  const Problem* problem_;
  std::vector<Workload> workloads_;
  std::string device_name_;
  std::optional<Calibration> calibration_;  ///< for the diagnosis of passed traces
};

}  // namespace kernelarc
