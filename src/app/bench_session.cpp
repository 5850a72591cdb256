#include "app/bench_session.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "app/bench_suite.h"
#include "app/optimize_session.h"
#include "app/optimize_skills.h"
#include "app/recognize.h"
#include "backend/backend.h"
#include "core/atomic_file.h"
#include "core/elapsed.h"
#include "core/error.h"
#include "diagnosis/diagnosis.h"
#include "eval/speed_of_light.h"
#include "oracle/baseline_processes.h"

namespace kernelarc {

namespace {

using Clock = std::chrono::steady_clock;

/// kernelarc's solution for a problem: the winner of its run, or nothing when none passed.
struct Winner {
  std::optional<Solution> solution;
  std::string label;
  int64_t run_id = 0;
  int64_t evaluated = 0;
  std::string how;  ///< "new run", "resumed run", "reused finished run"
};

std::string utc_now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

/// The stored run of this problem made with the session's settings (the newest), if any.
std::optional<Run> matching_run(Database& db, const OptimizeSession& session) {
  const Problem& problem = session.problem();
  const std::string hash = problem_hash(problem);
  const nlohmann::json& config = session.target().run_config;
  const nlohmann::json options = session.options().to_json();
  const auto runs = db.list_runs();
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    if (run->problem_name != problem.definition.name || run->problem_hash != hash ||
        run->device != session.target().device || run->status == RunStatus::Failed)
      continue;
    const nlohmann::json& stored = run->config;
    if (stored.value("options", nlohmann::json()) == options &&
        stored.value("guard", nlohmann::json()) == config["guard"] &&
        stored.value("workloads", nlohmann::json()) == config["workloads"] &&
        stored.value("baseline", nlohmann::json()) == config["baseline"] &&
        stored.value("keep_accuracy", false) == config.value("keep_accuracy", false))
      return *run;
  }
  return std::nullopt;
}

/// The winner a finished run stored (its summary is the orchestrator's saved state).
Winner stored_winner(Workspace& workspace, const Run& run) {
  Database& db = workspace.database();
  const auto summary = db.load_agent_state(run.id, "orchestrator");
  const std::string where = fmt::format("run {} summary", run.id);
  if (!summary) throw InputError(fmt::format("{}: missing though the run is finished", where));
  Winner winner{std::nullopt, "", run.id, summary->value("evaluated", int64_t{0}),
                "reused finished run"};
  const nlohmann::json& finalists = summary->at("finalists");
  if (finalists.empty()) return winner;
  const nlohmann::json& best =
      summary->value("kept_baseline", false) ? summary->at("baseline") : finalists.front();
  const auto candidate = db.find_candidate(best.at("candidate").get<int64_t>());
  if (!candidate) throw InputError(fmt::format("{}: names a missing candidate", where));
  winner.solution =
      parse_solution(OrderedJson::parse(workspace.objects().get(candidate->solution_key)),
                     fmt::format("run {} candidate {}", run.id, candidate->id), {});
  winner.label = best.at("label").get<std::string>();
  return winner;
}

/// Searches (or resumes, or reuses) the problem's run with the session's settings.
Winner search(OptimizeSession& session, Workspace& workspace, const BenchOutput& output) {
  const auto found = matching_run(workspace.database(), session);
  if (found && found->status == RunStatus::Finished) {
    Winner winner = stored_winner(workspace, *found);
    output.log << fmt::format("reusing finished run {} ({} candidates evaluated)\n", found->id,
                              winner.evaluated);
    return winner;
  }
  output.log << session.description() << '\n';
  if (found) output.log << fmt::format("resuming unfinished run {}\n", found->id);
  const std::unique_ptr<ProgressSink> progress = output.progress();
  const OptimizeSummary summary =
      session.run(workspace, *progress, found ? std::optional<int64_t>(found->id) : std::nullopt);
  Winner winner{std::nullopt, "", summary.run_id, summary.evaluated,
                found ? "resumed run" : "new run"};
  if (!summary.finalists.empty()) {
    winner.solution = summary.best().solution;
    winner.label = summary.best().label;
  }
  return winner;
}

/// "fused: fused plan of 2 kernels (...)"; empty for an annotated problem.
std::string recognition_text(const Recognition& r) {
  if (r.source == Recognition::Source::Annotated) return "";
  return fmt::format("{}: {}", source_name(r.source), r.served() ? r.summary : r.reason);
}

/// The GEMM library baseline: the cuBLASLt template at its default point, the heuristic's
/// first choice.
std::optional<Solution> cublaslt_default(const OptimizeSession& session) {
  if (session.problem().definition.ext.op_family != "gemm") return std::nullopt;
  for (const BoundTemplate* bound : session.target().templates)
    if (bound->kernel().name == "gemm_cublaslt")
      return bound->instantiate(bound->space().space().default_point(),
                                session.target().extra_files);
  return std::nullopt;
}

class ProblemBench {
 public:
  ProblemBench(const BenchOptions& options, const BenchOutput& output, GuardSession& measure,
               const std::optional<Calibration>& calibration, BenchReport& report)
      : options_(options),
        output_(output),
        measure_(measure),
        calibration_(calibration),
        report_(report) {}

