// `kernelarc bench`'s problems: the directories of a suite that hold a definition.json, sorted
// by directory name, optionally narrowed to some of them by directory or definition name; then
// each read, validated and recognized before anything is measured, so that a broken problem
// becomes a row of its own instead of stopping the suite.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/recognize.h"

namespace kernelarc {

struct SuiteProblem {
  std::filesystem::path dir;
  std::string name;   ///< the definition's, or the directory's when it cannot be read
  std::string error;  ///< why definition.json cannot be read; empty when it can
};

/// Every problem of `suite` when `only` is empty, else those whose directory or definition
/// name is listed, in the order listed. InputError when the suite is no directory or has no
/// problem, or naming each listed name that no problem has. A definition that cannot be read is
/// listed with its error.
std::vector<SuiteProblem> discover_suite(const std::filesystem::path& suite,
                                         const std::vector<std::string>& only);

/// A suite problem read (definition and workloads validated) and recognized, or why not.
struct PreparedProblem {
  const SuiteProblem* entry = nullptr;
  std::optional<RecognizedProblem> loaded;
  std::string error;  ///< why it cannot be read (the file and field); empty when loaded
};

/// Reads and validates every problem first (fast), then recognizes each, saying so on `log`.
/// Never throws for one problem: its error goes into its PreparedProblem.
std::vector<PreparedProblem> prepare_suite(const std::vector<const SuiteProblem*>& problems,
                                           const RecognizeOptions& options, std::ostream& log);

}  // namespace kernelarc
