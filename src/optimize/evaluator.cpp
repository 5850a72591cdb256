#include "optimize/evaluator.h"

namespace kernelarc {

GuardEvaluator::GuardEvaluator(Guard& guard, Guard& baseline_guard, const Problem& problem,
                               std::vector<Workload> workloads, std::string device_name)
    : guard_(&guard),
      baseline_guard_(&baseline_guard),
      problem_(&problem),
      workloads_(std::move(workloads)),
      device_name_(std::move(device_name)) {}

std::vector<Trace> GuardEvaluator::evaluate(const Solution& solution) {
  return guard_->evaluate(*problem_, solution, workloads_);
}

std::vector<Trace> GuardEvaluator::evaluate_with_baselines(const Solution& solution) {
  return baseline_guard_->evaluate(*problem_, solution, workloads_);
}

void GuardEvaluator::prebuild(const Solution& solution) {
  guard_->prebuild(problem_->definition, solution);
}

void GuardEvaluator::prepare() {
  guard_->prepare_builds();
}

}  // namespace kernelarc
