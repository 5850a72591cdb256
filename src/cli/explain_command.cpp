// `kernelarc explain <problem-dir>`: how kernelarc understands a problem. The traced op graph of
// its reference (one line per compute node), the recognition (the hand-written family matched
// with its op_params, or the fused kernel plan, or why nothing serves it) and, for each template
// of the device's target in that family, whether it binds or why not.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "app/explain.h"
#include "app/recognize.h"
#include "app/table.h"
#include "backend/backend.h"
#include "cli/commands.h"
#include "core/error.h"
#include "synth/bound_template.h"

namespace kernelarc {

namespace {

struct ExplainFlags {
  std::string problem_dir;
  std::string device = "cpu";
  std::string workspace = ".kernelarc";
  std::string python;
  std::string root;
  bool json = false;
};

struct TemplateVerdict {
  std::string name;
  bool binds = false;
  std::string reason;
};

struct Explanation {
  RecognizedProblem loaded;
  DeviceKind target;
  std::vector<std::string> graph;  ///< graph_lines of the trace; empty when untraced
  std::vector<TemplateVerdict> templates;
  std::string no_template;  ///< describe_no_template when no template shares the family
};

Explanation explain(const ExplainFlags& flags) {
  Explanation e{
      load_recognized_problem(flags.problem_dir,
                              recognize_options(flags.workspace, flags.python, flags.device)),
      backend_for(flags.device).kind(),
      {},
      {},
      {}};
  const Recognition& r = e.loaded.recognition;
  if (!r.graph.is_null())
    e.graph = graph_lines(parse_op_graph(r.graph, "the traced graph of " + flags.problem_dir));
  const auto library = load_template_library(
      flags.root.empty() ? default_template_root() : std::filesystem::path(flags.root));
  const Problem& problem = e.loaded.problem;
  for (const TemplateMatch& match : match_templates(library, problem, e.target))
    e.templates.push_back({match.kernel->name, match.bound.has_value(), match.reason});
  if (!r.served())
    e.no_template = "none: no template family serves the problem (see the recognition)";
  else if (e.templates.empty())
    e.no_template = describe_no_template(library, problem, e.target);
  return e;
}

void print_text(const Explanation& e, std::ostream& out) {
  const Problem& problem = e.loaded.problem;
  const Recognition& r = e.loaded.recognition;
  out << fmt::format("problem {} ({})\n", problem.definition.name, problem.dir.string());
  if (r.graph.is_null()) {
    out << "graph: not traced\n";
  } else {
    out << fmt::format("graph (torch {}, {} trace):\n", r.graph.value("torch", std::string("?")),
                       r.graph.value("trace", std::string("?")));
    for (const std::string& line : e.graph) out << "  " << line << '\n';
  }
  out << fmt::format("recognition: {}: {}\n", source_name(r.source),
                     r.served() ? r.summary : r.reason);
  if (r.served()) {
    out << fmt::format("  family: {}\n", r.family);
    if (r.source == Recognition::Source::Fused) {
      for (const std::string& line : plan_lines(r.op_params)) out << "  " << line << '\n';
    } else {
      out << fmt::format("  op_params: {}\n", r.op_params.dump());
    }
  }
  for (const std::string& note : r.notes) out << "  note: " << note << '\n';
  const DefinitionExtension& ext = problem.definition.ext;
  out << fmt::format("bytes: {}\nflops: {}\n", ext.bytes.empty() ? "-" : ext.bytes,
                     ext.flops.empty() ? "-" : ext.flops);
  out << fmt::format("templates ({}):\n", device_kind_name(e.target));
  if (e.templates.empty()) {
    out << "  " << e.no_template << '\n';
    return;
  }
  TextTable table({"template", "binds"});
  for (const TemplateVerdict& verdict : e.templates)
    table.add_row({verdict.name, verdict.binds ? "yes" : "no: " + verdict.reason});
  table.print(out);
}

OrderedJson explanation_json(const Explanation& e) {
  const Problem& problem = e.loaded.problem;
  OrderedJson templates = OrderedJson::array();
  for (const TemplateVerdict& verdict : e.templates)
    templates.push_back(
        {{"template", verdict.name}, {"binds", verdict.binds}, {"reason", verdict.reason}});
  return {{"problem", problem.definition.name},
          {"dir", problem.dir.string()},
          {"target", device_kind_name(e.target)},
          {"graph", e.loaded.recognition.graph},
          {"graph_lines", e.graph},
          {"recognition", recognition_json(e.loaded.recognition)},
          {"bytes", problem.definition.ext.bytes},
          {"flops", problem.definition.ext.flops},
          {"templates", templates},
          {"no_template", e.no_template}};
}

}  // namespace

CommandRunner add_explain_command(CLI::App& app) {
  auto flags = std::make_shared<ExplainFlags>();
  auto* cmd = app.add_subcommand(
      "explain", "the traced graph of a problem's reference, its recognition and its templates");
  cmd->add_option("problem", flags->problem_dir, "problem directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--device", flags->device, "cpu or cuda:N (picks the templates' target)")
      ->capture_default_str();
  cmd->add_option("--workspace", flags->workspace, "where traced references are cached")
      ->capture_default_str();
  cmd->add_option("--python", flags->python,
                  "Python with torch to trace the reference (default: detect)");
  cmd->add_option("--templates", flags->root, "template library root");
  cmd->add_flag("--json", flags->json, "print the explanation as JSON");
  return [flags] {
    backend_for(flags->device);  // an unknown device is an InputError naming --device
    const Explanation e = explain(*flags);
    if (flags->json)
      std::cout << explanation_json(e).dump(2) << '\n';
    else
      print_text(e, std::cout);
    return 0;
  };
}

}  // namespace kernelarc