  BenchProblem run(PreparedProblem& prepared, Workspace& workspace) {
    const auto started = Clock::now();
    BenchProblem result;
    result.name = prepared.entry->name;
    result.dir = prepared.entry->dir.string();
    try {
      if (!prepared.error.empty()) throw InputError(prepared.error);
      RecognizedProblem& loaded = *prepared.loaded;
      result.op_family = loaded.problem.definition.ext.op_family;
      result.recognition = recognition_text(loaded.recognition);
      if (!loaded.recognition.served()) {
        result.status = BenchStatus::NotServed;
        result.note = loaded.recognition.reason;
        // Nothing of kernelarc's to compare them with: timing the baselines would only cost.
        if (options_.baselines_always)
          measure(loaded.problem, measure_.select_workloads(loaded.problem), std::nullopt,
                  std::nullopt, result);
        result.seconds = seconds_since(started);
        return result;
      }
      OptimizeFlags optimize;
      optimize.problem_dir = prepared.entry->dir.string();
      optimize.budget = options_.budget;
      optimize.final_rounds = options_.rounds;
      // A bench measures the search from a cold start: no skills in, none recorded.
      optimize.no_skills = true;
      optimize.allow_no_template = true;
      optimize.keep_accuracy = options_.keep_accuracy;
      optimize.guard = options_.guard;
      // The side-by-side rounds below time PyTorch afresh; timing it in the search's finals
      // too would cost a second torch.compile per problem for figures nobody reads.
      optimize.guard.no_baseline = true;
      OptimizeSession session(optimize, nullptr, std::move(loaded));
      Winner winner;
      if (!session.searchable()) {
        result.status = BenchStatus::NoTemplate;
        result.note = fmt::format("no template serves it on {}", options_.guard.device);
      } else {
        winner = search(session, workspace, output_);
        result.search_seconds = seconds_since(started);
        result.run_id = winner.run_id;
        result.evaluated = winner.evaluated;
        result.solution = winner.label;
        if (winner.solution) result.accuracy_trades = solution_accuracy_trades(*winner.solution);
        result.note = winner.solution ? winner.how : winner.how + ": no candidate passed the guard";
      }
      // A problem no template serves has nothing of kernelarc's to compare the baselines with:
      // timing eager and torch.compile took ~150 s per problem on the H200 for an empty row.
      if (result.status != BenchStatus::NoTemplate || options_.baselines_always)
        measure(session.problem(), session.workloads(), winner.solution, cublaslt_default(session),
                result);
      result.settle_status();
    } catch (const InputError& error) {
      result.status = BenchStatus::Failed;
      result.note = error.what();
    } catch (const std::exception& error) {
      // One broken problem never stops the suite: its row says what broke.
      result.status = BenchStatus::Failed;
      result.note = fmt::format("internal error: {}", error.what());
    }
    result.seconds = seconds_since(started);
    return result;
  }

