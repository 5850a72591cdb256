#include "cli/bench_suite.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/problem.h"

namespace kernelarc {

std::vector<SuiteProblem> discover_suite(const std::filesystem::path& suite,
                                         const std::vector<std::string>& only) {
  if (!std::filesystem::is_directory(suite))
    throw InputError(
        fmt::format("{}: expected a directory of problem directories", suite.string()));
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(suite))
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "definition.json"))
      dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty())
    throw InputError(fmt::format("{}: no problem directory (one holding definition.json) in it",
                                 suite.string()));

  std::vector<SuiteProblem> problems;
  std::set<std::string> found;
  for (const auto& dir : dirs) {
    SuiteProblem problem{dir, load_definition(dir / "definition.json").name};
    const std::string dir_name = dir.filename().string();
    const bool listed = only.empty() ||
                        std::find(only.begin(), only.end(), dir_name) != only.end() ||
                        std::find(only.begin(), only.end(), problem.name) != only.end();
    if (!listed) continue;
    found.insert(dir_name);
    found.insert(problem.name);
    problems.push_back(std::move(problem));
  }
  std::vector<std::string> unknown;
  for (const std::string& name : only)
    if (!found.contains(name)) unknown.push_back(name);
  if (!unknown.empty())
    throw InputError(
        fmt::format("--problems: no problem of {} is named {} (by directory or "
                    "definition name)",
                    suite.string(), fmt::join(unknown, ", ")));
  return problems;
}

}  // namespace kernelarc
