#include "eval/workload_run.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "backend/device.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/rng.h"
#include "eval/phase_timer.h"

namespace kernelarc {

namespace {

uint64_t seed_for(uint64_t seed, const std::string& uuid) {
  // The audit position depends on the seed and the workload alone.
  return Rng(seed ^ std::stoull(content_hash(uuid).substr(0, 16), nullptr, 16)).next();
}

}  // namespace

std::size_t workspace_bytes_for(const Solution& solution, const AxisValues& axes) {
  if (!solution.ext.contains("workspace_bytes")) return 0;
  const auto& value = solution.ext["workspace_bytes"];
  if (value.is_number_unsigned() || value.is_number_integer()) return value.get<std::size_t>();
  if (!value.is_string()) {
    throw_input_error(solution.path.string(), "kernelarc.workspace_bytes",
                      "expected an integer or an expression over the axes");
  }
  try {
    return static_cast<std::size_t>(evaluate_expr(value.get<std::string>(), axes));
  } catch (const ExprError& error) {
    throw_input_error(solution.path.string(), "kernelarc.workspace_bytes", error.what());
  }
}

WorkloadRun::WorkloadRun(const GuardOptions& options, const Problem& problem,
                         const Workload& workload, const Solution& solution, Oracle& oracle,
                         Worker& worker, Trace& trace)
    : options_(options),
      problem_(problem),
      workload_(workload),
      oracle_(oracle),
      worker_(worker),
      trace_(trace) {
  const auto axes = resolve_axes(problem.definition, workload);
  layout_ = make_arena_layout(problem.definition, axes);
  workspace_bytes_ = workspace_bytes_for(solution, axes);
  stream_seed_ = seed_for(options.seed, workload.uuid);
}

ExecuteRequest WorkloadRun::make_request(int poison_variant) const {
  ExecuteRequest request;
  request.inputs = layout_.inputs;
  request.outputs = layout_.outputs;
  for (const auto& output : layout_.outputs) {
    request.output_poison.push_back(poison_pattern(output.dtype, poison_variant));
  }
  request.workspace_bytes = workspace_bytes_;
  return request;
}

bool WorkloadRun::accept_outcome(const ExecuteResult& result, const std::string& during) {
  if (result.outcome == CallOutcome::Ok) return true;
  const std::string detail = result.message.empty() ? "" : ": " + result.message;
  switch (result.outcome) {
    case CallOutcome::TimedOut:
      trace_.status = EvalStatus::Timeout;
      trace_.log = fmt::format("{}: a call did not finish within {} ms{}", during,
                               options_.call_timeout.count(), detail);
      break;
    case CallOutcome::Failed:
      trace_.status = EvalStatus::RuntimeError;
      trace_.log =
          fmt::format("{}: the entry point returned {}{}", during, result.return_code, detail);
      break;
    case CallOutcome::OutOfMemory:
      trace_.status = EvalStatus::RuntimeError;
      trace_.log = fmt::format("{}: out of memory{}", during, detail);
      break;
    case CallOutcome::Tampered:
      trace_.status = EvalStatus::RewardHack;
      trace_.log = fmt::format("{}: {}", during, result.message);
      break;
    case CallOutcome::OutOfBounds:
    case CallOutcome::Crashed:
    case CallOutcome::LoadFailed:
    case CallOutcome::Ok:
      trace_.status = EvalStatus::RuntimeError;
      trace_.log = fmt::format("{}: {}{}", during, call_outcome_name(result.outcome), detail);
      break;
  }
  if (!result.log_tail.empty()) trace_.log += "\nworker output:\n" + result.log_tail;
  return false;
}

bool WorkloadRun::check_outputs(const TensorMap& expected, int poison_variant,
                                const std::string& during) {
  const auto arena = worker_.arena(layout_.bytes);
  const auto outputs = output_views(arena, layout_, problem_.definition);
  for (std::size_t i = 0; i < problem_.definition.outputs.size(); ++i) {
    const auto& name = problem_.definition.outputs[i].name;
    const auto& reference = expected.at(name);
    const auto& output = outputs.at(name);
    const auto result = compare_output(output, reference, workload_.tolerance);
    if (!trace_.correctness || result.max_absolute_error > trace_.correctness->max_absolute_error ||
        !result.passed) {
      trace_.correctness = result;
    }
    if (result.passed) continue;
    trace_.status = EvalStatus::IncorrectNumerical;
    trace_.log = fmt::format("{}: output '{}': {}", during, name, result.reason);
    const auto poison = poison_pattern(output.dtype, poison_variant);
    const int64_t unwritten = count_poisoned(output, poison) - count_poisoned(reference, poison);
    if (unwritten > 0) {
      trace_.log +=
          fmt::format(" ({} of {} elements were never written)", unwritten, output.numel());
    }
    return false;
  }
  return true;
}

bool WorkloadRun::check_correctness() {
  trace_.trials = options_.correctness_trials;
  for (int trial = 0; trial < options_.correctness_trials; ++trial) {
    const auto inputs = write_trial_inputs(trial);
    auto request = make_request(trial);
    request.flush_cache = false;
    request.address_slot = trial % kAddressSlots;
    const std::string during = fmt::format("trial {}", trial);
    if (!accept_outcome(execute(request), during)) return false;
    const bool passed = in_part("checks", [&] {
      if (const auto modified = find_modified_input(worker_.arena(layout_.bytes), layout_,
                                                    problem_.definition, *inputs)) {
        trace_.status = EvalStatus::RewardHack;
        trace_.log = fmt::format("{}: the solution modified its input '{}'", during, *modified);
        return false;
      }
      return check_outputs(*oracle_.expected(problem_, workload_, trial), trial, during);
    });
    if (!passed) return false;
    ++trace_.trials_passed;
  }
  return true;
}

std::shared_ptr<const TensorMap> WorkloadRun::write_trial_inputs(int trial) {
  return in_part("inputs", [&] {
    auto inputs = oracle_.inputs(problem_, workload_, trial);
    write_inputs(worker_.arena(layout_.bytes), layout_, problem_.definition, *inputs);
    return inputs;
  });
}

ExecuteResult WorkloadRun::execute(const ExecuteRequest& request) {
  ExecuteResult result = in_part("worker", [&] { return worker_.execute(request); });
  PhaseTimer::add(trace_.extra, "parts/host_link", result.host_link_seconds);
  return result;
}

ExecuteResult WorkloadRun::run_chunk(int warmup, int iterations, bool audited) {
  auto request = make_request(0);
  request.warmup = warmup;
  request.iterations = iterations;
  request.flush_cache = true;
  request.copy_back = audited;
  request.perturb_inputs = !audited;
  // Audits land where correctness trial 0 was, with other contents.
  if (audited) request.address_slot = 0;
  return execute(request);
}

bool WorkloadRun::audit(int trial, const std::string& during, ExecuteResult& result) {
  write_trial_inputs(trial);
  result = run_chunk(0, 1, true);
  return accept_outcome(result, during) && in_part("checks", [&] {
           return check_outputs(*oracle_.expected(problem_, workload_, trial), 0, during);
         });
}

bool WorkloadRun::measure() {
  const int timing_trial = 0;
  const int audit_trial = options_.correctness_trials;  // a draw the solution has never seen
  const int min_runs = std::max(3, options_.min_iterations);
  const int audit_after = 1 + static_cast<int>(stream_seed_ % static_cast<uint64_t>(min_runs - 2));

  const auto timing_inputs = write_trial_inputs(timing_trial);
  const auto first = run_chunk(options_.warmup, audit_after, false);
  if (!accept_outcome(first, "timing")) return false;

  std::vector<double> first_ns = first.times_ns;
  std::sort(first_ns.begin(), first_ns.end());
  const double estimate_s = std::max(first_ns[first_ns.size() / 2] * 1e-9, 1e-9);
  const int total = std::clamp(static_cast<int>(options_.timing_budget_s / estimate_s), min_runs,
                               std::max(min_runs, options_.iterations));

  ExecuteResult audited;
  if (!audit(audit_trial, fmt::format("audit at timed run {}", audit_after), audited)) {
    return false;
  }
  trace_.audit_passed = true;
  // The twin follows the audit: the timing inputs with one element per tensor changed, which a
  // cache keyed on a sample of the inputs mistakes for the timing inputs themselves.
  ExecuteResult twin;
  const bool has_twin = oracle_.has_twin(problem_, workload_);
  if (has_twin &&
      !audit(kTwinTrial, fmt::format("twin audit at timed run {}", audit_after + 1), twin)) {
    return false;
  }
  trace_.extra["twin_audit"] = has_twin ? "passed" : "no twin for this workload";

  // The audits overwrote the arena; the timing draw is held, not fetched again.
  in_part("inputs", [&] {
    write_inputs(worker_.arena(layout_.bytes), layout_, problem_.definition, *timing_inputs);
  });
  const auto rest = run_chunk(0, std::max(1, total - audit_after - 2), false);
  if (!accept_outcome(rest, "timing")) return false;

  std::vector<const ExecuteResult*> chunks{&first, &audited};
  if (has_twin) chunks.push_back(&twin);
  chunks.push_back(&rest);
  std::vector<double> samples_ns;
  std::vector<std::vector<std::string>> launched;
  int threads_after = 0;
  if (first.clock == kClockSawNothing) {
    trace_.status = EvalStatus::RewardHack;
    trace_.log = fmt::format(
        "timing: the clock ({}) saw no GPU work for a call that passed: "
        "kernel tracing was disabled or bypassed",
        first.clock);
    return false;
  }
  for (const ExecuteResult* chunk : chunks) {
    samples_ns.insert(samples_ns.end(), chunk->times_ns.begin(), chunk->times_ns.end());
    launched.insert(launched.end(), chunk->launched.begin(), chunk->launched.end());
    threads_after = std::max(threads_after, chunk->threads_after);
    if (chunk->clock != first.clock) {
      trace_.status = EvalStatus::RewardHack;
      trace_.log = fmt::format("the timing clock changed from {} to {} between timed runs",
                               first.clock, chunk->clock);
      return false;
    }
  }

  trace_.clock = first.clock;
  trace_.extra["threads"] = {{"after_first_call", first.threads_before},
                             {"after_timing", threads_after}};
  const int started = threads_after - first.threads_before;
  if (started > 0) {
    trace_.status = EvalStatus::RewardHack;
    trace_.log = fmt::format("the solution started {} thread(s) that outlived its calls", started);
    return false;
  }
  if (std::set<std::vector<std::string>>(launched.begin(), launched.end()).size() > 1) {
    trace_.status = EvalStatus::RewardHack;
    trace_.log = "the set of launched kernels differed between timed runs";
    return false;
  }
  if (!launched.empty()) trace_.extra["launched"] = launched.front();
  if (!rest.kernels.empty()) trace_.extra["kernels"] = rest.kernels;
  if (!first.device_status_before.is_null()) {
    trace_.environment["device_before"] = first.device_status_before;
    trace_.environment["device_after"] = rest.device_status_after;
  }

  for (double ns : samples_ns) trace_.samples_ms.push_back(ns * 1e-6);
  trace_.latency_ms = summarize(trace_.samples_ms);
  return true;
}

}  // namespace kernelarc
