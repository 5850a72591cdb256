#include "app/bench_results.h"

#include <cmath>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "app/table.h"
#include "core/error.h"
#include "eval/speed_of_light.h"
#include "eval/trace.h"

namespace kernelarc {

namespace {

using Rows = std::vector<std::vector<std::string>>;

std::string time_cell(const Contender& contender) {
  if (!contender.time) return "-";
  const MedianInterval& t = *contender.time;
  return fmt::format("{:.4f} ({:.4f}-{:.4f})", t.median_ms, t.ci_low_ms, t.ci_high_ms);
}

std::string speedup_cell(const std::optional<Speedup>& speedup) {
  return speedup
             ? fmt::format("{:.2f}x ({:.2f}-{:.2f})", speedup->value, speedup->low, speedup->high)
             : "-";
}

std::string number_cell(const std::optional<double>& value, int digits) {
  return value ? fmt::format("{:.{}f}", *value, digits) : "-";
}

Speedup ratio(const MedianInterval& before, const MedianInterval& after) {
  return {before.median_ms / after.median_ms, before.ci_low_ms / after.ci_high_ms,
          before.ci_high_ms / after.ci_low_ms};
}

bool is_gemm(const BenchProblem& problem) {
  return problem.op_family == "gemm";
}

/// The problem's table as header + rows, shared by the text and Markdown forms.
Rows problem_rows(const BenchProblem& problem) {
  std::vector<std::string> header{"workload", "T_SOL_ms", "eager_ms", "compiled_ms"};
  if (is_gemm(problem)) header.push_back("cublaslt_ms");
  header.insert(header.end(), {"kernelarc_ms", "speedup"});
  if (is_gemm(problem)) header.push_back("vs_cublaslt");
  header.push_back("sol_score");
  Rows rows{header};
  for (const BenchWorkload& w : problem.workloads) {
    std::vector<std::string> row{w.axes, number_cell(w.sol_ms, 4), time_cell(w.eager),
                                 time_cell(w.compiled)};
    if (is_gemm(problem)) row.push_back(time_cell(w.cublaslt));
    row.push_back(time_cell(w.kernelarc));
    row.push_back(speedup_cell(w.speedup()));
    if (is_gemm(problem)) row.push_back(speedup_cell(w.speedup_over_cublaslt()));
    row.push_back(number_cell(w.sol_score(), 3) + (w.sol_bound_beaten() ? " (bound beaten)" : ""));
    rows.push_back(std::move(row));
  }
  return rows;
}

/// Each distinct note of the problem's columns once ("compiled: torch.compile unavailable").
std::vector<std::string> problem_notes(const BenchProblem& problem) {
  std::vector<std::string> notes;
  std::set<std::string> seen;
  auto add = [&](const std::string& what, const std::string& note) {
    if (note.empty()) return;
    const std::string line = what + ": " + note;
    if (seen.insert(line).second) notes.push_back(line);
  };
  for (const BenchWorkload& w : problem.workloads) {
    if (!w.sol_ms) add("T_SOL", w.sol_note);
    if (w.sol_bound_beaten()) add("T_SOL", std::string("kernelarc is ") + kSolBoundBeatenAdvice);
    add("eager", w.eager.note);
    add("compiled", w.compiled.note);
    if (is_gemm(problem)) add("cuBLASLt", w.cublaslt.note);
    add("kernelarc", w.kernelarc.note);
  }
  for (const BenchWorkload& w : problem.workloads) add("diagnosis " + w.axes, w.diagnosis);
  return notes;
}

std::string problem_line(const BenchProblem& problem) {
  std::string line =
      fmt::format("{}: {}; geomean speedup over the faster baseline {}; SOL score {}", problem.name,
                  bench_status_name(problem.status), speedup_cell(problem.speedup()),
                  number_cell(problem.sol_score(), 3));
  if (!problem.recognition.empty()) line += "; " + problem.recognition;
  if (!problem.solution.empty()) line += "; kernelarc: " + problem.solution;
  if (!problem.accuracy_trades.empty())
    line += fmt::format(" (trades accuracy, so not like for like: {})",
                        fmt::join(problem.accuracy_trades, "; "));
  if (problem.run_id)
    line += fmt::format(" (run {}, {} candidates evaluated)", *problem.run_id, problem.evaluated);
  if (problem.seconds > 0)
    line += fmt::format("; {:.0f} s, of which the search {:.0f} s", problem.seconds,
                        problem.search_seconds);
  if (!problem.note.empty()) line += "; " + problem.note;
  return line;
}

Rows suite_rows(const BenchReport& report) {
  Rows rows{{"problem", "status", "speedup", "sol_score", "kernelarc"}};
  for (const BenchProblem& problem : report.problems)
    rows.push_back({problem.name, std::string(bench_status_name(problem.status)),
                    speedup_cell(problem.speedup()), number_cell(problem.sol_score(), 3),
                    problem.solution.empty()          ? "-"
                    : problem.accuracy_trades.empty() ? problem.solution
                                                      : problem.solution + " [trades accuracy]"});
  return rows;
}

std::vector<std::string> summary_lines(const BenchReport& report) {
  const BenchSummary s = summarize_bench(report.problems);
  std::vector<std::string> lines{
      fmt::format("problems: {} ({} won, {} tied, {} lost, {} no template, {} not served, {} "
                  "failed)",
                  s.problems, s.won, s.tied, s.lost, s.no_template, s.not_served, s.failed),
      fmt::format("geomean speedup over the faster baseline: {}",
                  s.geomean_speedup ? fmt::format("{:.2f}x", *s.geomean_speedup) : "-"),
      fmt::format("fast_1.0: {:.3f}  fast_1.2: {:.3f}", s.fast_1_0, s.fast_1_2),
      fmt::format("mean SOL score: {} (over {} problems with a score)",
                  number_cell(s.mean_sol_score, 3), s.sol_scored)};
  if (report.keep_accuracy) {
    lines.push_back("like for like: --keep-accuracy searched no knob value that trades accuracy");
  } else if (s.trading_accuracy > 0) {
    lines.push_back(fmt::format(
        "not like for like: {} winner(s) trade accuracy the reference keeps (marked [trades "
        "accuracy]); --keep-accuracy benches without them",
        s.trading_accuracy));
  }
  if (!report.remaining.empty())
    lines.push_back(fmt::format("remaining: {} problem(s) not benched yet: {}",
                                report.remaining.size(), fmt::join(report.remaining, ", ")));
  return lines;
}

void print_rows(const Rows& rows, std::ostream& out) {
  TextTable table(rows.front());
  for (std::size_t i = 1; i < rows.size(); ++i) table.add_row(rows[i]);
  table.print(out);
}

void markdown_rows(const Rows& rows, std::ostream& out) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out << "| " << fmt::format("{}", fmt::join(rows[i], " | ")) << " |\n";
    if (i == 0) {
      out << "|";
      for (std::size_t c = 0; c < rows[i].size(); ++c) out << "---|";
      out << '\n';
    }
  }
}

