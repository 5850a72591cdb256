#include "oracle/python_bridge.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "backend/cpu/cpu_cache.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "oracle/oracle_cache.h"
#include "oracle/python_detection.h"
#include "oracle/python_environment.h"
#include "oracle/subprocess.h"

namespace kernelarc {

namespace {

// Exit codes of python/kernelarc_oracle.py.
constexpr int kExitNoTorch = 3;
constexpr int kExitNoDevice = 4;

std::filesystem::path script_path() {
  return data_dir() / "python" / "kernelarc_oracle.py";
}

// The script and the modules it imports: a change to any of them changes the cache keys.
constexpr std::string_view kScriptFiles[] = {"kernelarc_oracle.py", "kernelarc_oracle_inputs.py",
                                             "kernelarc_oracle_tensors.py"};

std::string_view input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::Scalar:
      return "scalar";
    case InputKind::Safetensors:
      return "safetensors";
    case InputKind::Custom:
      return "custom";
    case InputKind::Random:
      break;
  }
  return "random";
}

OrderedJson spec_json(const TensorSpec& spec) {
  OrderedJson json = {
      {"shape", nullptr}, {"dtype", dtype_name(spec.dtype)}, {"description", spec.description}};
  if (spec.shape) json["shape"] = *spec.shape;
  return json;
}

OrderedJson workload_json(const Workload& workload) {
  OrderedJson inputs = OrderedJson::object();
  for (const auto& [name, input] : workload.inputs) {
    OrderedJson entry = {{"type", input_kind_name(input.kind)}};
    if (input.kind == InputKind::Scalar) entry["value"] = input.scalar_value;
    if (input.kind == InputKind::Safetensors) {
      entry["path"] = input.path;
      entry["tensor_key"] = input.tensor_key;
    }
    inputs[name] = std::move(entry);
  }
  return {{"uuid", workload.uuid}, {"axes", workload.axes}, {"inputs", std::move(inputs)}};
}

OrderedJson tolerance_json(const Tolerance& tolerance) {
  return {{"max_atol", tolerance.max_atol},
          {"max_rtol", tolerance.max_rtol},
          {"required_matched_ratio", tolerance.required_matched_ratio}};
}

std::vector<OrderedJson> read_events(const std::filesystem::path& path) {
  std::vector<OrderedJson> events;
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    // A line cut short by a killed interpreter is simply not an event.
    OrderedJson event = OrderedJson::parse(line, nullptr, false);
    if (!event.is_discarded() && event.is_object() && event.contains("event")) {
      events.push_back(std::move(event));
    }
  }
  return events;
}

const OrderedJson* environment_event(const std::vector<OrderedJson>& events) {
  for (const OrderedJson& event : events) {
    if (event["event"] == "env") return &event;
  }
  return nullptr;
}

/// Reads the lines the script appends to its results file while it runs, and tells the
/// observer of each job that starts or ends.
class EventFollower {
 public:
  EventFollower(std::filesystem::path results, JobObserver* observer)
      : results_(std::move(results)), observer_(observer) {}

  void poll() {
    if (observer_ == nullptr) return;
    std::ifstream file(results_, std::ios::binary);
    if (!file) return;
    file.seekg(0, std::ios::end);
    const auto size = static_cast<std::streamoff>(file.tellg());
    if (size < read_) read_ = 0, partial_.clear();  // written afresh (another interpreter tried)
    file.seekg(read_);
    std::string text(static_cast<std::size_t>(size - read_), '\0');
    file.read(text.data(), static_cast<std::streamsize>(text.size()));
    read_ += file.gcount();
    partial_.append(text, 0, static_cast<std::size_t>(file.gcount()));
    std::size_t begin = 0;
    for (auto end = partial_.find('\n'); end != std::string::npos;
         begin = end + 1, end = partial_.find('\n', begin))
      tell(OrderedJson::parse(partial_.substr(begin, end - begin), nullptr, false));
    partial_.erase(0, begin);
  }

 private:
  void tell(const OrderedJson& event) {
    if (!event.is_object() || !event.contains("id")) return;
    const std::string id = event.value("id", "");
    if (event.value("event", "") == "start") observer_->started(id);
    if (event.value("event", "") == "done") observer_->ended(id, event.value("ok", false));
  }

  std::filesystem::path results_;
  JobObserver* observer_;
  std::streamoff read_ = 0;
  std::string partial_;
};

