#include "app/optimize_session.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "app/extra_files.h"
#include "app/memory_check.h"
#include "app/optimize_skills.h"
#include "backend/backend.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "optimize/local_pool.h"
#include "optimize/serial_pool.h"
#include "optimize/shape_class.h"
#include "optimize/strategy.h"
#include "search/selection.h"

namespace kernelarc {

namespace {

// Checked timed calls per workload while screening: a candidate that skips its work often
// enough to move its median escapes all three with probability below 1/8, and then meets the
// finalists' re-measurement, which checks every call.
constexpr int kSearchCheckedTimedCalls = 3;

void apply_guard_config(const nlohmann::json& json, GuardFlags& flags, int& search_trials,
                        int64_t run_id) {
  try {
    flags.device = json.at("device").get<std::string>();
    flags.trials = json.at("trials").get<int>();
    search_trials = json.value("search_trials", flags.trials);
    flags.warmup = json.at("warmup").get<int>();
    flags.iterations = json.at("iterations").get<int>();
    flags.budget_s = json.at("budget_s").get<double>();
    flags.timeout_ms = json.at("timeout_ms").get<int>();
    flags.seed = json.at("seed").get<uint64_t>();
    flags.cflags = json.at("cflags").get<std::string>();
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("run {} config: field \"guard\": {}", run_id, error.what()));
  }
}

/// "\nrecognized (fused): fused plan of 2 kernels (...)"; nothing for an annotated problem.
std::string recognition_line(const Recognition& recognition) {
  switch (recognition.source) {
    case Recognition::Source::Annotated:
      return "";
    case Recognition::Source::Matched:
    case Recognition::Source::Fused:
      return fmt::format("\nrecognized ({}): {}", source_name(recognition.source),
                         recognition.summary);
    case Recognition::Source::NotServed:
      break;
  }
  return "\nno template family serves it: " + recognition.reason;
}

}  // namespace

nlohmann::json guard_config(const GuardFlags& flags, int search_trials) {
  return {{"device", flags.device},         {"trials", flags.trials},
          {"search_trials", search_trials}, {"warmup", flags.warmup},
          {"iterations", flags.iterations}, {"budget_s", flags.budget_s},
          {"timeout_ms", flags.timeout_ms}, {"seed", flags.seed},
          {"cflags", flags.cflags}};
}

OptimizeSession::OptimizeSession(OptimizeFlags flags, const Run* resumed)
    : OptimizeSession(
          flags, resumed,
          load_recognized_problem(
              flags.problem_dir,
              recognize_options(flags.guard.workspace, flags.guard.python, flags.guard.device))) {}

