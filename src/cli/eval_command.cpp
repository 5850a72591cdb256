// `kernelarc eval <problem-dir> <solution>`: one solution through the guard, a table per
// workload, and optionally the traces as JSON.
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/error.h"
#include "core/problem.h"
#include "eval/guard.h"
#include "oracle/oracle.h"

namespace kernelarc {

namespace {

struct EvalFlags {
  std::string problem_dir;
  std::string solution;
  std::string json_path;
  std::string workspace = ".kernelarc";
  std::string device = "cpu";
  std::string python;
  std::string cflags;
  std::vector<std::string> workloads;
  int trials = 10;
  int warmup = 3;
  int iterations = 50;
  double budget_s = 2.0;
  int timeout_ms = 10'000;
  uint64_t seed = 200;
  bool no_baseline = false;
};

std::vector<std::string> split_flags(const std::string& text) {
  std::istringstream stream(text);
  std::vector<std::string> parts;
  for (std::string part; stream >> part;) parts.push_back(part);
  return parts;
}

std::string axes_text(const Workload& workload) {
  std::string text;
  for (const auto& [name, value] : workload.axes) {
    text += (text.empty() ? "" : " ") + fmt::format("{}={}", name, value);
  }
  return text;
}

std::vector<Workload> select_workloads(const Problem& problem, const std::vector<std::string>& ids) {
  std::vector<Workload> selected;
  for (const auto& id : ids) {
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

std::string format_ms(const std::optional<double>& ms) {
  return ms ? fmt::format("{:.4f}", *ms) : "-";
}

void print_traces(const Problem& problem, const std::vector<Trace>& traces, std::ostream& out) {
  TextTable table({"workload", "axes", "status", "max_abs_err", "median_ms", "ci95_ms",
                   "p10-p90_ms", "runs", "eager_ms", "compiled_ms", "speedup", "sol_ms",
                   "sol_score"});
  std::vector<std::string> logs;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const auto& trace = traces[i];
    const auto uuid = trace.workload.value("uuid", std::string("?"));
    const auto* workload = &problem.workloads.front();
    for (const auto& candidate : problem.workloads) {
      if (candidate.uuid == uuid) workload = &candidate;
    }
    std::vector<std::string> row{uuid.substr(0, 12), axes_text(*workload),
                                 std::string(status_name(trace.status)),
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
      row.push_back(score ? fmt::format("{:.3f}", *score) : "-");
    } else {
      logs.push_back(fmt::format("{}: {}", uuid.substr(0, 12), trace.log));
    }
    table.add_row(std::move(row));
  }
  table.print(out);
  for (const auto& log : logs) out << log << '\n';
}

int run_eval(const EvalFlags& flags) {
  const auto problem = load_problem(flags.problem_dir);
  const auto solution = load_solution(flags.solution);
  const auto workloads = select_workloads(problem, flags.workloads);

  OracleOptions oracle_options;
  oracle_options.cache_dir = std::filesystem::path(flags.workspace) / "oracle";
  oracle_options.python = flags.python;
  oracle_options.device = flags.device == "cpu" ? "cpu" : "cuda";
  oracle_options.seed = flags.seed;
  Oracle oracle(oracle_options);

  GuardOptions options;
  options.device = flags.device;
  options.workspace = flags.workspace;
  options.correctness_trials = flags.trials;
  options.warmup = flags.warmup;
  options.iterations = flags.iterations;
  options.timing_budget_s = flags.budget_s;
  options.seed = flags.seed;
  options.call_timeout = std::chrono::milliseconds(flags.timeout_ms);
  options.time_baselines = !flags.no_baseline;
  if (!flags.cflags.empty()) options.cpu_compile.flags = split_flags(flags.cflags);
  if (const char* cxx = std::getenv("CXX"); cxx && *cxx) options.cpu_compile.compiler = cxx;
  Guard guard(options, oracle);

  const auto traces = guard.evaluate(problem, solution, workloads);
  std::cout << fmt::format("problem {}  solution {}  device {}\n", problem.definition.name,
                           solution.name, flags.device);
  if (!traces.empty()) {
    const auto& environment = traces.front().environment;
    std::cout << fmt::format("hardware: {}\noracle: {}\ncompiler: {}\n",
                             environment.value("hardware", std::string("-")),
                             environment.value("oracle", std::string("-")),
                             environment.value("compiler", std::string("-")));
    if (!traces.front().baseline_note.empty()) {
      std::cout << "baselines: " << traces.front().baseline_note << '\n';
    }
  }
  print_traces(problem, traces, std::cout);
  std::cout << "speedup: over the faster of PyTorch eager and torch.compile, same protocol\n";
  const auto passed = std::count_if(traces.begin(), traces.end(), [](const Trace& trace) {
    return trace.status == EvalStatus::Passed;
  });
  std::cout << fmt::format("workloads: {} of {} PASSED\n", passed, traces.size());

  if (!flags.json_path.empty()) {
    OrderedJson json = OrderedJson::array();
    for (const auto& trace : traces) json.push_back(trace_to_json(trace));
    std::ofstream file(flags.json_path);
    if (!file) throw_input_error(flags.json_path, "", "cannot open for writing");
    file << json.dump(2) << '\n';
  }
  return passed == static_cast<long>(traces.size()) ? 0 : 1;
}

}  // namespace

CommandRunner add_eval_command(CLI::App& app) {
  auto flags = std::make_shared<EvalFlags>();
  auto* cmd = app.add_subcommand("eval", "evaluate one solution through the benchmark guard");
  cmd->add_option("problem", flags->problem_dir, "problem directory (definition.json, workload.jsonl)")
      ->required()->check(CLI::ExistingDirectory);
  cmd->add_option("solution", flags->solution, "solution.json, or a directory holding one")
      ->required()->check(CLI::ExistingPath);
  cmd->add_option("--json", flags->json_path, "write the traces (SOL-ExecBench form) to this file");
  cmd->add_option("--workspace", flags->workspace, "caches and calibration")->capture_default_str();
  cmd->add_option("--device", flags->device, "cpu or cuda:N")->capture_default_str();
  cmd->add_option("--python", flags->python, "Python with torch for the reference (default: detect)");
  cmd->add_option("--cflags", flags->cflags, "host compiler flags, replacing -O3 -march=native -fopenmp");
  cmd->add_option("--workloads", flags->workloads, "only workloads whose uuid starts with these");
  cmd->add_option("--trials", flags->trials, "correctness draws per workload")->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--warmup", flags->warmup, "untimed calls before timing")->capture_default_str()
      ->check(CLI::Range(0, 10000));
  cmd->add_option("--iterations", flags->iterations, "timed calls at most")->capture_default_str()
      ->check(CLI::Range(3, 100000));
  cmd->add_option("--budget", flags->budget_s, "timing budget per workload, seconds")
      ->capture_default_str();
  cmd->add_option("--timeout-ms", flags->timeout_ms, "a call longer than this is a hang")
      ->capture_default_str()->check(CLI::Range(1, 3'600'000));
  cmd->add_option("--seed", flags->seed, "input seed")->capture_default_str();
  cmd->add_flag("--no-baseline", flags->no_baseline, "do not time the PyTorch reference");
  return [flags] { return run_eval(*flags); };
}

}  // namespace kernelarc