OrderedJson speedup_json(const std::optional<Speedup>& speedup) {
  if (!speedup) return nullptr;
  return {{"value", speedup->value}, {"low", speedup->low}, {"high", speedup->high}};
}

OrderedJson contender_json(const Contender& contender) {
  OrderedJson json = {{"median_ms", nullptr},
                      {"ci_low_ms", nullptr},
                      {"ci_high_ms", nullptr},
                      {"samples", 0},
                      {"note", contender.note}};
  if (contender.time) {
    json["median_ms"] = contender.time->median_ms;
    json["ci_low_ms"] = contender.time->ci_low_ms;
    json["ci_high_ms"] = contender.time->ci_high_ms;
    json["samples"] = contender.time->samples;
  }
  return json;
}

Contender contender_from_json(const OrderedJson& json) {
  Contender contender;
  contender.note = json.at("note").get<std::string>();
  if (!json.at("median_ms").is_null())
    contender.time =
        MedianInterval{json.at("median_ms").get<double>(), json.at("ci_low_ms").get<double>(),
                       json.at("ci_high_ms").get<double>(), json.at("samples").get<int>()};
  return contender;
}

OrderedJson workload_json(const BenchWorkload& w) {
  return {{"uuid", w.uuid},
          {"axes", w.axes},
          {"sol_ms", optional_number(w.sol_ms)},
          {"sol_note", w.sol_note},
          {"eager", contender_json(w.eager)},
          {"compiled", contender_json(w.compiled)},
          {"cublaslt", contender_json(w.cublaslt)},
          {"kernelarc", contender_json(w.kernelarc)},
          {"faster_baseline", w.faster_baseline()},
          {"speedup", speedup_json(w.speedup())},
          {"speedup_over_cublaslt", speedup_json(w.speedup_over_cublaslt())},
          {"sol_score", optional_number(w.sol_score())},
          {"sol_bound_beaten", w.sol_bound_beaten()},
          {"diagnosis", w.diagnosis}};
}

