#include "oracle/oracle.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "core/error.h"
#include "core/hash.h"
#include "core/safetensors.h"
#include "oracle/baseline_processes.h"
#include "oracle/input_generator.h"
#include "oracle/input_twin.h"
#include "oracle/native_reference.h"
#include "oracle/oracle_cache.h"
#include "oracle/oracle_cache_bound.h"
#include "oracle/python_bridge.h"
#include "oracle/shared_parameters.h"

namespace kernelarc {

namespace {

// Bump when the C++ input generator changes what it draws: cached native entries then miss.
constexpr std::string_view kNativeGeneratorVersion = "native-generator-1";

// The "trial" a workload's shared parameters are drawn for: its seed is no trial's nor the twin's.
constexpr int kParameterDraw = -2;

bool has_native_reference(const Problem& problem) {
  return !problem.definition.ext.native_reference.empty();
}

std::string raw_or_parsed(const Problem& problem) {
  const OrderedJson& raw = problem.definition.raw;
  return raw.is_null() ? definition_to_job_json(problem.definition).dump() : raw.dump();
}

std::string workload_identity(const Workload& workload) {
  return workload.raw.is_null() ? workload.uuid : workload.raw.dump();
}

std::string error_key(const Problem& problem, const Workload& workload) {
  return problem.dir.string() + "\n" + problem.definition.name + "\n" + workload.uuid;
}

/// Checks that a cache file holds exactly the tensors a definition promises.
void check_tensors(const TensorMap& tensors, const std::vector<TensorSpec>& specs,
                   const AxisValues& axes, const std::filesystem::path& path) {
  for (const TensorSpec& spec : specs) {
    auto found = tensors.find(spec.name);
    std::vector<int64_t> shape = resolve_shape(spec, axes);
    if (found == tensors.end()) {
      throw_input_error(path.string(), spec.name, "tensor missing");
    }
    if (!dtype_same_storage(found->second.dtype, spec.dtype) || found->second.shape != shape) {
      throw_input_error(path.string(), spec.name,
                        "expected " + std::string(dtype_name(spec.dtype)) + " " +
                            shape_to_string(shape) + ", found " +
                            std::string(dtype_name(found->second.dtype)) + " " +
                            shape_to_string(found->second.shape));
    }
  }
}

std::filesystem::path scratch_path(const std::filesystem::path& cache_dir) {
  static std::atomic<int> counter{0};
  return cache_dir / ".scratch" / (std::to_string(getpid()) + "-" + std::to_string(++counter));
}

}  // namespace

std::string_view baseline_name(Baseline baseline) {
  return baseline == Baseline::Eager ? "eager" : "compiled";
}

struct Oracle::Entry {
  std::filesystem::path inputs;
  std::filesystem::path expected;
  std::filesystem::path error;
  /// The workload's shared parameters, drawn from parameters_seed; empty when it shares none,
  /// and for the twin, whose inputs file holds every input (it changes the parameters too).
  std::filesystem::path parameters;
  std::vector<std::string> shared;  ///< the inputs in `parameters`, not in `inputs`
  uint64_t seed = 0;
  /// The workload whose draw (from parameters_seed) gives the parameters.
  const Workload* parameters_source = nullptr;
  uint64_t parameters_seed = 0;

