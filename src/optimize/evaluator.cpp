#include "optimize/evaluator.h"

#include "diagnosis/diagnosis.h"

namespace kernelarc {

GuardEvaluator::GuardEvaluator(Guard& search_guard, Guard& final_guard, const Problem& problem,
                               std::vector<Workload> workloads, std::string device_name)
    : search_guard_(&search_guard),
      final_guard_(&final_guard),
      problem_(&problem),
      workloads_(std::move(workloads)),
      device_name_(std::move(device_name)),
      calibration_(search_guard.calibration()) {}

std::vector<Trace> GuardEvaluator::evaluate(const Solution& solution) {
  auto traces = search_guard_->evaluate(*problem_, solution, workloads_);
  annotate_traces(traces, *problem_, solution, calibration_);
  return traces;
}

std::vector<Trace> GuardEvaluator::evaluate_final(const Solution& solution) {
  auto traces = final_guard_->evaluate(*problem_, solution, workloads_);
  annotate_traces(traces, *problem_, solution, calibration_);
  return traces;
}

void GuardEvaluator::prebuild(const Solution& solution) {
  search_guard_->prebuild(problem_->definition, solution);
}

void GuardEvaluator::prepare() {
  search_guard_->prepare_builds();
}

}  // namespace kernelarc