BenchWorkload workload_from_json(const OrderedJson& json) {
  BenchWorkload w;
  w.uuid = json.at("uuid").get<std::string>();
  w.axes = json.at("axes").get<std::string>();
  if (!json.at("sol_ms").is_null()) w.sol_ms = json.at("sol_ms").get<double>();
  w.sol_note = json.at("sol_note").get<std::string>();
  w.eager = contender_from_json(json.at("eager"));
  w.compiled = contender_from_json(json.at("compiled"));
  w.cublaslt = contender_from_json(json.at("cublaslt"));
  w.kernelarc = contender_from_json(json.at("kernelarc"));
  w.diagnosis = json.value("diagnosis", std::string());  // absent in reports before it existed
  return w;
}

OrderedJson problem_json(const BenchProblem& problem) {
  OrderedJson json = {
      {"name", problem.name},
      {"dir", problem.dir},
      {"op_family", problem.op_family},
      {"recognition", problem.recognition},
      {"status", std::string(bench_status_name(problem.status))},
      {"note", problem.note},
      {"solution", problem.solution},
      {"accuracy_trades", problem.accuracy_trades},
      {"run_id", problem.run_id ? OrderedJson(*problem.run_id) : OrderedJson(nullptr)},
      {"evaluated", problem.evaluated},
      {"seconds", problem.seconds},
      {"search_seconds", problem.search_seconds},
      {"hardware", problem.hardware},
      {"speedup", speedup_json(problem.speedup())},
      {"sol_score", optional_number(problem.sol_score())},
      {"workloads", OrderedJson::array()}};
  for (const BenchWorkload& w : problem.workloads) json["workloads"].push_back(workload_json(w));
  return json;
}

BenchStatus status_from_name(const std::string& name) {
  for (BenchStatus status : {BenchStatus::Won, BenchStatus::Tied, BenchStatus::Lost,
                             BenchStatus::NoTemplate, BenchStatus::NotServed, BenchStatus::Failed})
    if (bench_status_name(status) == name) return status;
  throw InputError(fmt::format(
      "\"status\": expected won, tied, lost, no template, not served or failed, got \"{}\"", name));
}

BenchProblem problem_from_json(const OrderedJson& json) {
  BenchProblem problem;
  problem.name = json.at("name").get<std::string>();
  problem.dir = json.at("dir").get<std::string>();
  problem.op_family = json.at("op_family").get<std::string>();
  problem.recognition = json.value("recognition", std::string());  // absent before it existed
  problem.status = status_from_name(json.at("status").get<std::string>());
  problem.note = json.at("note").get<std::string>();
  problem.solution = json.at("solution").get<std::string>();
  problem.accuracy_trades =  // absent before it existed
      json.value("accuracy_trades", std::vector<std::string>{});
  if (!json.at("run_id").is_null()) problem.run_id = json.at("run_id").get<int64_t>();
  problem.evaluated = json.at("evaluated").get<int64_t>();
  problem.seconds = json.at("seconds").get<double>();
  problem.search_seconds = json.value("search_seconds", 0.0);  // absent before it existed
  problem.hardware = json.value("hardware", std::string());    // absent before it existed
  for (const OrderedJson& w : json.at("workloads"))
    problem.workloads.push_back(workload_from_json(w));
  return problem;
}

}  // namespace

std::string BenchWorkload::faster_baseline() const {
  if (eager.time && compiled.time)
    return compiled.time->median_ms < eager.time->median_ms ? "compiled" : "eager";
  if (eager.time) return "eager";
  return compiled.time ? "compiled" : "";
}

const MedianInterval* BenchWorkload::faster_baseline_time() const {
  const std::string faster = faster_baseline();
  if (faster.empty()) return nullptr;
  return faster == "eager" ? &*eager.time : &*compiled.time;
}

std::optional<Speedup> BenchWorkload::speedup() const {
  const MedianInterval* baseline = faster_baseline_time();
  if (!baseline || !kernelarc.time) return std::nullopt;
  return ratio(*baseline, *kernelarc.time);
}

std::optional<Speedup> BenchWorkload::speedup_over_cublaslt() const {
  if (!cublaslt.time || !kernelarc.time) return std::nullopt;
  return ratio(*cublaslt.time, *kernelarc.time);
}

