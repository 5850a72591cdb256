// A small two-template search problem with a known optimum, and a driver that runs a policy on
// it the way the search engine will: propose, add, measure, record, observe.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "search/selection.h"
#include "synth/constrained_space.h"

namespace kernelarc::testing {

/// Adds a passed node of template "tile" at `point` (canonical text) and records its fitness.
inline int add_passed(SearchTree& tree, const std::string& point, double fitness,
               std::optional<int> parent = std::nullopt) {
  const int id =
      tree.add({.parent = parent, .template_name = "tile", .point = parse_knob_point(point)});
  tree.record(id, {.passed = true, .fitness = fitness});
  return id;
}

/// "tile": BM, BN powers of two in [8, 1024] with BM * BN <= 65536 (54 pairs), LAYOUT of three,
/// UNROLL 1..4: 648 valid points. "other": X in 1..6, FAST bool, X + FAST <= 6: 11 points.
struct SearchProblem {
  ConstrainedSpace tile{KnobSpace({Knob::pow2("BM", 8, 1024), Knob::pow2("BN", 8, 1024),
                                   Knob::enumeration("LAYOUT", {"row", "col", "tiled"}),
                                   Knob::int_range("UNROLL", 1, 4)},
                                  {"BM * BN <= 65536"}),
                        {}};
  ConstrainedSpace other{
      KnobSpace({Knob::int_range("X", 1, 6), Knob::boolean("FAST")}, {"X + FAST <= 6"}), {}};

  static constexpr std::size_t kPoints = 648 + 11;
  static constexpr double kOptimum = 10;

  SpaceLookup lookup() const {
    return [this](const std::string& name) -> const ConstrainedSpace* {
      if (name == "tile") return &tile;
      if (name == "other") return &other;
      return nullptr;
    };
  }

  PolicyOptions options() const {
    PolicyOptions options;
    options.templates = {"tile", "other"};
    options.spaces = lookup();
    return options;
  }

  const ConstrainedSpace& space(const std::string& name) const { return *lookup()(name); }

  /// A separable peak of 10 at tile BM=64, BN=256, LAYOUT=tiled, UNROLL=2; "other" stays below
  /// 2; tile points with BM=1024 and LAYOUT=col fail. Features: the layout and an area bucket.
  static CandidateResult measure(const std::string& template_name, const KnobPoint& point) {
    CandidateResult result;
    if (template_name == "other") {
      result.passed = true;
      result.fitness = 1 + 0.1 * static_cast<double>(std::get<int64_t>(point.at("X")));
      result.features = {{"layout", -1}};
      return result;
    }
    const double bm = std::log2(static_cast<double>(std::get<int64_t>(point.at("BM"))));
    const double bn = std::log2(static_cast<double>(std::get<int64_t>(point.at("BN"))));
    const std::string& layout = std::get<std::string>(point.at("LAYOUT"));
    const auto unroll = static_cast<double>(std::get<int64_t>(point.at("UNROLL")));
    if (bm == 10 && layout == "col") return result;
    result.passed = true;
    result.fitness = kOptimum - std::abs(bm - 6) - std::abs(bn - 8) - (layout == "tiled" ? 0 : 2) -
                     0.5 * std::abs(unroll - 2);
    result.features = {{"layout", layout == "row"   ? 0
                                  : layout == "col" ? 1
                                                    : 2},
                       {"area", static_cast<int64_t>(bm + bn) / 4}};
    return result;
  }
};

struct PolicyRun {
  SearchTree tree;
  std::vector<std::string> proposals;     ///< "template|point" in proposal order
  std::optional<std::size_t> optimum_at;  ///< 1-based proposal that first reached the optimum
  bool exhausted = false;                 ///< the policy returned nullopt
};

/// Runs `policy_name` for at most `max_proposals` proposals (or until it returns nullopt).
inline PolicyRun run_policy(const SearchProblem& problem, const std::string& policy_name,
                            uint64_t seed, std::size_t max_proposals,
                            const std::optional<PolicyOptions>& options = std::nullopt) {
  PolicyRun run;
  std::unique_ptr<SelectionPolicy> policy =
      make_policy(policy_name, options.value_or(problem.options()));
  Rng rng(seed);
  while (run.proposals.size() < max_proposals) {
    std::optional<Proposal> proposal = policy->propose(run.tree, rng);
    if (!proposal) {
      run.exhausted = true;
      break;
    }
    run.proposals.push_back(proposal->template_name + "|" + format_knob_point(proposal->point));
    const CandidateResult result = SearchProblem::measure(proposal->template_name, proposal->point);
    const int id = run.tree.add(std::move(*proposal));
    run.tree.record(id, result);
    policy->observe(run.tree, id);
    if (!run.optimum_at && result.fitness == SearchProblem::kOptimum) {
      run.optimum_at = run.proposals.size();
    }
  }
  return run;
}

}  // namespace kernelarc::testing
