#include "eval/launch_consistency.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/text.h"

namespace kernelarc {
namespace {

std::set<std::string> names_of(const std::vector<std::string>& signatures) {
  std::set<std::string> names;
  for (const std::string& signature : signatures) names.insert(launch_name(signature));
  return names;
}

std::string difference(const std::set<std::string>& from, const std::set<std::string>& to) {
  std::vector<std::string> missing;
  std::set_difference(from.begin(), from.end(), to.begin(), to.end(), std::back_inserter(missing));
  return missing.empty() ? "nothing" : fmt::format("{}", fmt::join(missing, ", "));
}

}  // namespace

std::string launch_name(const std::string& signature) {
  return signature.substr(0, signature.find('|'));
}

LaunchConsistency launch_consistency(const std::vector<TimedLaunches>& runs) {
  LaunchConsistency verdict;
  if (runs.empty()) return verdict;
  const std::set<std::string> first = names_of(runs.front().signatures);
  std::vector<std::string> first_sorted = runs.front().signatures;
  std::sort(first_sorted.begin(), first_sorted.end());
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const std::set<std::string> names = names_of(runs[i].signatures);
    if (names != first) {
      verdict.violation = fmt::format(
          "the set of launched kernels differed between timed runs: run {} launched {} that run 1 "
          "did not, and not {}",
          i + 1, difference(names, first), difference(first, names));
      return verdict;
    }
    std::vector<std::string> sorted = runs[i].signatures;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != first_sorted) verdict.geometry_varies = true;
  }
  if (!verdict.geometry_varies) return verdict;

  std::vector<double> checked, unchecked;
  for (const TimedLaunches& run : runs)
    if (run.timed) (run.checked ? checked : unchecked).push_back(run.ns);
  if (checked.empty() || unchecked.empty()) return verdict;
  const double audited = median(checked), other = median(unchecked);
  if (other < kUncheckedFastestShare * audited) {
    verdict.violation = fmt::format(
        "the launches' shapes varied between timed runs, and the runs whose outputs the guard did "
        "not check took a median {:.4f} ms against {:.4f} ms for those it checked (below {:.0f}%)",
        other * 1e-6, audited * 1e-6, kUncheckedFastestShare * 100);
  }
  return verdict;
}

}  // namespace kernelarc