 private:
  /// The interleaved rounds: per round the winner and cuBLASLt through the guard, then eager
  /// and compiled through the oracle, afresh, on every workload.
  void measure(const Problem& problem, const std::vector<Workload>& workloads,
               const std::optional<Solution>& winner, const std::optional<Solution>& library,
               BenchProblem& result) {
    const bool cuda = backend_for(options_.guard.device).times_compiled_baseline();
    std::vector<std::vector<Trace>> winner_rounds, library_rounds;
    BaselineRounds baseline_rounds;  // per baseline and workload, each round's timing
    Oracle& oracle = measure_.oracle();
    std::vector<Baseline> baselines{Baseline::Eager};
    if (cuda) baselines.push_back(Baseline::Compiled);
    // Both baselines of a round in one Python process: each process pays torch's import. The
    // rounds are fresh processes already, so with two or more each round needs only one, and
    // the fastest round is kept, as the oracle keeps the fastest of its fresh processes.
    const int processes = options_.rounds >= 2 ? 1 : kBaselineProcesses;
    auto time_baselines = [&] {
      auto measured = oracle.measure_reference_timings(problem, workloads, baselines, processes);
      for (auto& [baseline, timings] : measured)
        for (auto& [uuid, timing] : timings)
          baseline_rounds[baseline][uuid].push_back(std::move(timing));
    };
    for (int round = 0; round < options_.rounds; ++round) {
      output_.log << fmt::format("{}: side-by-side round {}/{}\n", problem.definition.name,
                                 round + 1, options_.rounds)
                  << std::flush;
      if (winner) winner_rounds.push_back(measure_.guard().evaluate(problem, *winner, workloads));
      if (library)
        library_rounds.push_back(measure_.guard().evaluate(problem, *library, workloads));
      time_baselines();
    }
    if (!winner_rounds.empty())
      annotate_traces(winner_rounds.back(), problem, *winner, calibration_);
    const Measurement winner_times = pooled_measurement(winner_rounds);
    const Measurement library_times = pooled_measurement(library_rounds);
    if (!winner_rounds.empty() && report_.environment.is_null())
      report_.environment = winner_rounds.front().front().environment;

    for (const Workload& workload : workloads) {
      BenchWorkload w;
      w.uuid = workload.uuid;
      w.axes = format_axes(workload.axes);
      const SolBound bound = speed_of_light(
          problem.definition, resolve_axes(problem.definition, workload), calibration_);
      w.sol_ms = bound.ms;
      w.sol_note = bound.note;
      w.eager = baseline_contender(problem, workload, Baseline::Eager, baseline_rounds);
      w.compiled = cuda ? baseline_contender(problem, workload, Baseline::Compiled, baseline_rounds)
                        : Contender{std::nullopt, "no torch.compile baseline on the CPU"};
      if (result.op_family == "gemm")
        w.cublaslt = library ? guard_contender(library_rounds, library_times, workload.uuid)
                             : Contender{std::nullopt, "no gemm_cublaslt template on this device"};
      w.kernelarc = winner ? guard_contender(winner_rounds, winner_times, workload.uuid)
                           : Contender{std::nullopt, no_winner_note(result.status)};
      if (!winner_rounds.empty()) w.diagnosis = winner_diagnosis(winner_rounds.back(), workload);
      result.workloads.push_back(std::move(w));
    }
  }

  static std::string no_winner_note(BenchStatus status) {
    if (status == BenchStatus::NoTemplate) return "no template";
    if (status == BenchStatus::NotServed) return "not served";
    return "no candidate passed the guard";
  }

  static std::string winner_diagnosis(const std::vector<Trace>& traces, const Workload& workload) {
    for (const Trace& trace : traces)
      if (trace.workload.value("uuid", std::string()) == workload.uuid)
        return trace_diagnosis_text(trace).value_or("");
    return "";
  }

