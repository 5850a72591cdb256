// The search's measurements of one problem, shared by optimize_bench's configurations: a
// candidate that another configuration (or seed) already measured is not measured again. Each
// configuration still spends its whole budget and sees every result it would have seen; only
// device time is saved, and two configurations that visit the same point see the same
// measurement of it, which takes that noise out of their comparison. The finalists'
// side-by-side re-measurement (evaluate_final) always runs afresh.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "optimize/evaluator.h"

namespace kernelarc {

class SharedEvaluations : public CandidateEvaluator {
 public:
  explicit SharedEvaluations(CandidateEvaluator& measured) : measured_(measured) {}

  std::vector<Trace> evaluate(const Solution& solution) override;
  std::vector<Trace> evaluate_final(const Solution& solution) override {
    return measured_.evaluate_final(solution);
  }
  void prebuild(const Solution& solution) override { measured_.prebuild(solution); }
  void prepare() override { measured_.prepare(); }
  std::string device_name() const override { return measured_.device_name(); }

  int evaluations() const { return evaluations_; }                   ///< evaluate() calls
  int measured() const { return static_cast<int>(traces_.size()); }  ///< of them, measured

 private:
  CandidateEvaluator& measured_;
  std::map<std::string, std::vector<Trace>> traces_;  ///< by the solution's content hash
  int evaluations_ = 0;
};

}  // namespace kernelarc
