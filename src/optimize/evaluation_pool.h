// Evaluations in flight at once: one per local device (a GPU, or a disjoint set of CPU cores),
// or on `kernelarc worker` processes of other hosts that take jobs from a queue. The search
// submits candidates and takes their results in whatever order they finish; the finalists'
// side-by-side re-measurement stays on one evaluator (CandidateEvaluator::evaluate_final), so
// that the figures a user reads come from one device.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "eval/trace.h"

namespace kernelarc {

class EvaluationPool {
 public:
  /// A finished evaluation: the ticket it was submitted with, one trace per selected workload
  /// (failing traces for a failing candidate) and where it ran ("cuda:1", "worker host-a/cuda:0").
  struct Done {
    uint64_t ticket = 0;
    std::vector<Trace> traces;
    std::string where;
  };

  virtual ~EvaluationPool() = default;
  /// How many evaluations may be in flight at once (devices plus remote workers).
  virtual std::size_t capacity() const = 0;
  /// Starts the search guard on `solution`; the result comes back from next() with `ticket`.
  virtual void submit(uint64_t ticket, const Solution& solution) = 0;
  /// Blocks until one submitted evaluation finishes. Each submitted ticket comes back exactly
  /// once, even when a remote worker died and another took its job over.
  virtual Done next() = 0;
  /// The next finished evaluation if one finishes within `wait`, else nullopt: the search waits
  /// on the pool and on the code synthesizer's requests together. A pool that measures on the
  /// caller's thread has nothing to wait for: it measures one now (the default).
  virtual std::optional<Done> next_within(std::chrono::milliseconds wait) {
    (void)wait;
    return next();
  }
};

}  // namespace kernelarc