std::optional<double> BenchWorkload::sol_score() const {
  if (!kernelarc.time) return std::nullopt;
  const auto median = [](const Contender& c) {
    return c.time ? std::optional<double>(c.time->median_ms) : std::nullopt;
  };
  return kernelarc::sol_score(kernelarc.time->median_ms, median(eager), median(compiled), sol_ms);
}

bool BenchWorkload::sol_bound_beaten() const {
  return kernelarc.time && kernelarc::sol_bound_beaten(kernelarc.time->median_ms, sol_ms);
}

std::string_view bench_status_name(BenchStatus status) {
  switch (status) {
    case BenchStatus::Won:
      return "won";
    case BenchStatus::Tied:
      return "tied";
    case BenchStatus::Lost:
      return "lost";
    case BenchStatus::NoTemplate:
      return "no template";
    case BenchStatus::NotServed:
      return "not served";
    case BenchStatus::Failed:
      return "failed";
  }
  return "failed";
}

std::optional<Speedup> BenchProblem::speedup() const {
  if (workloads.empty()) return std::nullopt;
  double value = 0, low = 0, high = 0;
  for (const BenchWorkload& w : workloads) {
    const auto speedup = w.speedup();
    if (!speedup) return std::nullopt;
    value += std::log(speedup->value);
    low += std::log(speedup->low);
    high += std::log(speedup->high);
  }
  const double n = static_cast<double>(workloads.size());
  return Speedup{std::exp(value / n), std::exp(low / n), std::exp(high / n)};
}

std::optional<double> BenchProblem::sol_score() const {
  double sum = 0;
  int count = 0;
  for (const BenchWorkload& w : workloads)
    if (const auto score = w.sol_score()) {
      sum += *score;
      ++count;
    }
  if (count == 0) return std::nullopt;
  return sum / count;
}

void BenchProblem::settle_status() {
  if (status == BenchStatus::NoTemplate || status == BenchStatus::NotServed) return;
  const auto overall = speedup();
  if (!overall)
    status = BenchStatus::Failed;
  else if (overall->low > 1)
    status = BenchStatus::Won;
  else if (overall->high < 1)
    status = BenchStatus::Lost;
  else
    status = BenchStatus::Tied;
}

BenchSummary summarize_bench(const std::vector<BenchProblem>& problems) {
  BenchSummary s;
  s.problems = static_cast<int>(problems.size());
  double log_speedup = 0, score = 0;
  int with_speedup = 0, fast_1_0 = 0, fast_1_2 = 0;
  for (const BenchProblem& problem : problems) {
    switch (problem.status) {
      case BenchStatus::Won:
        ++s.won;
        break;
      case BenchStatus::Tied:
        ++s.tied;
        break;
      case BenchStatus::Lost:
        ++s.lost;
        break;
      case BenchStatus::NoTemplate:
        ++s.no_template;
        break;
      case BenchStatus::NotServed:
        ++s.not_served;
        break;
      case BenchStatus::Failed:
        ++s.failed;
        break;
    }
    s.trading_accuracy += !problem.accuracy_trades.empty();
    // Correct = kernelarc passed everywhere with a baseline to compare: the speedup exists.
    const bool served =
        problem.status != BenchStatus::NoTemplate && problem.status != BenchStatus::NotServed;
    if (const auto speedup = problem.speedup(); speedup && served) {
      log_speedup += std::log(speedup->value);
      ++with_speedup;
      fast_1_0 += speedup->value > 1.0;
      fast_1_2 += speedup->value > 1.2;
    }
    if (const auto problem_score = problem.sol_score(); problem_score && served) {
      score += *problem_score;
      ++s.sol_scored;
    }
  }
  if (with_speedup > 0) s.geomean_speedup = std::exp(log_speedup / with_speedup);
  if (s.problems > 0) {
    s.fast_1_0 = static_cast<double>(fast_1_0) / s.problems;
    s.fast_1_2 = static_cast<double>(fast_1_2) / s.problems;
  }
  if (s.sol_scored > 0) s.mean_sol_score = score / s.sol_scored;
  return s;
}

