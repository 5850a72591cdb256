#include "oracle/graph_trace.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "oracle/oracle_cache.h"
#include "oracle/python_bridge.h"
#include "oracle/python_detection.h"
#include "oracle/python_environment.h"
#include "oracle/subprocess.h"

namespace kernelarc {

namespace {

constexpr int kExitNoTorch = 3;  // python/kernelarc_trace.py: torch cannot be imported
// A trace takes seconds; one that runs this long is stuck in the reference.
constexpr auto kTraceTimeout = std::chrono::seconds(300);

// The tracer and the modules it imports: a change to any of them changes the cache keys.
constexpr std::string_view kTracerFiles[] = {
    "kernelarc_trace.py",         "kernelarc_trace_recorder.py", "kernelarc_trace_merge.py",
    "kernelarc_trace_shapes.py",  "kernelarc_oracle.py",         "kernelarc_oracle_inputs.py",
    "kernelarc_oracle_tensors.py"};

std::filesystem::path tracer_path() {
  return data_dir() / "python" / "kernelarc_trace.py";
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<int64_t> primes_from(int64_t first, std::size_t count) {
  std::vector<int64_t> primes;
  for (int64_t candidate = first; primes.size() < count; ++candidate) {
    bool prime = candidate > 1;
    for (int64_t divisor = 2; prime && divisor * divisor <= candidate; ++divisor) {
      prime = candidate % divisor != 0;
    }
    if (prime) primes.push_back(candidate);
  }
  return primes;
}

std::vector<const Axis*> var_axes(const Definition& definition) {
  std::vector<const Axis*> axes;
  for (const Axis& axis : definition.axes) {
    if (axis.kind == AxisKind::Var) axes.push_back(&axis);
  }
  return axes;
}

/// The pairs of axis assignments to trace, in the order they are tried, or why there are none.
struct TracedAxes {
  std::vector<std::vector<AxisValues>> attempts;
  std::string error;
};

TracedAxes choose_traced_axes(const Problem& problem) {
  const Definition& definition = problem.definition;
  const std::vector<const Axis*> vars = var_axes(definition);
  TracedAxes result;
  // Disjoint prime sets make every size's factorisation into axes unique.
  const std::vector<int64_t> first = primes_from(17, vars.size());
  const std::vector<int64_t> second =
      primes_from(std::max<int64_t>(41, first.empty() ? 0 : first.back() + 1), vars.size());
  std::string prime_error;
  try {
    std::vector<AxisValues> traces;
    for (const auto* primes : {&first, &second}) {
      Workload workload;
      for (std::size_t index = 0; index < vars.size(); ++index) {
        workload.axes[vars[index]->name] = (*primes)[index];
      }
      traces.push_back(resolve_axes(definition, workload));
    }
    result.attempts.push_back(std::move(traces));
  } catch (const InputError& error) {
    prime_error = error.what();
  }
  // Real sizes, also when the primes are too small for the reference itself (topk(x, 40) of
  // rows of 17): the reference must accept every workload.
  const auto& workloads = problem.workloads;
  bool found = vars.empty();
  for (std::size_t a = 0; a < workloads.size() && !found; ++a) {
    for (std::size_t b = a + 1; b < workloads.size() && !found; ++b) {
      bool all_differ = true;
      for (const Axis* axis : vars) {
        all_differ =
            all_differ && workloads[a].axes.at(axis->name) != workloads[b].axes.at(axis->name);
      }
      if (all_differ) {
        result.attempts.push_back(
            {resolve_axes(definition, workloads[a]), resolve_axes(definition, workloads[b])});
        found = true;
      }
    }
  }
  if (result.attempts.empty())
    result.error = "prime values of the var axes break the definition (" + prime_error +
                   "), and no two workloads differ in every var axis";
  return result;
}

OrderedJson axes_json(const Definition& definition) {
  OrderedJson axes = OrderedJson::object();
  for (const Axis& axis : definition.axes) {
    switch (axis.kind) {
      case AxisKind::Var:
        axes[axis.name] = {{"kind", "var"}};
        break;
      case AxisKind::Const:
        axes[axis.name] = {{"kind", "const"}, {"value", axis.value}};
        break;
      case AxisKind::Expr:
        axes[axis.name] = {{"kind", "expr"}, {"expression", axis.expression}};
        break;
    }
  }
  return axes;
}

/// Int and bool scalar inputs as the first workload gives them; a float one is a sentinel the
/// tracer picks.
/// The int and bool scalar inputs, which the trace bakes into the graph, from the first
/// workload; `error` says which workload gives another value (a plan for one value would be
/// wrong for it).
OrderedJson scalars_json(const Problem& problem, std::string& error) {
  OrderedJson scalars = OrderedJson::object();
  if (problem.workloads.empty()) return scalars;
  const Workload& first = problem.workloads.front();
  for (const TensorSpec& spec : problem.definition.inputs) {
    auto found = first.inputs.find(spec.name);
    if (!spec.is_scalar() || dtype_is_floating(spec.dtype) || found == first.inputs.end() ||
        found->second.kind != InputKind::Scalar) {
      continue;
    }
    const double value = found->second.scalar_value;
    for (const Workload& other : problem.workloads) {
      auto given = other.inputs.find(spec.name);
      if (given != other.inputs.end() && given->second.kind == InputKind::Scalar &&
          given->second.scalar_value == value)
        continue;
      error = fmt::format(
          "input {} ({} scalar): traced as a constant, {} in workload {}, but workload {} gives "
          "{}; a kernel is generated for one value (make it a tensor, or bench each value as its "
          "own problem)",
          spec.name, dtype_name(spec.dtype), value, first.uuid, other.uuid,
          given == other.inputs.end() || given->second.kind != InputKind::Scalar
              ? std::string("no scalar")
              : fmt::format("{}", given->second.scalar_value));
      return scalars;
    }
    if (spec.dtype == DType::Bool) {
      scalars[spec.name] = value != 0;
    } else {
      scalars[spec.name] = static_cast<int64_t>(value);
    }
  }
  return scalars;
}

/// The tracer's result file as a GraphTraceResult; nullopt when it is not of the documented
/// form.
std::optional<GraphTraceResult> parse_result(const std::string& text) {
  OrderedJson json = OrderedJson::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("ok") ||
      !json["ok"].is_boolean()) {
    return std::nullopt;
  }
  GraphTraceResult result;
  result.ok = json["ok"].get<bool>();
  if (result.ok) {
    if (!json.contains("graph") || !json["graph"].is_object() ||
        json["graph"].value("version", 0) != 1) {
      return std::nullopt;
    }
    result.graph = std::move(json["graph"]);
  } else {
    if (!json.contains("error") || !json["error"].is_string()) return std::nullopt;
    result.error = json["error"].get<std::string>();
  }
  return result;
}

/// Removes a directory tree when it goes out of scope.
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

std::filesystem::path unique_scratch(const std::filesystem::path& cache_dir) {
  static std::atomic<int> counter = 0;
  return cache_dir / ".scratch" /
         ("trace-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
}

/// What a tracer run left: its result file's text, or why it has none that is the reference's
/// doing (it ran too long).
struct TracerRun {
  std::string text;
  std::string stopped;
};

TracerRun run_tracer(const std::string& python, const std::filesystem::path& job,
                     const std::filesystem::path& scratch) {
  const auto out = scratch / "out.json";
  const auto log = scratch / "tracer.log";
  const auto deadline = std::chrono::steady_clock::now() + kTraceTimeout;
  auto launch = [&](const std::string& interpreter) {
    std::error_code ignored;
    std::filesystem::remove(out, ignored);
    std::filesystem::remove(log, ignored);
    return run_process(
        {interpreter, tracer_path().string(), job.string(), out.string()}, log,
        [&] { return std::chrono::steady_clock::now() < deadline; }, oracle_python_environment(),
        /*python_script=*/true);
  };
  std::string origin;
  std::vector<std::string> candidates = python_candidates(python, origin);
  const std::string rule = detection_rule(origin, candidates);
  if (auto known = detected_python(rule)) candidates = {known->interpreter};

  std::string tried;
  for (const std::string& candidate : candidates) {
    ProcessResult process = launch(candidate);
    std::string tail = file_tail(log);
    if (!process.started || process.exited_with(kExitNoTorch)) {
      tried += "\n  " + candidate + ": " +
               (process.started && !tail.empty() ? tail.substr(tail.rfind('\n') + 1)
                                                 : describe_end(process));
      continue;
    }
    remember_python(rule, {candidate, ""});
    if (process.stopped) {
      return {"", "tracing the reference took over " + std::to_string(kTraceTimeout.count()) +
                      " s" + (tail.empty() ? "" : "; its output ends with: " + tail)};
    }
    if (!process.exited_with(0)) {
      throw InternalError("the tracer " + tracer_path().string() + " failed (" +
                          describe_end(process) + ")" + (tail.empty() ? "" : ": " + tail));
    }
    if (!std::filesystem::exists(out)) {
      throw InternalError("the tracer " + tracer_path().string() + " wrote no result file " +
                          out.string());
    }
    return {read_text(out), ""};
  }
  throw InputError("no Python that can import torch was found to trace the reference (" + origin +
                   "); tried:" + tried +
                   "\nSet KERNELARC_PYTHON to a Python interpreter with torch installed, e.g. "
                   "KERNELARC_PYTHON=/usr/bin/python3.");
}

}  // namespace

const std::string& trace_script_version() {
  static const std::string version = [] {
    ContentHasher hasher;
    for (std::string_view name : kTracerFiles) {
      auto path = tracer_path().parent_path() / name;
      if (!std::filesystem::exists(path)) {
        throw InternalError("the tracer script " + path.string() +
                            " is missing (set KERNELARC_DATA_DIR to kernelarc's data directory)");
      }
      hasher.add(read_text(path));
    }
    return hasher.hex();
  }();
  return version;
}

namespace {

GraphTraceResult trace_once(const Problem& problem, const std::vector<AxisValues>& traces,
                            const OrderedJson& scalars, const std::string& python,
                            const std::filesystem::path& cache_dir) {
  const Definition& definition = problem.definition;
  OrderedJson job = {{"definition", definition_to_job_json(definition)},
                     {"axes", axes_json(definition)},
                     {"traces", {traces[0], traces[1]}},
                     {"scalars", scalars}};
  ContentHasher key;
  key.add(definition.raw.dump())
      .add(trace_script_version())
      .add(job["traces"].dump())
      .add(job["scalars"].dump());
  const auto cache_file =
      cache_dir / (cache_dir_name(definition.name) + "-" + key.hex() + ".trace.json");
  if (std::filesystem::exists(cache_file)) {
    if (auto cached = parse_result(read_text(cache_file))) return *cached;
    // Not of the tracer's form (a different writer, a damaged disk): traced again.
    std::error_code ignored;
    std::filesystem::remove(cache_file, ignored);
  }

  ScratchDir scratch(unique_scratch(cache_dir));
  const auto job_file = scratch.path / "job.json";
  write_file_atomically(job_file, job.dump());
  const TracerRun run = run_tracer(python, job_file, scratch.path);
  // Not cached: a slow machine may be the cause.
  if (!run.stopped.empty()) return {false, {}, run.stopped};
  std::optional<GraphTraceResult> result = parse_result(run.text);
  if (!result) {
    // Kept beside the cache for a look; the scratch directory goes away.
    auto kept = cache_file;
    kept += ".malformed";
    write_file_atomically(kept, run.text);
    throw InternalError("the tracer " + tracer_path().string() +
                        " wrote a malformed result, kept as " + kept.string() +
                        " (expected {\"ok\": true, \"graph\": {\"version\": 1, ...}} or "
                        "{\"ok\": false, \"error\": \"...\"})");
  }
  write_file_atomically(cache_file, run.text);
  return *result;
}

}  // namespace

GraphTraceResult trace_reference(const Problem& problem, const std::string& python,
                                 const std::filesystem::path& cache_dir) {
  const TracedAxes axes = choose_traced_axes(problem);
  if (!axes.error.empty()) return {false, {}, axes.error};
  std::string scalar_error;
  const OrderedJson scalars = scalars_json(problem, scalar_error);
  if (!scalar_error.empty()) return {false, {}, scalar_error};
  GraphTraceResult first;
  for (std::size_t i = 0; i < axes.attempts.size(); ++i) {
    GraphTraceResult result = trace_once(problem, axes.attempts[i], scalars, python, cache_dir);
    if (result.ok) return result;
    if (i == 0)
      first = std::move(result);
    else
      first.error += "; at two workloads' sizes: " + result.error;
  }
  return first;
}

}  // namespace kernelarc