  bool complete() const {
    return std::filesystem::exists(expected) && std::filesystem::exists(inputs) &&
           (parameters.empty() || std::filesystem::exists(parameters));
  }
};

Oracle::Oracle(OracleOptions options)
    : options_(std::move(options)),
      python_(std::make_unique<PythonBridge>(
          options_.python, std::string(device_kind_name(options_.device)), options_.job_timeout)),
      memo_(options_.memory_cache_bytes ? options_.memory_cache_bytes
                                        : TensorMemo::default_max_bytes()) {}

Oracle::~Oracle() = default;

NativeReference& Oracle::native(const Problem& problem) const {
  std::string key = problem.dir.string() + "\n" + problem.definition.name;
  auto& slot = natives_[key];
  if (!slot) {
    slot = std::make_unique<NativeReference>(problem, options_.cache_dir / ".native-build",
                                             options_.worker_executable);
  }
  return *slot;
}

std::string Oracle::mode_tag(const Problem& problem) const {
  if (has_native_reference(problem)) {
    return std::string(kNativeGeneratorVersion) + "\n" + native(problem).identity();
  }
  return "python\n" + oracle_script_version();
}

std::filesystem::path Oracle::problem_cache_dir(const Problem& problem) const {
  return options_.cache_dir / cache_dir_name(problem.definition.name);
}

namespace {

// A threshold every draw passes: which inputs a workload would share, whatever its size.
constexpr std::uint64_t kAnyDrawShares = 1;

// The first workload of the problem that shares the same inputs, drawn the same way, as
// `workload`: its draw gives the parameters of all of them.
const Workload& parameter_source(const Problem& problem, const Workload& workload,
                                 const std::vector<std::string>& shared) {
  auto kind = [](const Workload& of, const std::string& name) {
    auto given = of.inputs.find(name);
    return given == of.inputs.end() ? InputKind::Random : given->second.kind;
  };
  for (const Workload& candidate : problem.workloads) {
    if (&candidate == &workload) break;
    if (shared_parameter_inputs(problem.definition, candidate, kAnyDrawShares) != shared) continue;
    if (std::all_of(shared.begin(), shared.end(), [&](const std::string& name) {
          return kind(candidate, name) == kind(workload, name);
        })) {
      return candidate;
    }
  }
  return workload;
}

}  // namespace

Oracle::Entry Oracle::entry(const Problem& problem, const Workload& workload, int trial) const {
  const std::vector<std::string> shared =
      shared_parameter_inputs(problem.definition, workload, options_.shared_parameter_bytes);
  std::string shared_names;
  for (const std::string& name : shared) shared_names += name + "\n";
  const std::string mode = mode_tag(problem);
  const std::string seed = std::to_string(options_.seed);
  const std::string device(device_kind_name(options_.device));
  ContentHasher key;
  key.add("kernelarc-oracle-trial-1")
      .add(mode)
      .add(raw_or_parsed(problem))
      .add(workload_identity(workload))
      .add(std::to_string(trial))
      .add(seed)
      .add(device);
  // A trial drawn with shared parameters differs from a full draw: the schemes never mix.
  if (!shared.empty()) key.add("shared parameters\n" + shared_names);
  // Twins made by an earlier rule (a copy of the row's farthest value, a tie) are not reused.
  if (trial == kTwinTrial) key.add("twin-halfway");
  auto base = problem_cache_dir(problem) / key.hex();
  Entry entry;
  entry.inputs = base.string() + ".inputs.safetensors";
  entry.expected = base.string() + ".expected.safetensors";
  entry.error = base.string() + ".error.json";
  entry.seed = derive_seed(options_.seed, workload.uuid, trial);
  if (!shared.empty() && trial != kTwinTrial) {
    // One draw serves every workload that shares the same parameters (their shapes use no var
    // axis): the 2.8 GB of Mixtral's experts once per problem, not once per token count. It is
    // drawn as the first such workload draws, so its content depends on the key alone and
    // processes racing to write it write the same bytes.
    const Workload& source = parameter_source(problem, workload, shared);
    std::string parameters_key = ContentHasher()
                                     .add("kernelarc-oracle-parameters-2")
                                     .add(mode)
                                     .add(raw_or_parsed(problem))
                                     .add(workload_identity(source))
                                     .add(seed)
                                     .add(device)
                                     .add(shared_names)
                                     .hex();
    entry.parameters = problem_cache_dir(problem) / (parameters_key + ".parameters.safetensors");
    entry.shared = shared;
    entry.parameters_source = &source;
    entry.parameters_seed = derive_seed(options_.seed, source.uuid, kParameterDraw);
  }
  return entry;
}

std::filesystem::path Oracle::timing_path(const Problem& problem, const Workload& workload,
                                          Baseline baseline) const {
  std::string key = ContentHasher()
                        .add("kernelarc-oracle-timing-3")  // 3: timing budget, warm-up limit
                        .add(mode_tag(problem))
                        .add(raw_or_parsed(problem))
                        .add(workload_identity(workload))
                        .add(baseline_name(baseline))
                        .add(std::string(device_kind_name(options_.device)))
                        .add(std::to_string(options_.seed))
                        .add(std::to_string(options_.warmup))
                        .add(std::to_string(options_.iterations))
                        .add(std::to_string(options_.min_iterations))
                        .add(std::to_string(options_.timing_budget_s))
                        .add(std::to_string(options_.warmup_limit_s))
                        .hex();
  return problem_cache_dir(problem) / (key + ".timing.json");
}

void Oracle::prepare(const Problem& problem, int trials, std::span<const Workload* const> only) {
  std::vector<const Workload*> workloads(only.begin(), only.end());
  if (workloads.empty()) {
    for (const Workload& workload : problem.workloads) workloads.push_back(&workload);
  }
  std::vector<Missing> missing;
  for (const Workload* each : workloads) {
    const Workload& workload = *each;
    for (int trial = 0; trial < trials; ++trial) {
      Entry cached = entry(problem, workload, trial);
      if (cached.complete()) continue;
      if (auto error = read_cached_error(cached.error)) {
        errors_[error_key(problem, workload)] = *error;
        continue;
      }
      missing.push_back({&workload, trial});
    }
  }
  mark_oracle_cache_used(problem_cache_dir(problem));
  const bool adds_entries = !missing.empty();
  generate(problem, missing);
  if (trials > 0) generate_twins(problem, workloads);
  if (adds_entries) {
    bound_oracle_cache(options_.cache_dir, problem_cache_dir(problem),
                       options_.max_cache_bytes > 0
                           ? options_.max_cache_bytes
                           : default_oracle_cache_bytes(options_.cache_dir));
  }
}

bool Oracle::has_twin(const Problem& problem, const Workload& workload) const {
  return entry(problem, workload, kTwinTrial).complete();
}

void Oracle::generate_twins(const Problem& problem, const std::vector<const Workload*>& workloads) {
  std::vector<PythonTrialJob> jobs;
  DrawProgress progress(problem, "twin draw", progress_);
  for (const Workload* each : workloads) {
    const Workload& workload = *each;
    Entry twin = entry(problem, workload, kTwinTrial);
    if (!twin_applies(workload) || twin.complete() || read_cached_error(twin.error) ||
        !entry(problem, workload, 0).complete()) {
      continue;
    }
    auto made = make_twin(inputs(problem, workload, 0)->copy(), twin.seed);
    if (!made) {
      write_cached_error(twin.error, workload.uuid, kTwinTrial,
                         "no floating input has two distinct finite values in a row");
      continue;
    }
    write_safetensors(twin.inputs, *made);
    if (has_native_reference(problem)) {
      auto outputs = native(problem).compute(problem, workload, *made);
      if (auto* error = std::get_if<std::string>(&outputs)) {
        write_cached_error(twin.error, workload.uuid, kTwinTrial, *error);
      } else {
        write_safetensors(twin.expected, std::get<TensorMap>(outputs));
      }
      continue;
    }
    // The twin's inputs file holds every input: its reference shares no parameters.
    jobs.push_back({"w" + std::to_string(jobs.size()),
                    &workload,
                    kTwinTrial,
                    twin.seed,
                    twin.inputs,
                    twin.expected,
                    twin.inputs,
                    {},
                    0,
                    {}});
    progress.add(jobs.back().id, workload);
  }
  if (jobs.empty()) return;
  auto outcomes = python_->run(problem, jobs, {}, scratch_path(options_.cache_dir), &progress);
  for (const PythonTrialJob& job : jobs) {
    const PythonJobOutcome& outcome = outcomes.at(job.id);
    if (!outcome.ok && outcome.cacheable) {
      write_cached_error(entry(problem, *job.workload, kTwinTrial).error, job.workload->uuid,
                         kTwinTrial, outcome.error);
    }
  }
}

void Oracle::generate(const Problem& problem, const std::vector<Missing>& missing) {
  if (missing.empty()) return;
  std::filesystem::create_directories(problem_cache_dir(problem));
  if (has_native_reference(problem)) {
    generate_native(problem, missing);
  } else {
    generate_python(problem, missing);
  }
}

void Oracle::record_error(const Problem& problem, const Workload& workload, int trial,
                          const std::string& message, bool cache) {
  errors_[error_key(problem, workload)] = message;
  if (cache)
    write_cached_error(entry(problem, workload, trial).error, workload.uuid, trial, message);
}

void Oracle::generate_python(const Problem& problem, const std::vector<Missing>& missing) {
  std::vector<PythonTrialJob> jobs;
  DrawProgress progress(problem, "draw", progress_);
  for (const auto& [workload, trial] : missing) {
    Entry target = entry(problem, *workload, trial);
    jobs.push_back({"t" + std::to_string(jobs.size()),
                    workload,
                    trial,
                    target.seed,
                    target.inputs,
                    target.expected,
                    {},
                    target.shared,
                    target.parameters_seed,
                    target.parameters,
                    target.parameters_source});
    progress.add(jobs.back().id, *workload);
  }
  auto outcomes = python_->run(problem, jobs, {}, scratch_path(options_.cache_dir), &progress);
  for (const PythonTrialJob& job : jobs) {
    const PythonJobOutcome& outcome = outcomes.at(job.id);
    if (!outcome.ok) {
      record_error(problem, *job.workload, job.trial, outcome.error, outcome.cacheable);
    } else if (!std::filesystem::exists(job.expected_out)) {
      record_error(problem, *job.workload, job.trial,
                   "the oracle script reported success but wrote no " + job.expected_out.string(),
                   false);
    }
  }
}

void Oracle::generate_native(const Problem& problem, const std::vector<Missing>& missing) {
  used_native_ = true;
  NativeReference& reference = native(problem);
  for (const auto& [workload, trial] : missing) {
    Entry target = entry(problem, *workload, trial);
    TensorMap inputs;
    try {
      inputs = generate_inputs(problem, *workload, target.seed);
      if (!target.parameters.empty()) {
        if (!std::filesystem::exists(target.parameters)) {
          TensorMap drawn =
              generate_inputs(problem, *target.parameters_source, target.parameters_seed);
          TensorMap parameters;
          for (const std::string& name : target.shared) parameters[name] = std::move(drawn[name]);
          write_safetensors(target.parameters, parameters);
        }
        auto parameters = read_parameters(problem, *workload, target);
        for (const std::string& name : target.shared) inputs[name] = parameters->at(name);
      }
    } catch (const InputError& error) {
      // A problem file is at fault, not the reference: report it, but do not cache it.
      record_error(problem, *workload, trial, error.what(), false);
      continue;
    }
    auto outputs = reference.compute(problem, *workload, inputs);
    if (auto* error = std::get_if<std::string>(&outputs)) {
      record_error(problem, *workload, trial, *error, true);
      continue;
    }
    for (const std::string& name : target.shared) inputs.erase(name);  // in the parameters file
    write_safetensors(target.inputs, inputs);
    // Written last: its presence marks the entry complete.
    write_safetensors(target.expected, std::get<TensorMap>(outputs));
  }
}

std::optional<std::string> Oracle::reference_error(const Problem& problem,
                                                   const Workload& workload) const {
  auto seen = errors_.find(error_key(problem, workload));
  if (seen != errors_.end()) return seen->second;
  return read_cached_error(entry(problem, workload, 0).error);
}

std::shared_ptr<const TensorMap> Oracle::read_entry(const Problem& problem,
                                                    const Workload& workload, int trial,
                                                    const Entry& cached, bool want_inputs) {
  const auto& path = want_inputs ? cached.inputs : cached.expected;
  if (auto kept = memo_.find(path.string())) return kept;
  auto failed = [&](const std::string& message) {
    return InputError("the reference failed on workload " + workload.uuid + " (trial " +
                      std::to_string(trial) + "): " + message);
  };
  if (!cached.complete()) {
    if (auto error = read_cached_error(cached.error)) throw failed(*error);
    if (trial == kTwinTrial) throw failed("it has no twin (see Oracle::has_twin)");
    generate(problem, {{&workload, trial}});
    if (!cached.complete()) {
      auto seen = errors_.find(error_key(problem, workload));
      throw failed(seen != errors_.end() ? seen->second : "no output was produced");
    }
  }
  AxisValues axes = resolve_axes(problem.definition, workload);
  // With shared parameters an inputs file holds the drawn inputs only (Oracle::inputs adds the
  // parameters, read apart).
  const bool apart = want_inputs && !cached.parameters.empty();
  std::vector<TensorSpec> specs;
  for (const TensorSpec& spec :
       want_inputs ? problem.definition.inputs : problem.definition.outputs)
    if (!apart ||
        std::find(cached.shared.begin(), cached.shared.end(), spec.name) == cached.shared.end())
      specs.push_back(spec);
  try {
    TensorMap tensors = read_safetensors(path);
    check_tensors(tensors, specs, axes, path);
    return memo_.put(path.string(), std::move(tensors));
  } catch (const InputError& error) {
    std::error_code ignored;
    std::filesystem::remove(cached.expected, ignored);
    std::filesystem::remove(cached.inputs, ignored);
    throw InputError("corrupt oracle cache file " + path.string() + " (" + error.what() +
                     "); it was deleted and the next prepare regenerates it");
  }
}

std::shared_ptr<const TensorMap> Oracle::read_parameters(const Problem& problem,
                                                         const Workload& workload,
                                                         const Entry& entry) {
  const std::string key = entry.parameters.string();
  if (auto kept = memo_.find(key)) return kept;
  std::vector<TensorSpec> specs;
  for (const TensorSpec& spec : problem.definition.inputs) {
    if (std::find(entry.shared.begin(), entry.shared.end(), spec.name) != entry.shared.end())
      specs.push_back(spec);
  }
  try {
    TensorMap tensors = read_safetensors(entry.parameters);
    check_tensors(tensors, specs, resolve_axes(problem.definition, workload), entry.parameters);
    return memo_.put(key, std::move(tensors));
  } catch (const InputError& error) {
    std::error_code ignored;
    std::filesystem::remove(entry.parameters, ignored);
    throw InputError("corrupt oracle cache file " + key + " (" + error.what() +
                     "); it was deleted and the next prepare regenerates it");
  }
}

std::shared_ptr<const TrialInputs> Oracle::inputs(const Problem& problem, const Workload& workload,
                                                  int trial) {
  const Entry cached = entry(problem, workload, trial);
  auto drawn = read_entry(problem, workload, trial, cached, true);
  std::shared_ptr<const TensorMap> parameters;
  if (!cached.parameters.empty()) parameters = read_parameters(problem, workload, cached);
  return std::make_shared<const TrialInputs>(std::move(drawn), std::move(parameters),
                                             cached.shared);
}

std::shared_ptr<const TensorMap> Oracle::expected(const Problem& problem, const Workload& workload,
                                                  int trial) {
  return read_entry(problem, workload, trial, entry(problem, workload, trial), false);
}

std::optional<ReferenceTiming> Oracle::reference_timing(const Problem& problem,
                                                        const Workload& workload,
                                                        Baseline baseline) {
  auto path = timing_path(problem, workload, baseline);
  auto cached = read_cached_timing(path, baseline);
  if (!cached) {
    std::filesystem::create_directories(problem_cache_dir(problem));
    if (has_native_reference(problem)) {
      time_native(problem, workload, baseline, path);
    } else {
      time_python(problem, baseline);
    }
    cached = read_cached_timing(path, baseline);
  }
  if (!cached) return std::nullopt;
  return cached->timing;
}

std::string Oracle::timing_unavailable_reason(const Problem& problem, const Workload& workload,
                                              Baseline baseline) const {
  auto cached = read_cached_timing(timing_path(problem, workload, baseline), baseline);
  if (!cached) return "not measured";
  return cached->unavailable;
}

PythonTimingJob Oracle::python_timing_job(std::string id, const Workload& workload,
                                          Baseline baseline, std::filesystem::path out) const {
  return {.id = std::move(id),
          .workload = &workload,
          .baseline = baseline,
          .warmup = options_.warmup,
          .iterations = options_.iterations,
          .min_iterations = options_.min_iterations,
          .timing_budget_s = options_.timing_budget_s,
          .warmup_limit_s = options_.warmup_limit_s,
          .seed = derive_seed(options_.seed, workload.uuid, 0),
          .out = std::move(out)};
}

void Oracle::time_python(const Problem& problem, Baseline baseline) {
  std::vector<PythonTimingJob> jobs;
  for (const Workload& workload : problem.workloads) {
    auto path = timing_path(problem, workload, baseline);
    if (read_cached_timing(path, baseline)) continue;
    jobs.push_back(python_timing_job("m" + std::to_string(jobs.size()), workload, baseline, path));
  }
  if (jobs.empty()) return;
  auto outcomes =
      time_in_fresh_processes(*python_, problem, jobs, scratch_path(options_.cache_dir));
  for (const PythonTimingJob& job : jobs) {
    const PythonJobOutcome& outcome = outcomes.at(job.id);
    if (!outcome.ok && outcome.cacheable) {
      write_cached_timing(job.out, baseline, {std::nullopt, "reference failed: " + outcome.error});
    }
  }
}

std::map<Baseline, std::map<std::string, ReferenceTiming>> Oracle::measure_reference_timings(
    const Problem& problem, const std::vector<Workload>& workloads,
    const std::vector<Baseline>& baselines, int processes) {
  const std::filesystem::path out_dir = scratch_path(options_.cache_dir);
  std::filesystem::create_directories(out_dir);
  auto out_of = [&](Baseline baseline, std::size_t index) {
    return out_dir /
           (std::string(baseline_name(baseline)) + std::to_string(index) + ".timing.json");
  };
  std::vector<PythonTimingJob> jobs;
  for (Baseline baseline : baselines) {
    for (std::size_t i = 0; i < workloads.size(); ++i) {
      if (has_native_reference(problem)) {
        time_native(problem, workloads[i], baseline, out_of(baseline, i));
        continue;
      }
      jobs.push_back(python_timing_job("m" + std::to_string(jobs.size()), workloads[i], baseline,
                                       out_of(baseline, i)));
    }
  }
  if (!jobs.empty())
    time_in_fresh_processes(*python_, problem, jobs, scratch_path(options_.cache_dir), processes);
  std::map<Baseline, std::map<std::string, ReferenceTiming>> measured;
  for (Baseline baseline : baselines) {
    for (std::size_t i = 0; i < workloads.size(); ++i) {
      auto timing = read_cached_timing(out_of(baseline, i), baseline);
      if (timing && timing->timing && !timing->timing->times_ns.empty())
        measured[baseline].emplace(workloads[i].uuid, std::move(*timing->timing));
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(out_dir, ignored);
  return measured;
}

void Oracle::time_native(const Problem& problem, const Workload& workload, Baseline baseline,
                         const std::filesystem::path& path) {
  used_native_ = true;
  auto unavailable = [&](const std::string& why) {
    write_cached_timing(path, baseline, {std::nullopt, why});
  };
  if (baseline == Baseline::Compiled)
    return unavailable("a native reference has no torch.compile baseline");
  if (options_.device != DeviceKind::Cpu) {
    return unavailable("the native reference runs on the CPU, not on " +
                       std::string(device_kind_name(options_.device)));
  }
  TensorMap trial_inputs;
  try {
    trial_inputs = inputs(problem, workload, 0)->copy();
  } catch (const InputError& error) {
    return unavailable(error.what());
  }
  auto timed =
      native(problem).time(problem, workload, trial_inputs, options_.warmup, options_.iterations);
  if (auto* error = std::get_if<std::string>(&timed)) return unavailable(*error);
  auto& measured = std::get<NativeReference::Timing>(timed);
  ReferenceTiming timing{.baseline = baseline,
                         .times_ns = std::move(measured.times_ns),
                         .end_to_end_ns = {},
                         .note = "native reference, " + measured.clock + ", cache flushed"};
  write_cached_timing(path, baseline, {std::move(timing), ""});
}

std::string Oracle::description() const {
  std::string python;
  if (python_->used() || !used_native_) {
    try {
      python = python_->description(scratch_path(options_.cache_dir));
    } catch (const InputError& error) {
      if (!used_native_) python = std::string("no usable Python: ") + error.what();
    }
  }
  if (!used_native_) return python;
  return python.empty() ? "native reference" : python + "; native reference";
}

void Oracle::stop_on(const std::atomic<int>* stop) {
  python_->stop_on(stop);
}

int Oracle::python_runs() const {
  return python_->runs();
}

}  // namespace kernelarc
