#include "eval/guard.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "backend/backend.h"
#include "backend/worker/worker.h"
#include "core/elapsed.h"
#include "core/error.h"
#include "eval/calibrate_automatically.h"
#include "eval/occupancy.h"
#include "eval/phase_timer.h"
#include "eval/solution_build.h"
#include "eval/solution_variants.h"
#include "eval/speed_of_light.h"
#include "eval/workload_run.h"

namespace kernelarc {

namespace {

std::vector<const Workload*> select_workloads(const Problem& problem,
                                              std::span<const Workload> workloads) {
  std::vector<const Workload*> selected;
  if (workloads.empty()) {
    for (const auto& workload : problem.workloads) selected.push_back(&workload);
  } else {
    for (const auto& workload : workloads) selected.push_back(&workload);
  }
  return selected;
}

/// Adds the theoretical occupancy to every kernel the worker reported (CUPTI records).
void add_occupancy(OrderedJson& extra, const std::string& arch) {
  if (!extra.contains("kernels")) return;
  for (auto& kernel : extra["kernels"]) {
    const auto block = kernel.value("block", std::vector<int>{});
    int threads = 1;
    for (int size : block) threads *= std::max(size, 1);
    const KernelFootprint footprint{
        .threads_per_block = block.empty() ? 0 : threads,
        .registers_per_thread = kernel.value("registers_per_thread", 0),
        .shared_bytes_per_block = kernel.value("static_shared_bytes", int64_t{0}) +
                                  kernel.value("dynamic_shared_bytes", int64_t{0})};
    if (const auto occupancy = theoretical_occupancy(arch, footprint)) {
      kernel["theoretical_occupancy"] = {{"blocks_per_sm", occupancy->blocks_per_sm},
                                         {"fraction", occupancy->fraction},
                                         {"limited_by", occupancy->limited_by}};
    }
  }
}

}  // namespace

struct Guard::Impl {
  Impl(const GuardOptions& options, Oracle& oracle)
      : oracle(oracle),
        // The workspace holds the oracle's expected outputs: candidates must not see it, except
        // the build cache from which the worker loads them.
        worker(WorkerOptions{
            .device = options.device,
            .executable = options.worker_executable,
            .call_timeout = options.call_timeout,
            .memory_limit_bytes = options.memory_limit_bytes,
            .log_path = {},
            .protected_paths = {std::filesystem::absolute(options.workspace)},
            .readable_paths = {std::filesystem::absolute(options.workspace) / "build"},
            .cpus = options.cpus}) {}