/// The inputs and outputs of the workload that job `id` (a trial's or a timing's) ran.
std::optional<double> job_bytes(const Problem& problem, const std::vector<PythonTrialJob>& trials,
                                const std::vector<PythonTimingJob>& timings,
                                const std::string& id) {
  const Workload* workload = nullptr;
  for (const auto& job : trials)
    if (job.id == id) workload = job.workload;
  for (const auto& job : timings)
    if (job.id == id) workload = job.workload;
  if (workload == nullptr) return std::nullopt;
  return tensor_bytes(problem.definition, resolve_axes(problem.definition, *workload));
}

/// Removes a directory tree when it goes out of scope, whatever happened.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(std::filesystem::path dir) : path(std::move(dir)) {
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

}  // namespace

struct PythonBridge::Launch {
  ProcessResult process;
  std::vector<OrderedJson> events;
  std::string log_tail;
};

OrderedJson definition_to_job_json(const Definition& definition) {
  OrderedJson inputs = OrderedJson::object();
  for (const TensorSpec& spec : definition.inputs) inputs[spec.name] = spec_json(spec);
  OrderedJson outputs = OrderedJson::object();
  for (const TensorSpec& spec : definition.outputs) outputs[spec.name] = spec_json(spec);
  return {{"name", definition.name},
          {"op_type", definition.op_type},
          {"inputs", std::move(inputs)},
          {"outputs", std::move(outputs)},
          {"reference", definition.reference},
          {"baseline", definition.ext.baseline},
          {"custom_inputs_entrypoint", definition.custom_inputs_entrypoint}};
}

const std::string& oracle_script_version() {
  static const std::string version = [] {
    ContentHasher hasher;
    for (std::string_view name : kScriptFiles) {
      auto path = script_path().parent_path() / name;
      std::ifstream file(path, std::ios::binary);
      if (!file) {
        throw InternalError("the oracle script " + path.string() +
                            " is missing (set KERNELARC_DATA_DIR to kernelarc's data directory)");
      }
      std::stringstream text;
      text << file.rdbuf();
      hasher.add(text.str());
    }
    return hasher.hex();
  }();
  return version;
}

PythonBridge::PythonBridge(std::string python, std::string device, std::chrono::seconds job_timeout)
    : python_(std::move(python)), device_(std::move(device)), job_timeout_(job_timeout) {}

std::vector<std::string> python_candidates(const std::string& configured, std::string& origin) {
  if (!configured.empty()) {
    origin = "the configured interpreter";
    return {configured};
  }
  // An explicit choice that fails must be reported, not silently replaced by another Python.
  if (const char* env = std::getenv("KERNELARC_PYTHON"); env != nullptr && *env != '\0') {
    origin = "KERNELARC_PYTHON=" + std::string(env);
    return {env};
  }
  origin = "KERNELARC_PYTHON is not set";
  return {"python3", "/usr/bin/python3"};
}

std::vector<std::string> PythonBridge::candidates(std::string& origin) const {
  return python_candidates(python_, origin);
}

int PythonBridge::stop_signal() const {
  return stop_ != nullptr ? stop_->load(std::memory_order_relaxed) : 0;
}

OracleServer& PythonBridge::server_for(const std::string& interpreter, const std::string& problem,
                                       const std::filesystem::path& log_dir) {
  const bool reusable = server_ != nullptr && server_->alive() &&
                        server_->interpreter() == interpreter &&
                        (server_problem_.empty() || problem.empty() || server_problem_ == problem);
  if (!reusable) {
    server_.reset();
    server_ = std::make_unique<OracleServer>(interpreter, script_path(), log_dir,
                                             oracle_python_environment(), /*may_use_host=*/true);
    server_problem_.clear();
  }
  if (!problem.empty()) server_problem_ = problem;
  return *server_;
}

