#include "optimize/strategy.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {

const std::vector<Strategy>& builtin_strategies() {
  // Specialists mostly refine (inherit, learn from siblings); explore restarts and crosses more,
  // since its job is to find new basins for the others to refine.
  static const std::vector<Strategy> strategies{
      {"explore",
       "every knob and every template; more restarts and crossover",
       {},
       {.inherit = 0.35, .siblings = 0.1, .crossover = 0.3, .restart = 0.25}},
      {"memory",
       "vector widths, caching and tiling for reuse, pipeline stages",
       {"memory"},
       {.inherit = 0.6, .siblings = 0.2, .crossover = 0.15, .restart = 0.05}},
      {"parallelism",
       "threads, rows or tiles per block or task, grid shape, split work",
       {"parallelism"},
       {.inherit = 0.6, .siblings = 0.2, .crossover = 0.15, .restart = 0.05}},
      {"compute",
       "tile shapes, micro-kernels, instruction-level parallelism, algorithms",
       {"compute"},
       {.inherit = 0.6, .siblings = 0.2, .crossover = 0.15, .restart = 0.05}},
      {"library",
       "vendor-library algorithms (cuBLASLt heuristic ranks, tuned tables)",
       {"library"},
       {.inherit = 0.7, .siblings = 0.2, .crossover = 0.05, .restart = 0.05}},
      {"fusion",
       "how fused prologues and epilogues are computed: cached or recomputed",
       {"fusion"},
       {.inherit = 0.6, .siblings = 0.2, .crossover = 0.15, .restart = 0.05}},
  };
  return strategies;
}

namespace {

std::string strategy_names() {
  std::vector<std::string> names;
  for (const Strategy& strategy : builtin_strategies()) names.push_back(strategy.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

const Strategy& find_strategy(std::string_view name) {
  for (const Strategy& strategy : builtin_strategies())
    if (strategy.name == name) return strategy;
  throw InputError(
      fmt::format("unknown agent strategy \"{}\" (expected one of {})", name, strategy_names()));
}

std::vector<std::string> parse_agent_list(std::string_view text) {
  const auto& all = builtin_strategies();
  int count = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error == std::errc() && end == text.data() + text.size()) {
    if (count < 1 || count > static_cast<int>(all.size()))
      throw InputError(
          fmt::format("--agents: {} agents asked, expected 1 to {}", count, all.size()));
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) names.push_back(all[i].name);
    return names;
  }
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string name(text.substr(start, comma - start));
    find_strategy(name);
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw InputError(fmt::format("--agents: strategy \"{}\" given twice", name));
    names.push_back(name);
    start = comma + 1;
  }
  return names;
}

bool strategy_changes(const Strategy& strategy, const Knob& knob) {
  if (strategy.roles.empty()) return true;
  for (const std::string& role : knob.roles())
    if (std::find(strategy.roles.begin(), strategy.roles.end(), role) != strategy.roles.end())
      return true;
  return false;
}

KnobFilter strategy_knob_filter(const Strategy& strategy) {
  if (strategy.roles.empty()) return {};
  return [&strategy](const Knob& knob) { return strategy_changes(strategy, knob); };
}

std::vector<std::string> strategies_for_bottleneck(std::string_view bottleneck) {
  if (bottleneck == "memory") return {"memory"};
  if (bottleneck == "compute") return {"compute", "library"};
  if (bottleneck == "latency") return {"parallelism", "memory"};
  if (bottleneck == "launch") return {"parallelism", "fusion"};
  return {};
}

}  // namespace kernelarc