  using BaselineRounds = std::map<Baseline, std::map<std::string, std::vector<ReferenceTiming>>>;

  /// The round with the lowest median: a fresh process can run in a slow mode for its life
  /// (baseline_processes.h), which pooling the rounds would blend into PyTorch's time.
  Contender baseline_contender(const Problem& problem, const Workload& workload, Baseline baseline,
                               const BaselineRounds& rounds) {
    std::vector<const std::vector<double>*> times;
    const std::vector<ReferenceTiming>* measured = nullptr;
    if (const auto by_workload = rounds.find(baseline); by_workload != rounds.end())
      if (const auto found = by_workload->second.find(workload.uuid);
          found != by_workload->second.end())
        measured = &found->second;
    if (measured)
      for (const ReferenceTiming& round : *measured) times.push_back(&round.times_ns);
    if (const auto fastest = fastest_run(times, "rounds, each a fresh process")) {
      const ReferenceTiming& round = (*measured)[fastest->index];
      std::vector<double> samples_ms;
      for (double ns : round.times_ns) samples_ms.push_back(ns * 1e-6);
      return {median_interval(samples_ms), round.note + fastest->note};
    }
    // Unavailable (no torch.compile, a failing reference): the cached path says why.
    Oracle& oracle = measure_.oracle();
    if (oracle.reference_timing(problem, workload, baseline))
      return {std::nullopt, "the fresh measurement failed"};
    return {std::nullopt, oracle.timing_unavailable_reason(problem, workload, baseline)};
  }

  static Contender guard_contender(const std::vector<std::vector<Trace>>& rounds,
                                   const Measurement& pooled, const std::string& uuid) {
    if (!pooled.passed)
      return {std::nullopt, std::string(status_name(pooled.status)) + ": " + pooled.log};
    std::vector<double> samples;
    for (const auto& traces : rounds)
      for (const Trace& trace : traces)
        if (trace.workload.value("uuid", std::string()) == uuid)
          samples.insert(samples.end(), trace.samples_ms.begin(), trace.samples_ms.end());
    return {median_interval(samples), fmt::format("through the guard, {} rounds", rounds.size())};
  }

  const BenchOptions& options_;
  const BenchOutput& output_;
  GuardSession& measure_;
  const std::optional<Calibration>& calibration_;
  BenchReport& report_;
};

void write_report(const std::filesystem::path& out, const BenchReport& report) {
  write_file_atomically(out / "bench.json", bench_to_json(report).dump(2) + "\n");
  write_file_atomically(out / "bench.md", bench_markdown(report));
}

/// The report --resume continues; InputError when it was benched with other settings.
BenchReport resumed_report(const std::filesystem::path& path, const BenchOptions& options) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  BenchReport report = bench_from_json(parse_json_text(text.str(), path.string()), path.string());
  if (report.device != options.guard.device || report.budget != options.budget ||
      report.rounds != options.rounds || report.workloads != options.guard.workloads ||
      report.keep_accuracy != options.keep_accuracy)
    throw InputError(fmt::format(
        "--resume: {} was benched on {} with budget {}, {} rounds, workloads [{}] and {} "
        "--keep-accuracy; rerun with those or without --resume to start over",
        path.string(), report.device, report.budget, report.rounds,
        fmt::join(report.workloads, " "), report.keep_accuracy ? "with" : "without"));
  return report;
}

/// A machine's description without its particulars: "cuda:0: NVIDIA H200 (sm_90, ..., PCI
/// ...)" -> "cuda:0: NVIDIA H200", so that another machine of the same model may resume.
std::string_view machine_model(std::string_view hardware) {
  return hardware.substr(0, hardware.find(" ("));
}

/// Refuses to add this machine's rows to a report whose rows another model measured. A machine
/// known only by its device string (no calibration names it) cannot be told apart.
void check_same_machine(const BenchReport& report, const std::filesystem::path& path,
                        const std::string& hardware) {
  if (hardware == report.device) return;
  for (const BenchProblem& problem : report.problems) {
    if (problem.hardware.empty() || machine_model(problem.hardware) == machine_model(hardware))
      continue;
    throw InputError(fmt::format(
        "--resume: {} holds {} benched on {}, and this machine is {}; a table of two machines "
        "would compare neither: resume on the same model, or bench into another --out",
        path.string(), problem.name, problem.hardware, hardware));
  }
}

}  // namespace