PythonBridge::Launch PythonBridge::launch_with(const std::string& interpreter,
                                               const std::filesystem::path& job_file,
                                               const std::filesystem::path& results,
                                               const std::filesystem::path& log,
                                               const std::optional<std::string>& served_problem,
                                               const std::function<void()>& on_poll) {
  if (const int signal = stop_signal()) throw Interrupted(signal);
  std::error_code ignored;
  std::filesystem::remove(results, ignored);
  std::filesystem::remove(log, ignored);

  // The watchdog measures progress by the results file growing (one line per job started/done);
  // a stop request ends the interpreter at once, without waiting for the job at work.
  std::uintmax_t last_size = 0;
  auto last_change = std::chrono::steady_clock::now();
  auto keep_going = [&] {
    if (stop_signal() != 0) return false;
    std::error_code error;
    std::uintmax_t size = std::filesystem::file_size(results, error);
    auto now = std::chrono::steady_clock::now();
    if (!error && size != last_size) {
      last_size = size;
      last_change = now;
      on_poll();
    }
    return now - last_change < job_timeout_;
  };
  Launch launch;
  if (served_problem) {
    OracleServer& server =
        server_for(interpreter, *served_problem, log.parent_path().parent_path());
    launch.process = server.run(job_file, keep_going);
    launch.log_tail = server.last_output();
    if (!server.alive()) server_.reset();
  } else {
    launch.process = run_process({interpreter, script_path().string(), job_file.string()}, log,
                                 keep_going, oracle_python_environment(), /*python_script=*/true);
    launch.log_tail = file_tail(log);
  }
  launch.events = read_events(results);
  if (environment_event(launch.events) != nullptr) ++runs_;
  // The jobs it finished wrote their files atomically; the one it cut short wrote none, and is
  // not the reference's failure.
  if (launch.process.stopped)
    if (const int signal = stop_signal()) throw Interrupted(signal);
  if (launch.process.exited_with(kExitNoDevice)) {
    throw InputError("oracle device '" + device_ + "' is unusable with " + interpreter + ": " +
                     launch.log_tail);
  }
  return launch;
}

PythonBridge::Launch PythonBridge::launch(const std::filesystem::path& job_file,
                                          const std::filesystem::path& results,
                                          const std::filesystem::path& log,
                                          const std::optional<std::string>& served_problem,
                                          const std::function<void()>& on_poll) {
  if (!interpreter_.empty())
    return launch_with(interpreter_, job_file, results, log, served_problem, on_poll);
  std::string origin;
  std::vector<std::string> tries = candidates(origin);
  const std::string rule = detection_rule(origin, tries);
  // Another bridge of this process found it already: only that interpreter is started.
  if (auto known = detected_python(rule)) tries = {known->interpreter};
  std::string tried;
  for (const std::string& candidate : tries) {
    Launch result = launch_with(candidate, job_file, results, log, served_problem, on_poll);
    if (const OrderedJson* env = environment_event(result.events)) {
      interpreter_ = candidate;
      environment_ = "python " + env->value("python", "?") + ", torch " + env->value("torch", "?") +
                     " (" + env->value("device", device_) + ")";
      remember_python(rule, {interpreter_, environment_});
      return result;
    }
    std::string why = result.process.exited_with(kExitNoTorch) && !result.log_tail.empty()
                          ? result.log_tail.substr(result.log_tail.rfind('\n') + 1)
                          : describe_end(result.process) +
                                (result.log_tail.empty() ? "" : ": " + result.log_tail);
    tried += "\n  " + candidate + ": " + why;
  }
  throw InputError("no Python that can import torch was found (" + origin + "); tried:" + tried +
                   "\nSet KERNELARC_PYTHON to a Python interpreter with torch installed, e.g. "
                   "KERNELARC_PYTHON=/usr/bin/python3.");
}

