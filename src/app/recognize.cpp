#include "app/recognize.h"

#include <fmt/format.h>

#include "app/problem_costs.h"
#include "app/recognize_attention.h"
#include "app/recognize_moe.h"
#include "backend/backend.h"
#include "core/error.h"
#include "lower/family_match.h"
#include "lower/lower_plan.h"
#include "lower/op_graph.h"
#include "oracle/graph_trace.h"
#include "synth/bound_template.h"
#include "synth/kernel_template.h"

namespace kernelarc {

namespace {

/// "fused plan of 2 kernels (reduce, pointwise)".
std::string plan_summary(const OrderedJson& plan) {
  std::vector<std::string> kinds;
  for (const OrderedJson& kernel : plan.value("kernels", OrderedJson::array()))
    kinds.push_back(kernel.value("kind", std::string("?")));
  return fmt::format("fused plan of {} kernel{} ({})", kinds.size(), kinds.size() == 1 ? "" : "s",
                     fmt::join(kinds, ", "));
}

/// Fills the cost expressions from the graph and, when the graph lowers, its plan.
void derive_costs(const Definition& def, const OpGraph& graph, const OrderedJson* plan,
                  Recognition& r) {
  r.bytes = io_bytes_expr(def, graph);
  if (plan != nullptr) r.flops = plan_flops_expr(*plan);
}

const std::vector<KernelTemplate>& template_library() {
  static const std::vector<KernelTemplate> library = load_template_library(default_template_root());
  return library;
}

/// Why no template of `target` serves `problem` once `family` and `op_params` are applied, or
/// "" when one binds.
std::string no_binding_template(const Problem& problem, const FamilyMatch& match,
                                DeviceKind target) {
  const std::vector<KernelTemplate>& library = template_library();
  Problem matched = problem;
  matched.definition.ext.op_family = match.family;
  matched.definition.ext.op_params = match.op_params;
  const std::vector<TemplateMatch> matches = match_templates(library, matched, target);
  std::vector<std::string> reasons;
  for (const TemplateMatch& m : matches) {
    if (m.bound) return "";
    reasons.push_back(fmt::format("{}: {}", m.kernel->name, m.reason));
  }
  if (reasons.empty()) return describe_no_template(library, matched, target);
  return fmt::format("{}", fmt::join(reasons, "; "));
}

/// Why no template serves the problem's annotated op_family on `target` (on either target when
/// none is given), or "" when some template shares the family (bound or not: then the annotation
/// stands and its binding errors are what the user needs).
std::string unserved_family(const Problem& problem, std::optional<DeviceKind> target) {
  const std::vector<KernelTemplate>& library = template_library();
  std::vector<std::string> reasons;
  for (const DeviceKind kind : {DeviceKind::Cpu, DeviceKind::Cuda}) {
    if (target && kind != *target) continue;
    if (!match_templates(library, problem, kind).empty()) return "";
    reasons.push_back(describe_no_template(library, problem, kind));
  }
  return fmt::format("{}", fmt::join(reasons, "; "));
}

/// recognize() for a definition without kernelarc.op_family: the signature matchers, then the
/// trace, the hand-written families and the fused plan.
Recognition recognize_reference(const Problem& problem, const RecognizeOptions& options) {
  const Definition& def = problem.definition;
  Recognition r;
  // Before the trace: the tracer cannot follow the page-table loops of attention references or
  // the routed token selection of mixture-of-experts ones.
  std::string signature_note;
  for (const auto& matcher : {match_attention_signature, match_moe_signature}) {
    const std::optional<FamilySignature> signature = matcher(def);
    if (!signature) continue;
    const std::string unbound =
        options.target ? no_binding_template(problem, signature->match, *options.target) : "";
    if (unbound.empty()) {
      r.source = Recognition::Source::Matched;
      r.family = signature->match.family;
      r.op_params = signature->match.op_params;
      r.summary = signature->match.summary;
      r.bytes = signature->bytes;
      r.flops = signature->flops;
      return r;
    }
    signature_note = fmt::format("{} by its tensors, but no template binds it: {}",
                                 signature->match.family, unbound);
  }
  if (!options.trace) {
    r.reason = "the definition has no kernelarc.op_family and tracing its reference is off";
    return r;
  }
  const GraphTraceResult traced = trace_reference(problem, options.python, options.cache_dir);
  if (!traced.ok) {
    r.reason = "tracing the reference failed: " + traced.error;
    if (!signature_note.empty()) r.reason += "; " + signature_note;
    return r;
  }
  r.graph = traced.graph;
  OpGraph graph;
  try {
    graph = parse_op_graph(traced.graph, fmt::format("the traced graph of {}", def.name));
  } catch (const InputError& error) {
    r.reason = error.what();
    return r;
  }

  // The plan serves as a fallback and, for a matched family too, says how many FLOPs it has.
  const PlanLowering lowering = lower_to_plan(graph, def);
  derive_costs(def, graph, lowering.ok ? &lowering.plan : nullptr, r);
  FamilyMatch match = match_family(graph, def);
  if (match.ok && options.target) {
    const std::string unbound = no_binding_template(problem, match, *options.target);
    if (!unbound.empty()) {
      match.ok = false;
      match.reason = fmt::format("{} matches, but no {} template binds it ({})", match.family,
                                 device_kind_name(*options.target), unbound);
    }
  }
  if (match.ok) {
    r.source = Recognition::Source::Matched;
    r.family = match.family;
    r.op_params = match.op_params;
    r.summary = match.summary.empty() ? match.family : match.summary;
    return r;
  }
  r.notes = lowering.notes;
  if (!signature_note.empty()) r.notes.insert(r.notes.begin(), signature_note);
  if (lowering.ok) {
    r.notes.insert(r.notes.begin(), "no hand-written family matches: " + match.reason);
    r.source = Recognition::Source::Fused;
    r.family = "fused";
    r.op_params = lowering.plan;
    r.summary = plan_summary(lowering.plan);
    return r;
  }
  r.reason =
      fmt::format("{} (and no hand-written family matches: {})", lowering.reason, match.reason);
  return r;
}

}  // namespace

std::string source_name(Recognition::Source source) {
  switch (source) {
    case Recognition::Source::Annotated:
      return "annotated";
    case Recognition::Source::Matched:
      return "matched";
    case Recognition::Source::Fused:
      return "fused";
    case Recognition::Source::NotServed:
      return "not served";
  }
  return "not served";
}

Recognition recognize(const Problem& problem, const RecognizeOptions& options) {
  const Definition& def = problem.definition;
  if (def.ext.op_family.empty()) return recognize_reference(problem, options);
  Recognition annotated;
  annotated.source = Recognition::Source::Annotated;
  annotated.family = def.ext.op_family;
  annotated.op_params = def.ext.op_params;
  annotated.summary = fmt::format("{} (kernelarc.op_family in the definition)", annotated.family);
  // A family no template implements (a user's name for the operation, or one kernelarc has no
  // kernel for yet) would leave the problem unserved: what its reference computes may still be
  // a family that is served, or a fused plan.
  const std::string unserved = options.trace ? unserved_family(problem, options.target) : "";
  if (unserved.empty()) return annotated;
  Problem unannotated = problem;
  unannotated.definition.ext.op_family.clear();
  unannotated.definition.ext.op_params = OrderedJson::object();
  Recognition r = recognize_reference(unannotated, options);
  const std::string note =
      fmt::format("kernelarc.op_family \"{}\" is annotated, but {}", annotated.family, unserved);
  if (!r.served()) {
    annotated.notes.push_back(
        fmt::format("{}; the reference did not serve it either: {}", note, r.reason));
    return annotated;
  }
  r.notes.insert(r.notes.begin(), note + ": recognized from the reference instead");
  return r;
}

void apply_recognition(Problem& problem, const Recognition& r) {
  DefinitionExtension& ext = problem.definition.ext;
  if (r.source == Recognition::Source::Matched || r.source == Recognition::Source::Fused) {
    ext.op_family = r.family;
    ext.op_params = r.op_params;
  }
  if (ext.bytes.empty()) ext.bytes = r.bytes;
  if (ext.flops.empty()) ext.flops = r.flops;
}

RecognizeOptions recognize_options(const std::filesystem::path& workspace,
                                   const std::string& python, const std::string& device) {
  return {python, workspace / "graphs", true, backend_for(device).kind()};
}

RecognizedProblem load_recognized_problem(const std::filesystem::path& dir,
                                          const RecognizeOptions& options) {
  RecognizedProblem loaded{load_problem(dir), {}};
  loaded.recognition = recognize(loaded.problem, options);
  apply_recognition(loaded.problem, loaded.recognition);
  return loaded;
}

}  // namespace kernelarc