BenchOutcome run_bench_session(const BenchOptions& options, const BenchOutput& output) {
  if (options.rounds < 1) throw InputError("--rounds: expected at least 1");
  const std::vector<SuiteProblem> suite = discover_suite(options.suite, options.problems);
  Workspace workspace(options.guard.workspace);
  std::filesystem::path suite_path = std::filesystem::absolute(options.suite).lexically_normal();
  if (suite_path.filename().empty()) suite_path = suite_path.parent_path();
  const std::filesystem::path out = options.out.empty()
                                        ? workspace.root() / "bench" / suite_path.filename()
                                        : std::filesystem::path(options.out);
  std::filesystem::create_directories(out);

  BenchReport report;
  if (options.resume && std::filesystem::exists(out / "bench.json")) {
    report = resumed_report(out / "bench.json", options);
  } else {
    report.started = utc_now();
  }
  report.suite = options.suite;
  report.device = options.guard.device;
  report.command = options.command;
  report.updated = utc_now();
  report.budget = options.budget;
  report.rounds = options.rounds;
  report.workloads = options.guard.workloads;
  report.keep_accuracy = options.keep_accuracy;

  std::vector<const SuiteProblem*> todo;
  for (const SuiteProblem& problem : suite) {
    const bool done = std::any_of(report.problems.begin(), report.problems.end(),
                                  [&](const BenchProblem& b) { return b.name == problem.name; });
    if (!done) todo.push_back(&problem);
  }
  report.remaining.clear();
  for (const SuiteProblem* problem : todo) report.remaining.push_back(problem->name);
  output.log << fmt::format(
      "bench {} on {}: {} problem(s), {} already benched, {} to bench; budget {} candidates, "
      "{} interleaved rounds; writing {}\n",
      options.suite, options.guard.device, suite.size(), suite.size() - todo.size(), todo.size(),
      options.budget, options.rounds, (out / "bench.json").string());

  // Every problem read and recognized before any is measured: a malformed one costs seconds,
  // not the suite.
  std::vector<PreparedProblem> prepared = prepare_suite(
      todo, recognize_options(options.guard.workspace, options.guard.python, options.guard.device),
      output.log);

  GuardFlags measure_flags = options.guard;
  measure_flags.no_baseline = true;  // the oracle times the baselines afresh in each round
  GuardSession measure(measure_flags);
  const auto calibration = measure.guard().calibration();  // measured now in a fresh workspace
  // Named by the calibration, which a fresh workspace has only from here on.
  report.hardware = hardware_name(options.guard.workspace, options.guard.device);
  check_same_machine(report, out / "bench.json", report.hardware);
  ProblemBench bench(options, output, measure, calibration, report);
  const auto started = Clock::now();
  int benched = 0;
  for (PreparedProblem& problem : prepared) {
    const double elapsed = seconds_since(started);
    if (options.wall_time_s && benched > 0 && elapsed >= *options.wall_time_s) break;
    output.log << fmt::format("\n== {} ({})\n", problem.entry->name, problem.entry->dir.string())
               << std::flush;
    BenchProblem result = bench.run(problem, workspace);
    result.hardware = report.hardware;
    output.problem_done(result);
    report.problems.push_back(std::move(result));
    std::stable_sort(report.problems.begin(), report.problems.end(),
                     [](const BenchProblem& a, const BenchProblem& b) { return a.dir < b.dir; });
    report.remaining.erase(report.remaining.begin());
    report.oracle = measure.oracle().description();
    write_report(out, report);
    ++benched;
  }
  if (benched == 0) write_report(out, report);
  return {std::move(report), out};
}

}  // namespace kernelarc
