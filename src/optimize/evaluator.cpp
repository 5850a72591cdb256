#include "optimize/evaluator.h"

namespace kernelarc {

GuardEvaluator::GuardEvaluator(Guard& search_guard, Guard& final_guard, const Problem& problem,
                               std::vector<Workload> workloads, std::string device_name)
    : search_guard_(&search_guard),
      final_guard_(&final_guard),
      problem_(&problem),
      workloads_(std::move(workloads)),
      device_name_(std::move(device_name)) {}

std::vector<Trace> GuardEvaluator::evaluate(const Solution& solution) {
  return search_guard_->evaluate(*problem_, solution, workloads_);
}

std::vector<Trace> GuardEvaluator::evaluate_final(const Solution& solution) {
  return final_guard_->evaluate(*problem_, solution, workloads_);
}

void GuardEvaluator::prebuild(const Solution& solution) {
  search_guard_->prebuild(problem_->definition, solution);
}

void GuardEvaluator::prepare() {
  search_guard_->prepare_builds();
}

}  // namespace kernelarc
