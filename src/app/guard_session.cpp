#include "app/guard_session.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "app/table.h"
#include "backend/backend.h"
#include "core/error.h"
#include "diagnosis/diagnosis.h"
#include "eval/speed_of_light.h"
#include "optimize/search_setup.h"

namespace kernelarc {

namespace {

std::vector<std::string> split_flags(const std::string& text) {
  std::istringstream stream(text);
  std::vector<std::string> parts;
  for (std::string part; stream >> part;) parts.push_back(part);
  return parts;
}

std::string format_ms(const std::optional<double>& ms) {
  return ms ? fmt::format("{:.4f}", *ms) : "-";
}

void print_traces(const Problem& problem, const std::vector<Trace>& traces, std::ostream& out) {
  TextTable table({"workload", "axes", "status", "max_abs_err", "median_ms", "ci95_ms",
                   "p10-p90_ms", "runs", "eager_ms", "compiled_ms", "speedup", "sol_ms",
                   "sol_score"});
  std::vector<std::string> logs;
  for (const Trace& trace : traces) {
    const auto uuid = trace.workload.value("uuid", std::string("?"));
    const Workload* workload = find_workload(problem, uuid);
    if (workload == nullptr) workload = &problem.workloads.front();
    std::vector<std::string> row{
        uuid.substr(0, 12), format_axes(workload->axes), std::string(status_name(trace.status)),
        trace.correctness ? fmt::format("{:.2e}", trace.correctness->max_absolute_error) : "-"};
    if (trace.status == EvalStatus::Passed && trace.latency_ms) {
      const auto& latency = *trace.latency_ms;
      row.push_back(fmt::format("{:.4f}", latency.median));
      row.push_back(fmt::format("{:.4f}-{:.4f}", latency.ci_low, latency.ci_high));
      row.push_back(fmt::format("{:.4f}-{:.4f}", latency.p10, latency.p90));
      row.push_back(std::to_string(latency.samples));
      row.push_back(format_ms(trace.eager_ms));
      row.push_back(format_ms(trace.compiled_ms));
      const auto baseline = trace.baseline_ms();  // the faster of eager and compiled
      row.push_back(baseline ? fmt::format("{:.2f}x", *baseline / latency.median) : "-");
      row.push_back(format_ms(trace.sol_ms));
      const auto score = trace.sol_score();
      row.push_back(
          score ? fmt::format("{:.3f}{}", *score, trace.sol_bound_beaten() ? " (bound beaten)" : "")
                : "-");
      if (trace.sol_bound_beaten())
        logs.push_back(fmt::format("{}: {}", uuid.substr(0, 12), kSolBoundBeatenAdvice));
    } else {
      logs.push_back(fmt::format("{}: {}", uuid.substr(0, 12), trace.log));
    }
    table.add_row(std::move(row));
  }
  table.print(out);
  for (const auto& log : logs) out << log << '\n';
}

}  // namespace

GuardSession::GuardSession(const GuardFlags& flags) : flags_(flags) {
  OracleOptions oracle_options;
  oracle_options.cache_dir = std::filesystem::path(flags.workspace) / "oracle";
  oracle_options.python = flags.python;
  oracle_options.device = backend_for(flags.device).kind();
  oracle_options.seed = flags.seed;
  oracle_options.worker_executable = flags.worker_executable;
  // Baselines are timed by the candidates' rule: as many calls as the budget holds, within the
  // guard's bounds.
  oracle_options.timing_budget_s = flags.budget_s;
  oracle_options.min_iterations = GuardOptions{}.min_iterations;
  oracle_options.warmup_limit_s = flags.baseline_warmup_limit_s;
  oracle_ = std::make_unique<Oracle>(oracle_options);

  options_.device = flags.device;
  options_.python = flags.python;
  options_.workspace = flags.workspace;
  options_.correctness_trials = flags.trials;
  options_.warmup = flags.warmup;
  options_.iterations = flags.iterations;
  options_.checked_timed_calls = flags.checked_timed_calls;
  options_.timing_budget_s = flags.budget_s;
  options_.seed = flags.seed;
  options_.call_timeout = std::chrono::milliseconds(flags.timeout_ms);
  options_.time_baselines = !flags.no_baseline;
  options_.worker_executable = flags.worker_executable;
  options_.cpus = flags.cpus;
  if (!flags.cflags.empty()) options_.cpu_compile.flags = split_flags(flags.cflags);
  if (const char* cxx = std::getenv("CXX"); cxx && *cxx) options_.cpu_compile.compiler = cxx;
  guard_ = std::make_unique<Guard>(options_, *oracle_);
}

std::vector<Workload> GuardSession::select_workloads(const Problem& problem) const {
  if (flags_.workloads.empty()) return problem.workloads;
  std::vector<Workload> selected;
  for (const auto& id : flags_.workloads) {
    if (id == "largest") {
      selected.push_back(largest_workload(problem.workloads));
      continue;
    }
    bool found = false;
    for (const auto& workload : problem.workloads) {
      if (workload.uuid.rfind(id, 0) == 0) {
        selected.push_back(workload);
        found = true;
      }
    }
    if (!found) throw_input_error("--workloads", id, "no workload uuid starts with this");
  }
  return selected;
}

bool GuardSession::evaluate_and_report(const Problem& problem, const Solution& solution,
                                       std::ostream& out,
                                       const std::function<void(std::vector<Trace>&)>& annotate) {
  auto traces = guard_->evaluate(problem, solution, select_workloads(problem));
  annotate_traces(traces, problem, solution, guard_->calibration());
  if (annotate) annotate(traces);
  out << fmt::format("problem {}  solution {}  device {}\n", problem.definition.name, solution.name,
                     flags_.device);
  if (!traces.empty()) {
    const auto& environment = traces.front().environment;
    out << fmt::format("hardware: {}\noracle: {}\ncompiler: {}\n",
                       environment.value("hardware", std::string("-")),
                       environment.value("oracle", std::string("-")),
                       environment.value("compiler", std::string("-")));
    if (!traces.front().baseline_note.empty())
      out << "baselines: " << traces.front().baseline_note << '\n';
  }
  print_traces(problem, traces, out);
  out << "speedup: over the faster of PyTorch eager and torch.compile, same protocol\n";
  const auto passed = std::count_if(traces.begin(), traces.end(), [](const Trace& trace) {
    return trace.status == EvalStatus::Passed;
  });
  out << fmt::format("workloads: {} of {} PASSED\n", passed, traces.size());
  for (const Trace& trace : traces) {
    const Workload* workload = find_workload(problem, trace.workload.value("uuid", std::string()));
    const auto diagnosis = trace_diagnosis_text(trace);
    if (!diagnosis || workload == nullptr) continue;
    out << fmt::format("diagnosis {}: {}\n", format_axes(workload->axes), *diagnosis);
  }

  if (!flags_.json_path.empty()) {
    OrderedJson json = OrderedJson::array();
    for (const auto& trace : traces) json.push_back(trace_to_json(trace));
    std::ofstream file(flags_.json_path);
    if (!file) throw_input_error(flags_.json_path, "", "cannot open for writing");
    file << json.dump(2) << '\n';
  }
  return passed == static_cast<long>(traces.size());
}

}  // namespace kernelarc
