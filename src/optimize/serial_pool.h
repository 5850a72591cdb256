// The pool of one evaluator: one evaluation at a time, run on the caller's thread when its result
// is asked for. A search through it proposes and measures exactly as with the evaluator alone, so
// runs stay reproducible; it is what the orchestrator uses when given no other pool.
#pragma once

#include <deque>
#include <utility>

#include "optimize/evaluation_pool.h"
#include "optimize/evaluator.h"

namespace kernelarc {

class SerialPool : public EvaluationPool {
 public:
  explicit SerialPool(CandidateEvaluator& evaluator) : evaluator_(&evaluator) {}

  std::size_t capacity() const override { return 1; }
  void submit(uint64_t ticket, const Solution& solution) override;
  /// Evaluates the oldest submitted solution now; an evaluator's exception comes out here.
  Done next() override;

 private:
  CandidateEvaluator* evaluator_;
  std::deque<std::pair<uint64_t, Solution>> submitted_;
};

}  // namespace kernelarc
