#include "eval/workload_run.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "backend/backend.h"
#include "backend/device.h"
#include "backend/worker/staged_call.h"
#include "backend/worker/worker_protocol.h"
#include "core/error.h"
#include "core/parallel_parts.h"
#include "eval/launch_consistency.h"
#include "eval/phase_timer.h"

namespace kernelarc {

namespace {

// Null-kernel calls per workload; the first, which faults the buffers in, is dropped. Four
// samples for the medians: on the CPU they are measured for every evaluation, and each costs a
// cache flush (about 15 ms on the CI VM) in its Stage request.
constexpr int kNullRequests = 5;

}  // namespace

int most_timed_calls(const GuardOptions& options) {
  return std::max(
      3, std::min(options.iterations, std::max(options.timing_draws, options.min_iterations)));
}

int timing_draw_count(const GuardOptions& options) {
  return std::max(1, options.warmup) + most_timed_calls(options);
}

int oracle_trials_needed(const GuardOptions& options) {
  return options.correctness_trials + timing_draw_count(options);
}

RequestOverhead measure_request_overhead(Worker& worker, const Problem& problem,
                                         const Workload& workload) {
  const auto layout =
      make_arena_layout(problem.definition, resolve_axes(problem.definition, workload));
  worker.arena(layout.bytes);  // the contents do not matter to a kernel that reads nothing
  ExecuteRequest request = call_request(layout, 0, 0);
  request.null_kernel = true;
  std::vector<ParentObservation> observed;
  for (int i = 0; i < kNullRequests; ++i) {
    const ExecuteResult result = execute_staged_call(worker, request);
    if (result.outcome != CallOutcome::Ok) return {};
    observed.push_back(result.observed);
  }
  return summarize_overhead(observed);
}

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
      trace_(trace),
      secret_draws_(std::random_device{}()) {
  CallShape shape = call_shape(problem.definition, workload, solution);
  layout_ = std::move(shape.layout);
  workspace_bytes_ = shape.workspace_bytes;
}

int WorkloadRun::next_address_slot() {
  if (!planned_slots_.empty()) {
    const int slot = planned_slots_.front();
    planned_slots_.pop_front();
    return slot;
  }
  return std::uniform_int_distribution<int>(0, kAddressSlots - 1)(secret_draws_);
}

void WorkloadRun::plan_address_slots(int calls) {
  std::vector<int> slots;
  for (int call = 0; call < calls; ++call) slots.push_back(next_address_slot());
  const std::set<int> distinct(slots.begin(), slots.end());
  if (calls >= 2 && distinct.size() == slots.size()) {
    const int later = std::uniform_int_distribution<int>(1, calls - 1)(secret_draws_);
    const int earlier = std::uniform_int_distribution<int>(0, later - 1)(secret_draws_);
    slots[static_cast<std::size_t>(later)] = slots[static_cast<std::size_t>(earlier)];
  }
  planned_slots_.assign(slots.begin(), slots.end());
}

std::vector<bool> WorkloadRun::checked_positions(int positions, int twin_at) {
  std::vector<bool> checked(static_cast<std::size_t>(positions), true);
  const int runs = positions - (twin_at >= 0 ? 1 : 0);
  if (options_.checked_timed_calls <= 0 || options_.checked_timed_calls >= runs) return checked;
  std::vector<int> timed;
  for (int position = 0; position < positions; ++position)
    if (position != twin_at) timed.push_back(position);
  std::vector<int> picked;
  std::sample(timed.begin(), timed.end(), std::back_inserter(picked), options_.checked_timed_calls,
              secret_draws_);
  for (int position : timed) checked[static_cast<std::size_t>(position)] = false;
  for (int position : picked) checked[static_cast<std::size_t>(position)] = true;
  return checked;
}

ExecuteRequest call_request(const ArenaLayout& layout, std::size_t workspace_bytes,
                            int poison_variant) {
  ExecuteRequest request;
  request.inputs = layout.inputs;
  request.outputs = layout.outputs;
  for (const auto& output : layout.outputs)
    request.output_poison.push_back(poison_pattern(output.dtype, poison_variant));
  request.workspace_bytes = workspace_bytes;
  request.warmup = 0;
  request.iterations = 1;
  request.flush_cache = true;
  request.copy_back = true;
  return request;
}

CallShape call_shape(const Definition& definition, const Workload& workload,
                     const Solution& solution) {
  const auto axes = resolve_axes(definition, workload);
  return {make_arena_layout(definition, axes), workspace_bytes_for(solution, axes)};
}

std::shared_ptr<const TrialInputs> write_oracle_inputs(std::span<std::byte> arena,
                                                       const ArenaLayout& layout,
                                                       const Problem& problem,
                                                       const Workload& workload, Oracle& oracle,
                                                       int trial) {
  auto inputs = oracle.inputs(problem, workload, trial);
  write_inputs(arena, layout, problem.definition, *inputs);
  return inputs;
}

ExecuteRequest WorkloadRun::make_request(int poison_variant) {
  // Every call looks the same, trials included, at an address slot the worker cannot predict.
  ExecuteRequest request = call_request(layout_, workspace_bytes_, poison_variant);
  request.address_slot = next_address_slot();
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
    const ExecuteRequest request = make_request(trial);
    const std::string during = fmt::format("trial {}", trial);
    if (!accept_outcome(execute(request), during)) return false;
    if (!check_call(*inputs, trial, trial, during)) return false;
    ++trace_.trials_passed;
  }
  return true;
}