OptimizeSession::OptimizeSession(OptimizeFlags flags, const Run* resumed,
                                 RecognizedProblem recognized)
    : flags_(std::move(flags)), recognition_(std::move(recognized.recognition)) {
  const SynthChoice synth = parse_synth(flags_.synth);
  if (resumed) {
    apply_guard_config(resumed->config.value("guard", nlohmann::json::object()), flags_.guard,
                       flags_.search_trials, resumed->id);
    flags_.guard.workloads = resumed->config.value("workloads", std::vector<std::string>{});
    flags_.baseline = resumed->config.value("baseline", std::string());
    flags_.keep_accuracy = resumed->config.value("keep_accuracy", false);
  }
  devices_ = search_devices(flags_.devices.empty() ? flags_.guard.device : flags_.devices,
                            flags_.cpu_workers);
  // A resumed run keeps its device; --device may add others after it.
  if (devices_.front().device != flags_.guard.device)
    devices_ = search_devices(flags_.guard.device, flags_.cpu_workers);

  SearchSetupOptions setup_options;
  setup_options.device = flags_.guard.device;
  setup_options.template_root = flags_.root;
  setup_options.extra_files = read_extra_files(flags_.files);
  setup_options.baseline = flags_.baseline;
  setup_options.require_templates = synth.code.empty() && !flags_.allow_no_template;
  setup_options.keep_accuracy = flags_.keep_accuracy;
  if (setup_options.require_templates && !recognition_.served())
    throw InputError(
        fmt::format("{}: nothing to search: {}", flags_.problem_dir, recognition_.reason));
  setup_ = std::make_unique<SearchSetup>(std::move(recognized.problem), setup_options);
  if (!synth.code.empty())
    code_ = std::make_unique<CodeSynthSetup>(synth.code, flags_.code, flags_.guard.workspace);

  // The search screens candidates with fewer correctness draws; the finalists' re-measurement
  // runs every draw, so the reported winner has passed the full guard.
  flags_.search_trials = std::min(flags_.search_trials, flags_.guard.trials);
  GuardFlags search_flags = flags_.guard;
  search_flags.no_baseline = true;
  search_flags.json_path.clear();
  search_flags.trials = flags_.search_trials;
  // Screening checks a few timed calls of each candidate, at secret positions; the finalists'
  // re-measurement checks every call (GuardOptions::checked_timed_calls).
  search_flags.checked_timed_calls = kSearchCheckedTimedCalls;
  search_flags.cpus = devices_.front().cpus;
  search_ = std::make_unique<GuardSession>(search_flags);
  final_guard_ = std::make_unique<GuardSession>(flags_.guard);
  // Calibrated (automatically in a fresh workspace) before the prompts and the skill conditions
  // quote the hardware: the first run and its replay must quote the same.
  search_->guard().calibration();
  workloads_ = search_->select_workloads(setup_->problem());
  target_ = setup_->target(workloads_);
  if (!synth.templates) target_.templates.clear();
  const Problem& problem = setup_->problem();
  if (code_) {
    target_.code_synthesizer = &code_->synthesizer();
    target_.hardware = hardware_facts(flags_.guard.workspace, flags_.guard.device);
    target_.knowledge = synthesis_knowledge(flags_.guard.workspace,
                                            problem.definition.ext.op_family, flags_.guard.device);
  }
  std::vector<std::string> uuids;
  for (const Workload& workload : workloads_) uuids.push_back(workload.uuid);
  const std::string hardware = hardware_name(flags_.guard.workspace, flags_.guard.device);
  condition_ = {problem.definition.ext.op_family, shape_class_of(problem.definition, workloads_),
                hardware, problem.definition.name};
  if (resumed) {
    target_.skill_hints =
        skill_hints_from_json(resumed->config.value("skill_hints", nlohmann::json::array()),
                              fmt::format("run {} config", resumed->id));
  } else if (!flags_.no_skills) {
    std::vector<std::string> templates;
    for (const BoundTemplate* bound : target_.templates) templates.push_back(bound->kernel().name);
    target_.skill_hints = retrieve_skill_hints(flags_.guard.workspace, condition_, templates);
  }
  target_.run_config = {
      {"guard", guard_config(flags_.guard, flags_.search_trials)},
      {"workloads", flags_.guard.workloads.empty() ? std::vector<std::string>{} : uuids},
      {"baseline", flags_.baseline},
      {"keep_accuracy", flags_.keep_accuracy},
      {"skill_hints", skill_hints_to_json(target_.skill_hints)}};
  evaluator_ = std::make_unique<GuardEvaluator>(search_->guard(), final_guard_->guard(), problem,
                                                workloads_, hardware);
  start_pool(search_flags, hardware);

  options_.budget = flags_.budget;
  options_.agents = parse_agent_list(flags_.agents);
  options_.policy = flags_.policy;
  const auto& policies = policy_names();
  if (std::find(policies.begin(), policies.end(), options_.policy) == policies.end())
    throw InputError(
        fmt::format("--policy {}: expected one of {}", options_.policy, fmt::join(policies, ", ")));
  options_.seed = flags_.seed;
  options_.plateau = flags_.plateau;
  // Compiling ahead on a CPU would steal cores from the timed runs; on a GPU it hides nvcc's
  // tens of seconds per GEMM candidate behind the measurements, on half the host's cores.
  const int gpu_build_ahead =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 2, 2, 8);
  options_.build_ahead =
      flags_.build_ahead >= 0
          ? flags_.build_ahead
          : (backend_for(flags_.guard.device).builds_ahead() ? gpu_build_ahead : 0);
  options_.in_flight = static_cast<int>(pool_->capacity());
  options_.final_candidates = flags_.final_candidates;
  options_.final_rounds = flags_.final_rounds;
  if (flags_.wall_time_s > 0) options_.wall_time_s = flags_.wall_time_s;
  if (code_) {
    options_.code_share = flags_.code.code_share;
    options_.synthesis_parallel = flags_.code.synthesis_parallel;
    options_.repair_rounds = code_->repair_rounds();
    options_.max_synthesis_tokens = code_->max_tokens();
    options_.max_synthesis_cost_usd = code_->max_cost_usd();
  }
}

