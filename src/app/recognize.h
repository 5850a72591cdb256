// Recognition: which template family serves a problem, and with which op_params. An annotated
// definition (kernelarc.op_family) is taken as written unless no template implements its family;
// otherwise the PyTorch reference is traced into an op graph (docs/RECOGNITION.md §1), matched
// against the hand-written families, and else lowered into a kernel plan for the "fused" family
// (§2).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/device_kind.h"
#include "core/problem.h"

namespace kernelarc {

struct Recognition {
  enum class Source { Annotated, Matched, Fused, NotServed } source = Source::NotServed;
  std::string family;
  OrderedJson op_params = OrderedJson::object();
  std::string summary;  ///< one line, e.g. "rmsnorm (eps 1e-05, weight) via the row family"
  std::string reason;   ///< NotServed: why (trace error, the unsupported op, ...)
  std::vector<std::string> notes;  ///< why family matching failed, lowering notes
  OrderedJson graph;               ///< the traced op graph (null when annotated or untraceable)
  /// kernelarc.bytes / kernelarc.flops derived from the graph and its plan; empty = not derived.
  std::string bytes;
  std::string flops;

  bool served() const { return source != Source::NotServed; }
};

struct RecognizeOptions {
  std::string python;               ///< the interpreter the oracle uses
  std::filesystem::path cache_dir;  ///< where traces are cached by definition hash; empty = none
  bool trace = true;                ///< false: an unannotated definition is NotServed, untraced
  /// A matched family counts only when a template of this target binds the problem (else the
  /// fused plan serves it); none = any match counts.
  std::optional<DeviceKind> target;
};

/// "annotated", "matched", "fused" or "not served".
std::string source_name(Recognition::Source source);

Recognition recognize(const Problem& problem, const RecognizeOptions& options);

/// Fills problem.definition.ext.op_family / op_params from `r` when not annotated, and
/// ext.bytes / ext.flops when absent and derived (so the speed-of-light bound applies).
void apply_recognition(Problem& problem, const Recognition& r);

/// The options the commands use: the oracle's interpreter (`python`, empty = detect as the oracle
/// does), the trace cache in the workspace, and the templates' target of `device` ("cpu" or
/// "cuda:N").
RecognizeOptions recognize_options(const std::filesystem::path& workspace,
                                   const std::string& python, const std::string& device);

struct RecognizedProblem {
  Problem problem;  ///< recognition applied
  Recognition recognition;
};

/// load_problem, recognize and apply_recognition; InputError when the problem cannot be read.
RecognizedProblem load_recognized_problem(const std::filesystem::path& dir,
                                          const RecognizeOptions& options);

}  // namespace kernelarc
