#include "app/bench_suite.h"

#include <algorithm>
#include <ostream>
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
  std::vector<std::string> unreadable;  // a name asked for may be one of these definitions
  for (const auto& dir : dirs) {
    const std::string dir_name = dir.filename().string();
    SuiteProblem problem{dir, dir_name, ""};
    try {
      problem.name = load_definition(dir / "definition.json").name;
    } catch (const InputError& error) {
      problem.error = error.what();
      unreadable.push_back(problem.error);
    }
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
    throw InputError(fmt::format(
        "--problems: no problem of {} is named {} (by directory or definition name){}",
        suite.string(), fmt::join(unknown, ", "),
        unreadable.empty()
            ? ""
            : fmt::format("; these definitions cannot be read: {}", fmt::join(unreadable, "; "))));
  // A list given is the order to bench in (the cheap or urgent first); else directory order.
  const auto rank = [&only](const SuiteProblem& p) {
    const auto named = [&p](const std::string& n) {
      return n == p.dir.filename().string() || n == p.name;
    };
    return std::find_if(only.begin(), only.end(), named) - only.begin();
  };
  std::stable_sort(
      problems.begin(), problems.end(),
      [&rank](const SuiteProblem& a, const SuiteProblem& b) { return rank(a) < rank(b); });
  return problems;
}

std::vector<PreparedProblem> prepare_suite(const std::vector<const SuiteProblem*>& problems,
                                           const RecognizeOptions& options, std::ostream& log) {
  std::vector<PreparedProblem> prepared;
  std::vector<Problem> read;
  for (const SuiteProblem* entry : problems) {
    PreparedProblem problem{entry, std::nullopt, entry->error};
    if (problem.error.empty()) {
      try {
        read.push_back(load_problem(entry->dir));
      } catch (const InputError& error) {
        problem.error = error.what();
      }
    }
    if (!problem.error.empty())
      log << fmt::format("{}: cannot be read: {}\n", entry->name, problem.error);
    prepared.push_back(std::move(problem));
  }
  auto next = read.begin();
  for (PreparedProblem& problem : prepared) {
    if (!problem.error.empty()) continue;
    RecognizedProblem loaded{std::move(*next++), {}};
    try {
      loaded.recognition = recognize(loaded.problem, options);
    } catch (const std::exception& error) {
      loaded.recognition.reason = fmt::format("recognizing it failed: {}", error.what());
    }
    apply_recognition(loaded.problem, loaded.recognition);
    const Recognition& r = loaded.recognition;
    log << fmt::format("{}: {}: {}\n", problem.entry->name, source_name(r.source),
                       r.served() ? r.summary : r.reason)
        << std::flush;
    problem.loaded = std::move(loaded);
  }
  return prepared;
}

}  // namespace kernelarc