  Oracle& oracle;
  Worker worker;
  std::string device_description;
  std::string device_arch;
  std::optional<Calibration> calibration;
  bool calibration_loaded = false;
  double calibration_seconds = 0;  ///< spent calibrating automatically (once per guard)
  /// What a request costs around the call, per workload uuid: measured on a worker without
  /// candidate code (timing_bounds.h), once per guard on a GPU and per evaluation on the CPU.
  std::map<std::string, RequestOverhead> overheads;
};

Guard::Guard(GuardOptions options, Oracle& oracle)
    : options_(std::move(options)), impl_(std::make_unique<Impl>(options_, oracle)) {}

Guard::~Guard() = default;

std::optional<double> Guard::baseline_median(const Problem& problem, const Workload& workload,
                                             Baseline baseline, Trace& trace) {
  const auto timing = impl_->oracle.reference_timing(problem, workload, baseline);
  const std::string note =
      timing ? timing->note : impl_->oracle.timing_unavailable_reason(problem, workload, baseline);
  if (!note.empty()) {
    trace.baseline_note += (trace.baseline_note.empty() ? "" : "; ") +
                           std::string(baseline_name(baseline)) + ": " + note;
  }
  if (!timing || timing->times_ns.empty()) return std::nullopt;
  if (!timing->end_to_end_ns.empty()) {
    trace.extra["baselines_end_to_end_ms"][std::string(baseline_name(baseline))] =
        summarize(timing->end_to_end_ns).median * 1e-6;
  }
  return summarize(timing->times_ns).median * 1e-6;
}

const std::optional<Calibration>& Guard::calibration() {
  if (!impl_->calibration_loaded) {
    impl_->calibration = load_calibration(options_.workspace, options_.device);
    if (!impl_->calibration && options_.auto_calibrate) {
      const auto start = std::chrono::steady_clock::now();
      impl_->calibration = calibrate_automatically(options_);
      impl_->calibration_seconds = seconds_since(start);
    }
    impl_->calibration_loaded = true;
  }
  return impl_->calibration;
}

void Guard::prepare_builds() {
  if (backend_for(options_.device).kind() != DeviceKind::Cpu && impl_->device_arch.empty()) {
    impl_->device_arch = impl_->worker.device_arch();
  }
}

const std::string& Guard::device_arch() const {
  return impl_->device_arch;
}

bool Guard::prebuild(const Definition& definition, const Solution& solution) const {
  try {
    const auto variants = parse_variants(solution, definition);
    if (!build_solution(resolve_variant(solution, variants, std::nullopt), definition, options_,
                        impl_->device_arch)
             .ok)
      return false;
    for (std::size_t i = 0; i < variants.size(); ++i) {
      if (!build_solution(resolve_variant(solution, variants, i), definition, options_,
                          impl_->device_arch)
               .ok)
        return false;
    }
    return true;
  } catch (const InputError&) {
    return false;  // evaluate() reports it with the candidate's traces
  }
}

std::vector<Trace> Guard::evaluate(const Problem& problem, const Solution& solution,
                                   std::span<const Workload> workloads) {
  if (solution.definition != problem.definition.name) {
    throw_input_error(solution.path.string(), "definition",
                      fmt::format("the solution is for '{}', but the problem is '{}'",
                                  solution.definition, problem.definition.name));
  }
  for (const TensorSpec& output : problem.definition.outputs) {
    if (dtype_is_packed(output.dtype)) {
      throw_input_error(
          problem.definition.path.string(), "outputs." + output.name + ".dtype",
          fmt::format("{} outputs cannot be checked: the guard compares values within a "
                      "tolerance, and each byte of this dtype packs two of them",
                      dtype_name(output.dtype)));
    }
  }
  const auto selected = select_workloads(problem, workloads);
  calibration();

  OrderedJson environment;
  prepare_builds();
  // One build per variant in use (kernelarc.variants; a solution without them is one build).
  const auto variants = parse_variants(solution, problem.definition);
  struct VariantBuild {
    std::optional<std::size_t> variant;
    Solution solution;
    BuildResult build;
  };
  std::vector<VariantBuild> builds;
  std::vector<std::size_t> build_of_workload;
  for (const auto* workload : selected) {
    const auto variant =
        select_variant(solution, variants, resolve_axes(problem.definition, *workload));
    auto same = std::find_if(builds.begin(), builds.end(),
                             [&](const VariantBuild& b) { return b.variant == variant; });
    if (same == builds.end()) {
      Solution resolved = resolve_variant(solution, variants, variant);
      BuildResult build =
          build_solution(resolved, problem.definition, options_, impl_->device_arch);
      builds.push_back({variant, std::move(resolved), std::move(build)});
      same = std::prev(builds.end());
    }
    build_of_workload.push_back(static_cast<std::size_t>(same - builds.begin()));
  }
  environment["compiler"] = builds.empty() ? "" : builds.front().build.compiler;
  environment["oracle"] = impl_->oracle.description();

  std::vector<Trace> traces;
  auto new_trace = [&](const Workload& workload, const VariantBuild& built) {
    Trace trace;
    trace.definition = problem.definition.name;
    trace.solution = solution.name;
    trace.workload = workload.raw;
    trace.timestamp = utc_timestamp();
    trace.environment = environment;
    trace.extra["build"] = {{"cached", built.build.cached},
                            {"seconds", built.build.seconds},
                            {"key", built.build.cache_key}};
    if (!built.build.notes.empty()) trace.extra["build"]["notes"] = built.build.notes;
    if (!variants.empty()) {
      trace.extra["variant"] = {
          {"index", built.variant ? OrderedJson(*built.variant) : OrderedJson(nullptr)},
          {"when", built.variant ? variants[*built.variant].when : "otherwise"},
          {"knobs", built.solution.ext.value("knobs", OrderedJson::object())}};
    }
    return trace;
  };

  double setup_seconds = 0;
  std::optional<std::size_t> loaded_build;
  ExecuteResult loaded;
  // Loads the variant's library into the worker unless it is the one loaded already.
  auto load = [&](std::size_t index) {
    if (loaded_build == index) return;
    const auto start = std::chrono::steady_clock::now();
    VariantBuild& built = builds[index];
    loaded = impl_->worker.load(built.build.library, built.build.symbol);
    if (loaded.outcome == CallOutcome::LoadFailed && built.build.cached) {
      // A cached binary that no longer loads (cut short by a crash or a full disk) is built
      // again once; a library that cannot load for its own reasons fails the same way twice.
      std::error_code ignored;
      std::filesystem::remove_all(built.build.library.parent_path(), ignored);
      built.build =
          build_solution(built.solution, problem.definition, options_, impl_->device_arch);
      if (built.build.ok) loaded = impl_->worker.load(built.build.library, built.build.symbol);
    }
    loaded_build = index;
    setup_seconds += seconds_since(start);
    if (impl_->device_description.empty() && loaded.outcome == CallOutcome::Ok)
      impl_->device_description = impl_->worker.device_description();
  };

  // Before any candidate of this evaluation loads: a worker that ran candidate code before is
  // replaced, so that nothing slows the null-kernel requests down to hide work in them. On the
  // CPU the overhead is measured again for every evaluation: what the request's memory-bound
  // work costs follows the machine's load, which changes between candidates (a GPU request's
  // cost does not, and a new worker there costs a CUDA context).
  if (backend_for(options_.device).kind() == DeviceKind::Cpu) impl_->overheads.clear();
  for (std::size_t w = 0; w < selected.size(); ++w) {
    if (!builds[build_of_workload[w]].build.ok || impl_->overheads.count(selected[w]->uuid))
      continue;
    const auto start = std::chrono::steady_clock::now();
    if (impl_->worker.candidate_loaded()) impl_->worker.stop();
    impl_->overheads[selected[w]->uuid] =
        measure_request_overhead(impl_->worker, problem, *selected[w]);
    setup_seconds += seconds_since(start);
  }

  bool oracle_prepared = false;
  for (std::size_t w = 0; w < selected.size(); ++w) {
    const Workload* workload = selected[w];
    VariantBuild& built = builds[build_of_workload[w]];
    traces.push_back(new_trace(*workload, built));
    Trace& current = traces.back();
    if (!built.build.ok) {
      current.status = EvalStatus::CompileError;
      current.log = built.build.log;
      continue;
    }
    if (!oracle_prepared) {
      const auto start = std::chrono::steady_clock::now();
      impl_->oracle.prepare(problem, oracle_trials_needed(options_), selected);
      setup_seconds += seconds_since(start);
      oracle_prepared = true;
    }
    load(build_of_workload[w]);
    current.environment["hardware"] = impl_->device_description;
    current.environment["sandbox"] = impl_->worker.sandbox_status();
    if (const auto error = impl_->oracle.reference_error(problem, *workload)) {
      current.status = EvalStatus::InvalidReference;
      current.log = *error;
      continue;
    }
    if (loaded.outcome != CallOutcome::Ok) {
      current.status = loaded.outcome == CallOutcome::Tampered ? EvalStatus::RewardHack
                                                               : EvalStatus::RuntimeError;
      current.log = fmt::format("could not load the solution: {}: {}",
                                call_outcome_name(loaded.outcome), loaded.message);
      continue;
    }
    WorkloadRun run(options_, problem, *workload, built.solution, impl_->oracle, impl_->worker,
                    current);
    bool correct = false;
    {
      PhaseTimer timer(current.extra, "correctness");
      correct = run.check_correctness();
    }
    if (!correct) continue;
    bool measured = false;
    {
      PhaseTimer timer(current.extra, "timing");
      measured = run.measure(impl_->overheads[workload->uuid]);
    }
    if (!measured) continue;
    add_occupancy(current.extra, impl_->device_arch);

    const auto bound = speed_of_light(
        problem.definition, resolve_axes(problem.definition, *workload), impl_->calibration);
    current.sol_ms = bound.ms;
    current.sol_note = bound.note;
    const double margin = floor_margin(impl_->calibration, options_.sol_margin);
    if (bound.ms && current.latency_ms->median < margin * *bound.ms) {
      current.status = EvalStatus::RewardHack;
      current.log = fmt::format(
          "median {:.4f} ms is below {} x the speed-of-light bound {:.4f} ms ({}): impossible",
          current.latency_ms->median, margin, *bound.ms, bound.note);
      continue;
    }
    if (options_.time_baselines) {
      PhaseTimer timer(current.extra, "baselines");
      current.eager_ms = baseline_median(problem, *workload, Baseline::Eager, current);
      if (backend_for(options_.device).times_compiled_baseline()) {
        current.compiled_ms = baseline_median(problem, *workload, Baseline::Compiled, current);
      }
    }
  }
  // Preparing the oracle's cache and loading the library serve every workload: noted once.
  if (!traces.empty()) traces.front().extra["guard_seconds"]["setup"] = setup_seconds;
  if (!traces.empty() && impl_->calibration_seconds > 0) {
    traces.front().extra["guard_seconds"]["automatic_calibration"] = impl_->calibration_seconds;
    impl_->calibration_seconds = 0;
  }
  return traces;
}

}  // namespace kernelarc