OrderedJson bench_to_json(const BenchReport& report) {
  const BenchSummary s = summarize_bench(report.problems);
  OrderedJson json = {{"suite", report.suite},
                      {"device", report.device},
                      {"hardware", report.hardware},
                      {"oracle", report.oracle},
                      {"environment", report.environment},
                      {"started", report.started},
                      {"updated", report.updated},
                      {"command", report.command},
                      {"budget", report.budget},
                      {"rounds", report.rounds},
                      {"workloads", report.workloads},
                      {"keep_accuracy", report.keep_accuracy},
                      {"summary",
                       {{"problems", s.problems},
                        {"won", s.won},
                        {"tied", s.tied},
                        {"lost", s.lost},
                        {"no_template", s.no_template},
                        {"not_served", s.not_served},
                        {"failed", s.failed},
                        {"remaining", report.remaining.size()},
                        {"geomean_speedup", optional_number(s.geomean_speedup)},
                        {"fast_1.0", s.fast_1_0},
                        {"fast_1.2", s.fast_1_2},
                        {"mean_sol_score", optional_number(s.mean_sol_score)},
                        {"sol_scored", s.sol_scored},
                        {"trading_accuracy", s.trading_accuracy}}},
                      {"remaining", report.remaining},
                      {"problems", OrderedJson::array()}};
  for (const BenchProblem& problem : report.problems)
    json["problems"].push_back(problem_json(problem));
  return json;
}

BenchReport bench_from_json(const OrderedJson& json, const std::string& where) {
  BenchReport report;
  try {
    report.suite = json.at("suite").get<std::string>();
    report.device = json.at("device").get<std::string>();
    report.hardware = json.at("hardware").get<std::string>();
    report.oracle = json.at("oracle").get<std::string>();
    report.environment = json.at("environment");
    report.started = json.at("started").get<std::string>();
    report.updated = json.at("updated").get<std::string>();
    report.command = json.at("command").get<std::string>();
    report.budget = json.at("budget").get<int64_t>();
    report.rounds = json.at("rounds").get<int>();
    report.workloads = json.at("workloads").get<std::vector<std::string>>();
    report.keep_accuracy = json.value("keep_accuracy", false);  // absent before it existed
    report.remaining = json.at("remaining").get<std::vector<std::string>>();
    for (const OrderedJson& problem : json.at("problems"))
      report.problems.push_back(problem_from_json(problem));
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("{}: {}", where, error.what()));
  } catch (const InputError& error) {
    throw InputError(fmt::format("{}: {}", where, error.what()));
  }
  return report;
}

std::string bench_markdown(const BenchReport& report) {
  std::ostringstream out;
  out << fmt::format("# kernelarc bench: {}\n\n", report.suite);
  out << fmt::format("- device: {} ({})\n- oracle: {}\n", report.device, report.hardware,
                     report.oracle);
  if (report.environment.is_object())
    for (const auto& [key, value] : report.environment.items())
      if (value.is_string() && key != "oracle")
        out << fmt::format("- {}: {}\n", key, value.get<std::string>());
  out << fmt::format("- started: {}; updated: {}\n- command: `{}`\n", report.started,
                     report.updated, report.command);
  out << fmt::format(
      "- budget: {} candidates per problem; {} interleaved rounds; workloads: {}{}\n",
      report.budget, report.rounds,
      report.workloads.empty() ? "all" : fmt::format("{}", fmt::join(report.workloads, " ")),
      report.keep_accuracy ? "; --keep-accuracy" : "");
  out << "\nTimes in ms: median (95% interval) pooled over the rounds. Speedup: the faster of "
         "PyTorch eager and torch.compile over kernelarc. SOL score: 1 / (1 + (T_k - T_SOL) / "
         "(T_b - T_SOL)).\n\n## Summary\n\n";
  markdown_rows(suite_rows(report), out);
  out << '\n';
  for (const std::string& line : summary_lines(report)) out << "- " << line << '\n';
  for (const BenchProblem& problem : report.problems) {
    out << fmt::format("\n## {}\n\n", problem.name);
    markdown_rows(problem_rows(problem), out);
    out << '\n' << problem_line(problem) << '\n';
    for (const std::string& note : problem_notes(problem)) out << "\n- " << note;
    out << '\n';
  }
  return out.str();
}

void print_bench_problem(const BenchProblem& problem, std::ostream& out) {
  print_rows(problem_rows(problem), out);
  for (const std::string& note : problem_notes(problem)) out << "  " << note << '\n';
  out << problem_line(problem) << '\n';
}

void print_bench_summary(const BenchReport& report, std::ostream& out) {
  out << fmt::format("\nbench {} on {}:\n", report.suite, report.device);
  print_rows(suite_rows(report), out);
  for (const std::string& line : summary_lines(report)) out << line << '\n';
}

}  // namespace kernelarc
