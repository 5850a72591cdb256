// `kernelarc prompt <problem-dir>`: the prompt the LLM synthesizer would send for a move, built
// from the same pieces a run gives it (a parent solution and its traces, the calibrated device,
// the knowledge base, a stored run's board), so that a user can read and tune the prompt
// templates without calling a model.
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "app/code_synth_setup.h"
#include "app/recognize.h"
#include "cli/commands.h"
#include "codesynth/prompt_builder.h"
#include "core/error.h"
#include "core/eval_status.h"
#include "core/json_fields.h"
#include "optimize/code_moves.h"
#include "optimize/search_setup.h"
#include "optimize/strategy.h"
#include "store/workspace.h"

namespace kernelarc {

namespace {

struct PromptFlags {
  std::string problem_dir;
  std::string parent;
  std::string traces;
  std::string move;
  std::string agent = "explore";
  std::string device = "cpu";
  std::string workspace = kDefaultWorkspace;
  std::string python;
  std::string prompts;
  std::vector<std::string> board;
  int64_t run_id = 0;
  bool json = false;
};

SynthesisMove parse_move(const std::string& text, bool has_parent) {
  if (text.empty()) return has_parent ? SynthesisMove::Improve : SynthesisMove::Draft;
  for (const SynthesisMove move : {SynthesisMove::Draft, SynthesisMove::Improve,
                                   SynthesisMove::Crossover, SynthesisMove::Repair})
    if (text == synthesis_move_name(move)) {
      if (move != SynthesisMove::Draft && !has_parent)
        throw InputError(fmt::format("--move {}: needs --parent", text));
      return move;
    }
  throw InputError(fmt::format("--move {}: expected draft, improve, crossover or repair", text));
}

/// Results and diagnosis of the parent from its traces (SOL-ExecBench form, as `eval --json` and
/// `optimize --out` write them), in the words a run would give the synthesizer.
void read_traces(const std::filesystem::path& path, const Problem& problem,
                 CandidateContext& parent) {
  const OrderedJson traces = parse_json_text(read_text_file(path), path.string());
  if (!traces.is_array()) throw_input_error(path.string(), "", "expected an array of traces");
  Measurement measurement;
  measurement.passed = true;
  for (const OrderedJson& trace : traces) {
    const OrderedJson& evaluation = trace.at("evaluation");
    const std::string name = evaluation.value("status", std::string("?"));
    const std::optional<EvalStatus> status = status_from_name(name);
    if (!status) throw_input_error(path.string(), "evaluation.status", "not a status: " + name);
    if (*status != EvalStatus::Passed && measurement.passed) {
      measurement.passed = false;
      measurement.status = *status;
      measurement.log = evaluation.value("log", std::string());
    }
    const OrderedJson& ours = trace.at("kernelarc");
    if (!ours.contains("latency_ms") || ours.at("latency_ms").is_null()) continue;
    const OrderedJson& latency = ours.at("latency_ms");
    const OrderedJson& t_sol = ours.at("sol").at("t_sol_ms");
    WorkloadTime& time = measurement.times[trace.at("workload").value("uuid", std::string())];
    time.median_ms = latency.at("median").get<double>();
    time.ci_low_ms = latency.at("ci95_low").get<double>();
    time.ci_high_ms = latency.at("ci95_high").get<double>();
    if (t_sol.is_number()) time.sol_ms = t_sol.get<double>();
  }
  parent.status = measurement.status;
  parent.log = measurement.log;
  parent.results = results_text(measurement, {}, problem.workloads);
  parent.diagnosis = diagnosis_at(traces, largest_workload(problem.workloads).uuid);
}

int run_prompt(const PromptFlags& flags) {
  const Problem problem =
      load_recognized_problem(flags.problem_dir,
                              recognize_options(flags.workspace, flags.python, flags.device))
          .problem;
  SynthesisRequest request;
  request.problem = &problem;
  request.device = flags.device;
  request.hardware = hardware_facts(flags.workspace, flags.device);
  request.agent = flags.agent;
  request.strategy = find_strategy(flags.agent).description;
  request.move = parse_move(flags.move, !flags.parent.empty());
  if (!flags.parent.empty()) {
    CandidateContext parent;
    parent.solution = load_solution(flags.parent);
    if (!flags.traces.empty()) read_traces(flags.traces, problem, parent);
    request.parent = std::move(parent);
  }
  request.knowledge = knowledge_for_request(
      synthesis_knowledge(flags.workspace, problem.definition.ext.op_family, flags.device),
      request.seed);
  request.board = flags.board;
  if (flags.run_id > 0) {
    Workspace workspace(flags.workspace);
    for (const BoardEntry& entry : workspace.database().board_of(flags.run_id))
      if (entry.kind == BoardKind::Conclusion) request.board.push_back(entry.text);
  }
  const ChatRequest chat = build_prompt(load_prompt_templates(flags.prompts), request);
  if (flags.json) {
    OrderedJson json = {{"system", chat.system}, {"messages", OrderedJson::array()}};
    for (const ChatMessage& message : chat.messages)
      json["messages"].push_back({{"role", message.role}, {"content", message.content}});
    std::cout << json.dump(2) << '\n';
    return 0;
  }
  std::cout << "=== system ===\n" << chat.system << '\n';
  for (const ChatMessage& message : chat.messages)
    std::cout << "=== " << message.role << " ===\n" << message.content << '\n';
  return 0;
}

}  // namespace

CommandRunner add_prompt_command(CLI::App& app) {
  auto flags = std::make_shared<PromptFlags>();
  auto* cmd = app.add_subcommand(
      "prompt", "print the prompt the LLM synthesizer would send (no model is called)");
  cmd->add_option("problem", flags->problem_dir, "problem directory")->required();
  cmd->add_option("--parent", flags->parent,
                  "the solution (directory or solution.json) to build on");
  cmd->add_option("--traces", flags->traces,
                  "the parent's traces (eval --json, optimize --out): results and diagnosis");
  cmd->add_option("--move", flags->move, "draft, improve, crossover or repair");
  cmd->add_option("--agent", flags->agent, "the asking agent's strategy")->capture_default_str();
  cmd->add_option("--device", flags->device, "cpu or cuda:N")->capture_default_str();
  cmd->add_option("--workspace", flags->workspace,
                  "calibration, knowledge base and traced references")
      ->capture_default_str();
  cmd->add_option("--python", flags->python,
                  "Python with torch to trace the reference (default: detect)");
  cmd->add_option("--llm-prompts", flags->prompts,
                  "folder of prompt templates replacing the built-in ones of the same name");
  cmd->add_option("--board", flags->board, "a conclusion to show (repeatable)");
  cmd->add_option("--run", flags->run_id, "show the board conclusions of this stored run");
  cmd->add_flag("--json", flags->json, "print {system, messages} as JSON");
  return [flags] { return run_prompt(*flags); };
}

}  // namespace kernelarc
