// `kernelarc bench`'s problems: the directories of a suite that hold a definition.json, sorted
// by directory name, optionally narrowed to some of them by directory or definition name.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kernelarc {

struct SuiteProblem {
  std::filesystem::path dir;
  std::string name;  ///< the definition's
};

/// Every problem of `suite` when `only` is empty, else those whose directory or definition
/// name is listed. InputError when the suite is no directory or has no problem, or naming each
/// listed name that no problem has.
std::vector<SuiteProblem> discover_suite(const std::filesystem::path& suite,
                                         const std::vector<std::string>& only);

}  // namespace kernelarc
