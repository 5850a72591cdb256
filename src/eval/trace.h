// The result of evaluating one solution on one workload: SOL-ExecBench's Trace, plus kernelarc's
// own fields under "kernelarc".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/eval_status.h"
#include "core/problem.h"
#include "eval/compare.h"
#include "eval/stats.h"

namespace kernelarc {

/// SOL-ExecBench's statuses; a failing candidate is data, never an exception.
struct Trace {
  std::string definition;
  std::string solution;
  OrderedJson workload;  ///< the bare workload as read
  EvalStatus status = EvalStatus::Passed;
  std::string log;  ///< why, in one or a few lines; empty when passed
  /// Worst correctness statistics over the trials that ran (absent when nothing ran).
  std::optional<CompareResult> correctness;
  int trials_passed = 0;
  int trials = 0;
  bool audit_passed = false;  ///< the correctness audit inside the timed loop

  std::vector<double> samples_ms;  ///< timed runs, in order
  std::optional<TimingSummary> latency_ms;
  std::string clock;                  ///< what timed it ("steady_clock", "cupti", ...)
  std::optional<double> eager_ms;     ///< PyTorch eager reference, median
  std::optional<double> compiled_ms;  ///< torch.compile reference, median
  std::string baseline_note;          ///< why a baseline is missing
  std::optional<double> sol_ms;       ///< speed-of-light bound
  std::string sol_note;

  OrderedJson environment;  ///< hardware, compiler, libraries, clocks
  OrderedJson extra;        ///< resources, thread counts, compile facts
  std::string timestamp;

  /// The faster of the eager and compiled baselines (T_b).
  std::optional<double> baseline_ms() const;
  /// S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)), capped at 1, when all three are known.
  std::optional<double> sol_score() const;
  /// Passed below T_SOL: the bound is wrong (see eval/speed_of_light.h).
  bool sol_bound_beaten() const;
};

OrderedJson trace_to_json(const Trace& trace);

}  // namespace kernelarc
