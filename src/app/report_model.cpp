#include "app/report_model.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "app/line_diff.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "diagnosis/diagnosis.h"
#include "synth/knob_point.h"

namespace kernelarc {

namespace {

using Json = nlohmann::json;

/// The member `key` when it is a string, else "".
std::string text_at(const OrderedJson& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

/// The member `key` when it is a number, else null (bench.json writes null for what it lacks).
Json number_at(const OrderedJson& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_number() ? Json(found->get<double>()) : Json();
}

/// "M=4096 K=4096" from a workload's axes; its uuid when it has none.
std::string workload_name(const OrderedJson& workload) {
  std::string name;
  if (const auto axes = workload.find("axes"); axes != workload.end() && axes->is_object())
    for (const auto& [axis, value] : axes->items())
      name += (name.empty() ? "" : " ") + axis + "=" +
              (value.is_string() ? value.get<std::string>() : value.dump());
  return name.empty() ? workload.value("uuid", std::string("?")) : name;
}

/// The traces stored with a candidate's evaluation (an array; empty without one).
OrderedJson stored_traces(Workspace& workspace, const std::optional<Evaluation>& evaluation) {
  if (!evaluation) return OrderedJson::array();
  const OrderedJson blob = OrderedJson::parse(workspace.objects().get(evaluation->traces_key));
  return blob.contains("traces") ? blob.at("traces") : OrderedJson::array();
}

/// The diagnosis of the trace that moves the most bytes: the largest workload.
std::optional<Diagnosis> largest_diagnosis(const OrderedJson& traces) {
  std::optional<Diagnosis> largest;
  for (const OrderedJson& trace : traces) {
    const auto ours = trace.find("kernelarc");
    if (ours == trace.end() || !ours->contains("extra")) continue;
    const OrderedJson& extra = ours->at("extra");
    if (!extra.is_object() || !extra.contains("diagnosis")) continue;
    Diagnosis diagnosis = Diagnosis::from_json(extra.at("diagnosis"));
    if (!largest || diagnosis.bytes > largest->bytes) largest = std::move(diagnosis);
  }
  return largest;
}

std::vector<SourceFile> stored_sources(Workspace& workspace, const Candidate& candidate) {
  const OrderedJson json = OrderedJson::parse(workspace.objects().get(candidate.solution_key));
  std::vector<SourceFile> sources;
  if (!json.is_object() || !json.contains("sources")) return sources;
  for (const OrderedJson& source : json.at("sources"))
    sources.push_back(
        {source.value("path", std::string()), source.value("content", std::string())});
  return sources;
}

std::string candidate_label(Workspace& workspace, const Candidate& candidate) {
  if (candidate.agent == "baseline") {
    const OrderedJson json = OrderedJson::parse(workspace.objects().get(candidate.solution_key));
    return "baseline " + (json.is_object() ? json.value("name", std::string()) : std::string());
  }
  return candidate.template_name + " " +
         format_knob_point(knob_point_from_json(candidate.knob_point));
}

Json winner_files(Workspace& workspace, const Candidate& winner,
                  const std::optional<Candidate>& parent) {
  std::map<std::string, std::string> before;
  if (parent)
    for (const SourceFile& source : stored_sources(workspace, *parent))
      before[source.path] = source.content;
  Json files = Json::array();
  for (const SourceFile& source : stored_sources(workspace, winner)) {
    Json diff;
    if (parent)
      if (const auto lines = diff_lines(before[source.path], source.content)) {
        diff = Json::array();
        for (const DiffLine& line : *lines)
          diff.push_back({{"op", std::string(1, line.op)}, {"text", line.text}});
      }
    files.push_back({{"path", source.path}, {"content", source.content}, {"diff", diff}});
  }
  return files;
}

/// The winner's (and the baseline's) side-by-side times per workload, with PyTorch's.
Json workload_bars(const Json& summary, const std::map<std::string, std::string>& names) {
  Json workloads = Json::array();
  if (!summary.contains("finalists") || summary.at("finalists").empty()) return workloads;
  const Json& winner = summary.at("finalists").front().at("measurement").at("times");
  const Json* baseline = summary.contains("baseline")
                             ? &summary.at("baseline").at("measurement").at("times")
                             : nullptr;
  for (const auto& [uuid, time] : winner.items()) {
    Json bars = Json::array();
    auto bar = [&](const std::string& label, const Json& ms, const Json& lo, const Json& hi) {
      if (ms.is_number()) bars.push_back({{"label", label}, {"ms", ms}, {"lo", lo}, {"hi", hi}});
    };
    bar("eager", time.value("eager_ms", Json()), Json(), Json());
    bar("torch.compile", time.value("compiled_ms", Json()), Json(), Json());
    if (baseline && baseline->contains(uuid)) {
      const Json& base = baseline->at(uuid);
      bar("baseline", base.at("median_ms"), base.at("ci_low_ms"), base.at("ci_high_ms"));
    }
    bar("kernelarc", time.at("median_ms"), time.at("ci_low_ms"), time.at("ci_high_ms"));
    const auto name = names.find(uuid);
    workloads.push_back({{"name", name == names.end() ? uuid : name->second}, {"bars", bars}});
  }
  return workloads;
}

std::vector<std::string> diagnosis_lines(const std::optional<Diagnosis>& diagnosis) {
  std::vector<std::string> lines;
  if (!diagnosis) return lines;
  std::istringstream text(diagnosis_text(*diagnosis));
  for (std::string line; std::getline(text, line);) {
    const auto start = line.find_first_not_of(' ');
    if (start != std::string::npos) lines.push_back(line.substr(start));
  }
  return lines;
}

/// What every row of a run refers to.
struct RunContext {
  std::optional<double> baseline_ms;
  std::set<int64_t> lineage;
  std::optional<int64_t> winner_id;
};

RunContext run_context(Database& db, const std::vector<Candidate>& candidates,
                       const Json& summary) {
  RunContext context;
  for (const Candidate& candidate : candidates)
    if (candidate.agent == "baseline")
      if (const auto evaluation = db.evaluation_of(candidate.id);
          evaluation && evaluation->median_ms)
        context.baseline_ms = evaluation->median_ms;
  for (const Json& step : summary.value("lineage", Json::array()))
    context.lineage.insert(step.at("candidate").get<int64_t>());
  if (summary.contains("finalists") && !summary.at("finalists").empty())
    context.winner_id = summary.at("finalists").front().at("candidate").get<int64_t>();
  return context;
}

/// The calibrated ceilings a diagnosis measured its candidate against, or null.
Json roof_of(const Diagnosis& diagnosis) {
  if (!diagnosis.achieved_gbs || !diagnosis.bandwidth_fraction || !diagnosis.achieved_tflops ||
      !diagnosis.compute_fraction || *diagnosis.bandwidth_fraction <= 0 ||
      *diagnosis.compute_fraction <= 0)
    return Json();
  return {{"bandwidth_gbs", *diagnosis.achieved_gbs / *diagnosis.bandwidth_fraction},
          {"peak_gflops", *diagnosis.achieved_tflops * 1e3 / *diagnosis.compute_fraction},
          {"peak_label", diagnosis.compute_peak}};
}

Json candidate_row(Workspace& workspace, const Candidate& candidate,
                   const std::optional<Evaluation>& evaluation,
                   const std::optional<Diagnosis>& diagnosis, const RunContext& context) {
  const bool passed = evaluation && evaluation->median_ms.has_value();
  Json row = {{"seq", candidate.seq},
              {"id", candidate.id},
              {"agent", candidate.agent},
              {"label", candidate_label(workspace, candidate)},
              {"status", evaluation ? evaluation->status : std::string("NOT EVALUATED")},
              {"passed", passed},
              {"ms", passed ? Json(*evaluation->median_ms) : Json()},
              {"ci", Json()},
              {"speedup", Json()},
              {"parent", candidate.parent_id ? Json(*candidate.parent_id) : Json()},
              {"lineage", context.lineage.count(candidate.id) > 0},
              {"winner", context.winner_id == candidate.id},
              {"gflops", Json()},
              {"intensity", Json()}};
  if (!passed) return row;
  if (evaluation->ci_low_ms && evaluation->ci_high_ms)
    row["ci"] = {*evaluation->ci_low_ms, *evaluation->ci_high_ms};
  if (context.baseline_ms) row["speedup"] = *context.baseline_ms / *evaluation->median_ms;
  if (diagnosis && diagnosis->median_us && *diagnosis->median_us > 0 && diagnosis->bytes > 0 &&
      diagnosis->flops > 0) {
    row["gflops"] = diagnosis->flops / (*diagnosis->median_us * 1e3);
    row["intensity"] = diagnosis->flops / diagnosis->bytes;
  }
  return row;
}

Json run_facts(const Run& run, const Json& summary) {
  Json facts = Json::array();
  auto fact = [&](const std::string& label, const std::string& value) {
    if (!value.empty()) facts.push_back({label, value});
  };
  fact("problem", run.problem_name);
  fact("device", run.device);
  fact("run", fmt::format("{} ({}), seed {}", run.id, run_status_name(run.status), run.seed));
  fact("started", run.created_at);
  fact("finished", run.finished_at.value_or(""));
  if (run.config.contains("options"))
    fact("budget", fmt::format("{} candidates", run.config.at("options").value("budget", 0)));
  fact("stopped", summary.value("stop_reason", std::string()));
  if (summary.contains("evaluated"))
    fact("candidates",
         fmt::format("{} evaluated, {} passed", summary.at("evaluated").get<int64_t>(),
                     summary.at("passed").get<int64_t>()));
  if (const double seconds = summary.value("search_seconds", 0.0); seconds > 0)
    fact("search",
         fmt::format("{} measured in {:.1f} s on {} evaluator(s), {:.2f} candidates/s",
                     summary.value("measured", 0), seconds, summary.value("evaluators", 1),
                     summary.value("measured", 0) / seconds));
  if (summary.contains("speedup"))
    fact("speedup over the baseline", fmt::format("{:.2f}x ({:.2f}-{:.2f}), side by side",
                                                  summary.at("speedup").at("value").get<double>(),
                                                  summary.at("speedup").at("low").get<double>(),
                                                  summary.at("speedup").at("high").get<double>()));
  return facts;
}

/// What the lineage's step to the winner changed ("VEC 8->4"), or "".
std::string winner_changes(const Json& summary, int64_t winner_id) {
  for (const Json& step : summary.value("lineage", Json::array()))
    if (step.value("candidate", int64_t{0}) == winner_id) return step.value("changes", "");
  return "";
}

Json winner_of(Workspace& workspace, const std::vector<Candidate>& candidates,
               std::optional<int64_t> winner_id, const Json& summary) {
  const auto found = std::find_if(candidates.begin(), candidates.end(),
                                  [&](const Candidate& c) { return c.id == winner_id; });
  if (!winner_id || found == candidates.end()) return Json();
  std::optional<Candidate> parent;
  if (found->parent_id) parent = workspace.database().find_candidate(*found->parent_id);
  return {{"label", candidate_label(workspace, *found)},
          {"parent_label", parent ? Json(candidate_label(workspace, *parent)) : Json()},
          {"changes", winner_changes(summary, *winner_id)},
          {"files", winner_files(workspace, *found, parent)}};
}

}  // namespace

Json run_report_model(Workspace& workspace, int64_t run_id) {
  Database& db = workspace.database();
  const std::optional<Run> run = db.find_run(run_id);
  if (!run)
    throw InputError(fmt::format("report: run {}: no such run in the workspace {}", run_id,
                                 workspace.root().string()));
  const Json summary = db.load_agent_state(run_id, "orchestrator").value_or(Json::object());
  const std::vector<Candidate> candidates = db.candidates_of(run_id);
  const RunContext context = run_context(db, candidates, summary);

  Json rows = Json::array();
  Json roofline;
  std::map<std::string, std::string> workload_names;
  std::optional<Diagnosis> winner_diagnosis;
  for (const Candidate& candidate : candidates) {
    const std::optional<Evaluation> evaluation = db.evaluation_of(candidate.id);
    const OrderedJson traces = stored_traces(workspace, evaluation);
    const std::optional<Diagnosis> diagnosis = largest_diagnosis(traces);
    rows.push_back(candidate_row(workspace, candidate, evaluation, diagnosis, context));
    if (roofline.is_null() && diagnosis) roofline = roof_of(*diagnosis);
    if (context.winner_id != candidate.id) continue;
    winner_diagnosis = diagnosis;
    for (const OrderedJson& trace : traces)
      if (trace.contains("workload"))
        workload_names[trace.at("workload").value("uuid", std::string())] =
            workload_name(trace.at("workload"));
  }
  Json conclusions = Json::array();
  for (const BoardEntry& entry : db.board_of(run_id))
    if (entry.kind == BoardKind::Conclusion) conclusions.push_back(entry.text);
  return {
      {"title", fmt::format("kernelarc run {}: {} on {}", run->id, run->problem_name, run->device)},
      {"kind", "run"},
      {"facts", run_facts(*run, summary)},
      {"candidates", rows},
      {"roofline", roofline},
      {"workloads", workload_bars(summary, workload_names)},
      {"conclusions", conclusions},
      {"winner", winner_of(workspace, candidates, context.winner_id, summary)},
      {"diagnosis", diagnosis_lines(winner_diagnosis)}};
}

Json bench_report_model(const std::filesystem::path& bench_dir) {
  const std::filesystem::path file = bench_dir / "bench.json";
  const std::string where = file.string();
  const OrderedJson bench = parse_json_text(read_text_file(file), where);
  expect_object(bench, where, "");
  Json facts = Json::array();
  for (const char* key : {"suite", "device", "command", "started", "updated"})
    if (const OrderedJson* value = find_optional(bench, key); value && value->is_string())
      facts.push_back({key, value->get<std::string>()});
  if (const OrderedJson* budget = find_optional(bench, "budget"))
    facts.push_back({"budget", fmt::format("{} candidates per problem", budget->dump())});
  if (const OrderedJson* environment = find_optional(bench, "environment");
      environment && environment->is_object()) {
    for (const char* key : {"hardware", "compiler", "oracle"})
      if (const OrderedJson* value = find_optional(*environment, key); value && value->is_string())
        facts.push_back({key, value->get<std::string>()});
    // The clocks as the bench found the device: figures are read against them.
    if (const OrderedJson* device = find_optional(*environment, "device_before");
        device && device->is_object() && device->contains("sm_clock_mhz"))
      facts.push_back(
          {"device before",
           fmt::format("driver {}, SM {} MHz, memory {} MHz, {} C",
                       device->value("driver_version", std::string("?")),
                       device->at("sm_clock_mhz").dump(), device->value("memory_clock_mhz", 0),
                       device->value("temperature_c", 0))});
  }

  Json problems = Json::array();
  Json workloads = Json::array();
  const OrderedJson& list = require_member(bench, "problems", where, "");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const OrderedJson& problem = list[i];
    const std::string field = field_index("problems", i);
    expect_object(problem, where, field);
    const std::string name = expect_string(require_member(problem, "name", where, field), where,
                                           field_path(field, "name"));
    Json row = {{"name", name},
                {"status", text_at(problem, "status")},
                {"speedup", Json()},
                {"lo", Json()},
                {"hi", Json()},
                {"sol_score", number_at(problem, "sol_score")},
                {"kernelarc", text_at(problem, "solution")}};
    if (const OrderedJson* speedup = find_optional(problem, "speedup");
        speedup && speedup->is_object())
      row.update({{"speedup", number_at(*speedup, "value")},
                  {"lo", number_at(*speedup, "low")},
                  {"hi", number_at(*speedup, "high")}});
    problems.push_back(std::move(row));
    const OrderedJson* measured = find_optional(problem, "workloads");
    if (!measured || !measured->is_array()) continue;
    for (const OrderedJson& workload : *measured) {
      Json bars = Json::array();
      for (const auto& [key, label] : {std::pair{"eager", "eager"},
                                       {"compiled", "torch.compile"},
                                       {"cublaslt", "cuBLASLt"},
                                       {"kernelarc", "kernelarc"}}) {
        const OrderedJson* time = find_optional(workload, key);
        if (!time || !time->is_object() || number_at(*time, "median_ms").is_null()) continue;
        bars.push_back({{"label", label},
                        {"ms", number_at(*time, "median_ms")},
                        {"lo", number_at(*time, "ci_low_ms")},
                        {"hi", number_at(*time, "ci_high_ms")}});
      }
      workloads.push_back({{"name", name + " " + text_at(workload, "axes")}, {"bars", bars}});
    }
  }
  const std::string suite = text_at(bench, "suite");
  return {{"title", fmt::format("kernelarc bench: {}", suite.empty() ? bench_dir.string() : suite)},
          {"kind", "bench"},
          {"facts", facts},
          {"candidates", Json::array()},
          {"roofline", Json()},
          {"workloads", workloads},
          {"problems", problems},
          {"conclusions", Json::array()},
          {"winner", Json()},
          {"diagnosis", Json::array()}};
}

}  // namespace kernelarc