OptimizeSession::~OptimizeSession() = default;

// One evaluator per device after the first (the first's is evaluator_), each calibrated as its
// evaluator starts (automatically in a fresh workspace), so that its speed-of-light floor holds
// from its first candidate; and the pool over all of them.
void OptimizeSession::start_pool(const GuardFlags& search_flags, const std::string& hardware) {
  std::vector<LocalEvaluationPool::Slot> slots{{evaluator_.get(), devices_.front().where}};
  for (std::size_t i = 1; i < devices_.size(); ++i) {
    GuardFlags flags = search_flags;
    flags.device = devices_[i].device;
    flags.cpus = devices_[i].cpus;
    auto& guard = device_guards_.emplace_back(std::make_unique<GuardSession>(flags));
    auto& evaluator = device_evaluators_.emplace_back(std::make_unique<GuardEvaluator>(
        guard->guard(), guard->guard(), setup_->problem(), workloads_, hardware));
    // The search compares results from every device as one: only devices of one model do.
    const std::string model = hardware_name(flags.workspace, flags.device);
    if (model != hardware)
      throw InputError(fmt::format(
          "--device {}: {} is {} but {} is {}; expected devices of one model, whose times "
          "compare",
          flags_.devices, devices_.front().device, hardware, flags.device, model));
    slots.push_back({evaluator.get(), devices_[i].where});
  }
  if (flags_.remote_pool)
    pool_ = flags_.remote_pool(
        {&setup_->problem(), &workloads_, search_.get(), search_flags, hardware, std::move(slots)});
  else if (slots.size() == 1)
    pool_ = std::make_unique<SerialPool>(*evaluator_);
  else
    pool_ = std::make_unique<LocalEvaluationPool>(std::move(slots));
}

std::string OptimizeSession::description() const {
  std::string text = fmt::format(
      "optimizing {} on {} ({}), {} template(s); {} correctness draws per workload while "
      "searching, {} for the finalists",
      problem().definition.name, flags_.guard.device, target_.workload_class,
      target_.templates.size(), flags_.search_trials, flags_.guard.trials);
  if (devices_.size() > 1) {
    std::vector<std::string> where;
    for (const SearchDevice& device : devices_) where.push_back(device.where);
    text += fmt::format("\nmeasuring on {} at once: {}; the finalists re-measured on {}",
                        devices_.size(), fmt::join(where, ", "),
                        devices_.front().cpus.empty() ? devices_.front().where : "every core");
  }
  text += recognition_line(recognition_);
  if (const auto warning =
          memory_warning(problem().definition, workloads_, available_host_memory()))
    text += "\n" + *warning;
  if (code_) text += "\n" + code_->description();
  return text;
}

OptimizeSummary OptimizeSession::run(Workspace& workspace, ProgressSink& progress,
                                     std::optional<int64_t> resume_id,
                                     const std::atomic<int>* stop) {
  // The reference's draws (minutes a workload on GPU-sized shapes) are told as they go, and a
  // stop request ends one under way, on every device's oracle. Both hooks end with this run:
  // `progress` and `stop` may not outlive it.
  const std::vector<Oracle*> told = {&search_->oracle(), &final_guard_->oracle()};
  std::vector<Oracle*> stoppable = told;
  for (const auto& guard : device_guards_) stoppable.push_back(&guard->oracle());
  for (Oracle* oracle : told)
    oracle->report_progress([&progress](const std::string& line) { progress.message(line); });
  for (Oracle* oracle : stoppable) oracle->stop_on(stop);
  struct Unhook {
    const std::vector<Oracle*>& told;
    const std::vector<Oracle*>& stoppable;
    ~Unhook() {
      for (Oracle* oracle : told) oracle->report_progress({});
      for (Oracle* oracle : stoppable) oracle->stop_on(nullptr);
    }
  } unhook{told, stoppable};
  Orchestrator orchestrator(target_, *evaluator_, *pool_, workspace, options_, progress);
  if (stop) orchestrator.stop_on(*stop);
  return resume_id ? orchestrator.resume(*resume_id) : orchestrator.run();
}

}  // namespace kernelarc
