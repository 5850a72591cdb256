// The generated entry point of an exported solution: main.cpp, a PyTorch extension whose `run`
// takes the definition's inputs (and, in destination-passing style, its outputs) as SOL-ExecBench
// and FlashInfer-Bench pass them, checks them against the definition, binds the axes from their
// shapes and calls the kernelarc solution the way kernelarc's backend does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/problem.h"

namespace kernelarc {

/// One build of the solution: a variant's knobs, or the top-level ones (`when` empty).
struct ExportVariant {
  std::string suffix;  ///< appended to the renamed symbols of this build ("ka_v0")
  std::string when;    ///< expression over axes; empty for the build that serves every other shape
  std::map<std::string, int64_t> knobs;
};

struct EntryPlan {
  const Definition* definition = nullptr;
  std::string solution_name;
  bool cuda = false;
  bool destination_passing_style = true;
  /// In dispatch order; the last one has an empty `when`.
  std::vector<ExportVariant> variants;
  /// A kernel ABI solution (ka_run) rather than a device-only kernel with a launcher per variant.
  bool abi = true;
  std::string abi_symbol;             ///< the solution's entry symbol, before the variant suffix
  std::string workspace_bytes = "0";  ///< expression over axes and knobs
};

/// The name of the launcher function of a device-only kernel's variant, defined by the launcher
/// source (export_launcher_source.h) and called by main.cpp.
std::string launcher_function_name(const ExportVariant& variant);

/// main.cpp. Throws InputError naming the definition's field when it cannot be exported (a
/// var axis that no tensor of the call carries).
std::string generate_entry_source(const EntryPlan& plan);

}  // namespace kernelarc
