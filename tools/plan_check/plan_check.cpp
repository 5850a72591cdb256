#include "plan_check.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "eval/compare.h"
#include "lower/lower_plan.h"
#include "lower/plan_interpreter.h"
#include "oracle/graph_trace.h"

namespace kernelarc {
namespace {

std::string kernel_summary(const OrderedJson& plan) {
  std::string kinds;
  for (const auto& kernel : plan["kernels"]) kinds += " " + kernel["kind"].get<std::string>();
  return fmt::format("{}:{}", plan["kernels"].size(), kinds);
}

/// The workload the plan interpreter does least work on.
const Workload* smallest_workload(const Problem& problem, const OrderedJson& plan, int64_t& work) {
  const Workload* best = nullptr;
  work = std::numeric_limits<int64_t>::max();
  for (const auto& workload : problem.workloads) {
    const int64_t w = plan_work(plan, resolve_axes(problem.definition, workload));
    if (w < work) {
      work = w;
      best = &workload;
    }
  }
  return best;
}

std::vector<double> as_doubles(const HostTensor& tensor) {
  std::vector<double> values(static_cast<std::size_t>(TensorView(tensor).numel()));
  load_elements(tensor.dtype, tensor.bytes.data(), static_cast<int64_t>(values.size()),
                values.data());
  return values;
}

/// Runs the plan on the oracle's trial 0 and compares every output; fills the row's verdict.
void interpret(const Problem& problem, const Workload& workload, const OrderedJson& plan,
               Oracle& oracle, PlanCheckRow& row) {
  std::shared_ptr<const TrialInputs> inputs;
  std::shared_ptr<const TensorMap> expected;
  try {
    inputs = oracle.inputs(problem, workload, 0);
    expected = oracle.expected(problem, workload, 0);
  } catch (const InputError& error) {
    row.verdict = "skip";  // nothing to compare with: not a verdict on the plan
    row.reason = error.what();
    return;
  }
  const AxisValues axes = resolve_axes(problem.definition, workload);
  PlanBuffers buffers;
  for (const auto& spec : problem.definition.inputs)
    buffers[spec.name] = as_doubles(inputs->at(spec.name));
  std::map<std::string, std::vector<int64_t>> output_shapes;
  for (const auto& spec : problem.definition.outputs) {
    output_shapes[spec.name] = resolve_shape(spec, axes);
  }
  const PlanBuffers got = run_plan(plan, axes, buffers, output_shapes);
  row.verdict = "PASS";
  for (const auto& spec : problem.definition.outputs) {
    HostTensor output(spec.dtype, output_shapes[spec.name]);
    HostTensor reference = expected->at(spec.name);
    const auto& values = got.at(spec.name);
    // Where the reference is not finite (inputs outside an op's domain, e.g. log of a negative
    // number) the plan agrees when it gives the same NaN or infinity; the guard's rule would
    // reject both, so agreeing elements are compared as zeros.
    int64_t agreeing_non_finite = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto at = static_cast<int64_t>(i);
      const double want =
          i < static_cast<std::size_t>(TensorView(reference).numel()) ? reference.at(at) : 0.0;
      const bool agree =
          !std::isfinite(want) && (std::isnan(want) ? std::isnan(values[i]) : want == values[i]);
      if (agree) {
        ++agreeing_non_finite;
        reference.set(at, 0);
      }
      output.set(at, agree ? 0 : values[i]);
    }
    if (agreeing_non_finite > 0) {
      row.reason += fmt::format("{}{}: {} non-finite reference elements, matched",
                                row.reason.empty() ? "" : "; ", spec.name, agreeing_non_finite);
    }
    const CompareResult compared = compare_output(output, reference, workload.tolerance);
    row.max_abs = std::max(row.max_abs, compared.max_absolute_error);
    row.max_rel = std::max(row.max_rel, compared.max_relative_error);
    if (!compared.passed) {
      row.verdict = "FAIL";
      row.reason +=
          fmt::format("{}{}: {}", row.reason.empty() ? "" : "; ", spec.name, compared.reason);
    }
  }
}

}  // namespace

PlanCheckRow check_problem(const std::filesystem::path& dir, const PlanCheckOptions& options,
                           Oracle& oracle) {
  PlanCheckRow row;
  row.problem = dir.filename().string();
  row.verdict = "-";
  Problem problem;
  try {
    problem = load_problem(dir);
    row.problem = problem.definition.name;
    row.loaded = true;
    const GraphTraceResult traced =
        trace_reference(problem, options.python, options.scratch / "trace");
    if (!traced.ok) {
      row.reason = "trace: " + traced.error;
      return row;
    }
    row.traced = true;
    const OpGraph graph = parse_op_graph(traced.graph, "the traced graph of " + row.problem);
    const PlanLowering lowered = lower_to_plan(graph, problem.definition);
    if (!lowered.ok) {
      row.reason = "lower: " + lowered.reason;
      return row;
    }
    row.lowered = true;
    row.kernels = kernel_summary(lowered.plan);
    int64_t work = 0;
    const Workload* workload = smallest_workload(problem, lowered.plan, work);
    if (workload == nullptr) {
      row.verdict = "skip";
      row.reason = "no workload";
      return row;
    }
    if (work > options.max_work) {
      row.verdict = "skip";
      row.reason = fmt::format("work {:.3g} > --max-elements {:.3g} (workload {})",
                               static_cast<double>(work), static_cast<double>(options.max_work),
                               workload->uuid);
      return row;
    }
    interpret(problem, *workload, lowered.plan, oracle, row);
  } catch (const std::exception& error) {
    row.verdict = row.lowered ? "FAIL" : "-";
    row.reason += (row.reason.empty() ? "" : "; ") + std::string(error.what());
  }
  return row;
}

}  // namespace kernelarc