std::map<std::string, PythonJobOutcome> PythonBridge::run(
    const Problem& problem, const std::vector<PythonTrialJob>& trials,
    const std::vector<PythonTimingJob>& timings, const std::filesystem::path& scratch_dir,
    JobObserver* observer) {
  ScratchDir scratch(scratch_dir);
  auto definition_file = scratch.path / "definition.json";
  const std::string definition = definition_to_job_json(problem.definition).dump();
  write_file_atomically(definition_file, definition);
  // Trial jobs share the kept interpreter of their problem (its definition and files).
  std::optional<std::string> served_problem;
  if (timings.empty())
    served_problem = std::filesystem::absolute(problem.dir).string() + "\n" + definition;

  std::map<std::string, PythonJobOutcome> outcomes;
  std::set<std::string> remaining;
  for (const auto& job : trials) remaining.insert(job.id);
  for (const auto& job : timings) remaining.insert(job.id);

  for (int round = 1; !remaining.empty(); ++round) {
    std::string suffix = std::to_string(round);
    auto results = scratch.path / ("results-" + suffix + ".jsonl");
    OrderedJson job_file = {{"definition", definition_file.string()},
                            {"problem_dir", std::filesystem::absolute(problem.dir).string()},
                            {"device", device_},
                            {"results", results.string()},
                            {"jobs", OrderedJson::array()},
                            {"timing", OrderedJson::array()}};
    for (const auto& job : trials) {
      if (!remaining.contains(job.id)) continue;
      job_file["jobs"].push_back({{"id", job.id},
                                  {"workload", workload_json(*job.workload)},
                                  {"axes", resolve_axes(problem.definition, *job.workload)},
                                  {"trial", job.trial},
                                  {"seed", job.seed},
                                  {"inputs_out", job.inputs_out.string()},
                                  {"expected_out", job.expected_out.string()},
                                  {"inputs_in", job.inputs_in.string()}});
      if (!job.shared.empty()) {
        const Workload& source = *job.shared_source;
        job_file["jobs"].back()["shared"] = {{"names", job.shared},
                                             {"seed", job.shared_seed},
                                             {"path", job.shared_path.string()},
                                             {"workload", workload_json(source)},
                                             {"axes", resolve_axes(problem.definition, source)}};
      }
    }
    for (const auto& job : timings) {
      if (!remaining.contains(job.id)) continue;
      job_file["timing"].push_back({{"id", job.id},
                                    {"workload", workload_json(*job.workload)},
                                    {"axes", resolve_axes(problem.definition, *job.workload)},
                                    {"baseline", baseline_name(job.baseline)},
                                    {"tolerance", tolerance_json(job.workload->tolerance)},
                                    {"warmup", job.warmup},
                                    {"iterations", job.iterations},
                                    {"min_iterations", job.min_iterations},
                                    {"timing_budget_s", job.timing_budget_s},
                                    {"warmup_limit_s", job.warmup_limit_s},
                                    {"seed", job.seed},
                                    {"cpu_cache_bytes", last_level_cache().bytes},
                                    {"out", job.out.string()}});
      if (const auto& declared = problem.definition.ext.baseline_tolerance)
        job_file["timing"].back()["baseline_tolerance"] = tolerance_json(*declared);
    }
    auto job_path = scratch.path / ("job-" + suffix + ".json");
    write_file_atomically(job_path, job_file.dump());
    EventFollower follower(results, observer);
    Launch result = launch(job_path, results, scratch.path / ("python-" + suffix + ".log"),
                           served_problem, [&] { follower.poll(); });
    follower.poll();  // what it wrote after the watchdog last looked

    std::string running;
    for (const OrderedJson& event : result.events) {
      std::string id = event.value("id", "");
      if (event["event"] == "start") running = id;
      if (event["event"] != "done" || !remaining.contains(id)) continue;
      PythonJobOutcome outcome;
      outcome.ok = event.value("ok", false);
      outcome.error = event.value("error", "");
      // Only the reference's own failure is remembered; a bad input file or a full disk can
      // be fixed without changing the problem.
      outcome.cacheable = event.value("kind", "reference") == "reference";
      outcomes[id] = outcome;
      remaining.erase(id);
      running.clear();
    }
    const ProcessResult& process = result.process;
    if (process.exited_with(0)) {
      for (const std::string& id : remaining) {
        outcomes[id] = {false, "the oracle script finished without reporting this job", false};
        if (observer) observer->ended(id, false);
      }
      break;
    }
    if (running.empty()) {
      throw InternalError("the oracle script failed outside any job (" + describe_end(process) +
                          "); its output ends with:\n" + result.log_tail);
    }
    std::string error =
        process.stopped ? "the reference made no progress for " +
                              std::to_string(job_timeout_.count()) + " s and was stopped"
                        : "the Python process running the reference died (" +
                              describe_end(process, job_bytes(problem, trials, timings, running)) +
                              ")" + (result.log_tail.empty() ? "" : ": " + result.log_tail);
    outcomes[running] = {false, error, true};
    if (observer) observer->ended(running, false);
    remaining.erase(running);
  }
  return outcomes;
}

std::string PythonBridge::description(const std::filesystem::path& scratch_dir) {
  if (environment_.empty()) {
    // Described by another bridge of this process: no interpreter is started for the words.
    std::string origin;
    const std::vector<std::string> tries = candidates(origin);
    if (auto known = detected_python(detection_rule(origin, tries));
        known && !known->environment.empty()) {
      interpreter_ = known->interpreter;
      environment_ = known->environment;
      return environment_;
    }
  }
  if (environment_.empty()) {
    ScratchDir scratch(scratch_dir);
    auto results = scratch.path / "results.jsonl";
    OrderedJson job_file = {{"device", device_}, {"results", results.string()}};
    auto job_path = scratch.path / "job.json";
    write_file_atomically(job_path, job_file.dump());
    launch(job_path, results, scratch.path / "python.log", std::string(), [] {});
  }
  return environment_;
}

}  // namespace kernelarc