bool WorkloadRun::check_call(const TrialInputs& inputs, int trial, int poison_variant,
                             const std::string& during) {
  return in_part("checks", [&] {
    if (const auto modified = find_modified_input(worker_.arena(layout_.bytes), layout_,
                                                  problem_.definition, inputs)) {
      trace_.status = EvalStatus::RewardHack;
      trace_.log = fmt::format("{}: the solution modified its input '{}'", during, *modified);
      return false;
    }
    return check_outputs(*oracle_.expected(problem_, workload_, trial), poison_variant, during);
  });
}

std::shared_ptr<const TrialInputs> WorkloadRun::write_trial_inputs(int trial) {
  return in_part("inputs", [&] {
    return write_oracle_inputs(worker_.arena(layout_.bytes), layout_, problem_, workload_, oracle_,
                               trial);
  });
}

ExecuteResult WorkloadRun::execute(const ExecuteRequest& request, bool collect) {
  ExecuteResult result =
      in_part("worker", [&] { return execute_staged_call(worker_, request, collect); });
  PhaseTimer::add(trace_.extra, "parts/host_link", result.host_link_seconds);
  return result;
}

uint64_t WorkloadRun::output_hash() {
  const auto arena = worker_.arena(layout_.bytes);
  uint64_t hash = 0;
  for (const auto& output : layout_.outputs) {
    hash = hash_in_parts(arena.subspan(output.offset, arena_tensor_bytes(output)), hash);
  }
  return hash;
}

bool WorkloadRun::run_checked(int trial, int poison_variant, const std::string& during,
                              ExecuteResult& result) {
  const auto inputs = write_trial_inputs(trial);
  result = execute(make_request(poison_variant));
  if (!accept_outcome(result, during)) return false;
  const uint64_t at_reply = in_part("checks", [&] { return output_hash(); });
  if (!check_call(*inputs, trial, poison_variant, during)) return false;
  // The outputs were read once the call had returned; what changes them later works outside it.
  if (in_part("checks", [&] { return output_hash(); }) != at_reply) {
    trace_.status = EvalStatus::RewardHack;
    trace_.log = fmt::format(
        "{}: the outputs in the shared arena changed after the call had returned", during);
    return false;
  }
  return true;
}

bool WorkloadRun::run_unchecked(int trial, int poison_variant, const std::string& during,
                                ExecuteResult& result) {
  write_trial_inputs(trial);
  result = execute(make_request(poison_variant), /*collect=*/false);
  return accept_outcome(result, during);
}

bool WorkloadRun::measure(const RequestOverhead& overhead) {
  int draw = options_.correctness_trials;  // the timing draws follow the trials'
  const int max_runs = most_timed_calls(options_);
  const int min_runs = std::min(std::max(3, options_.min_iterations), max_runs);

  // Warm-up calls are requests like the timed ones, on fresh draws, checked like them: nothing
  // tells a candidate where timing starts. The last one's time estimates the cost of a call.
  ExecuteResult warmed;
  for (int call = 0; call < std::max(1, options_.warmup); ++call) {
    if (!run_checked(draw++, call, fmt::format("audit at warm-up call {}", call + 1), warmed))
      return false;
  }
  if (warmed.clock == kClockSawNothing) {
    trace_.status = EvalStatus::RewardHack;
    trace_.log = fmt::format(
        "timing: the clock ({}) saw no GPU work for a call that passed: "
        "kernel tracing was disabled or bypassed",
        warmed.clock);
    return false;
  }
  const double estimate_s = std::max(warmed.times_ns.back() * 1e-9, 1e-9);
  const int runs =
      std::clamp(static_cast<int>(options_.timing_budget_s / estimate_s), min_runs, max_runs);

  // The twin of trial 0 runs among the timed calls, at a position drawn from the system's
  // entropy: a cache keyed on a sample of the inputs mistakes it for trial 0. Its time is not a
  // sample (its inputs are close to ones the candidate has seen).
  const bool has_twin = oracle_.has_twin(problem_, workload_);
  const int twin_at = has_twin ? std::uniform_int_distribution<int>(0, runs)(secret_draws_) : -1;
  const int positions = runs + (has_twin ? 1 : 0);
  plan_address_slots(positions);
  const std::vector<bool> checked = checked_positions(positions, twin_at);

  std::vector<double> samples_ns;
  std::vector<TimedRequest> requests;
  std::vector<TimedLaunches> launched;
  int threads_after = warmed.threads_after, tasks_after = warmed.observed.tasks_after;
  ExecuteResult last;
  int checked_calls = 0;
  for (int position = 0; position < positions; ++position) {
    const bool twin = position == twin_at;
    const std::string during =
        fmt::format("{} at timed run {}", twin ? "twin audit" : "audit", position + 1);
    const int trial = twin ? kTwinTrial : draw++;
    if (twin || checked[static_cast<std::size_t>(position)]) {
      if (!run_checked(trial, position, during, last)) return false;
      ++checked_calls;
    } else if (!run_unchecked(trial, position, fmt::format("timed run {}", position + 1), last)) {
      return false;
    }
    if (last.clock != warmed.clock) {
      trace_.status = EvalStatus::RewardHack;
      trace_.log = fmt::format("the timing clock changed from {} to {} between timed runs",
                               warmed.clock, last.clock);
      return false;
    }
    threads_after = std::max(threads_after, last.threads_after);
    tasks_after = std::max(tasks_after, last.observed.tasks_after);
    TimedLaunches run;
    for (const auto& call : last.launched)
      run.signatures.insert(run.signatures.end(), call.begin(), call.end());
    run.checked = twin || checked[static_cast<std::size_t>(position)];
    run.timed = !twin;
    run.ns = last.times_ns.front();
    launched.push_back(std::move(run));
    requests.push_back({last.times_ns.front(), last.observed});
    if (!twin) samples_ns.push_back(last.times_ns.front());
  }
  trace_.audit_passed = true;
  trace_.extra["twin_audit"] = has_twin ? "passed" : "no twin for this workload";
  trace_.extra["timed_draws"] = runs;
  trace_.extra["checked_calls"] = checked_calls;

  trace_.clock = warmed.clock;
  trace_.extra["threads"] = {{"after_warmup", warmed.threads_after},
                             {"after_timing", threads_after},
                             {"seen_by_the_guard_after_warmup", warmed.observed.tasks_after},
                             {"seen_by_the_guard_after_timing", tasks_after}};
  // Counted by the worker and, beyond the candidate's reach, by the parent through /proc.
  const int started =
      std::max(threads_after - warmed.threads_after,
               warmed.observed.valid ? tasks_after - warmed.observed.tasks_after : 0);
  if (started > 0) {
    trace_.status = EvalStatus::RewardHack;
    trace_.log = fmt::format("the solution started {} thread(s) that outlived its calls", started);
    return false;
  }
  const LaunchConsistency launches = launch_consistency(launched);
  if (launches.violation) {
    trace_.status = EvalStatus::RewardHack;
    trace_.log = *launches.violation;
    return false;
  }
  if (launches.geometry_varies) trace_.extra["launch_shapes"] = "varied with the inputs";
  trace_.extra["timing_checks"] = timing_bounds_json(requests, overhead);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (const auto violation = timing_violation(
          requests, overhead, backend_for(options_.device).kind() == DeviceKind::Cpu, cores)) {
    trace_.status = EvalStatus::RewardHack;
    trace_.log = "timing: " + *violation;
    return false;
  }
  if (!launched.empty()) trace_.extra["launched"] = launched.front().signatures;
  if (!last.kernels.empty()) trace_.extra["kernels"] = last.kernels;
  if (!warmed.device_status_before.is_null()) {
    trace_.environment["device_before"] = warmed.device_status_before;
    trace_.environment["device_after"] = last.device_status_after;
  }

  for (double ns : samples_ns) trace_.samples_ms.push_back(ns * 1e-6);
  trace_.latency_ms = summarize(trace_.samples_ms);
  return true;
}

}  // namespace kernelarc
