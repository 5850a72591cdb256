// Per-shape dispatch inside one solution: `kernelarc.variants`, a list of
// {"when": <expression over the definition's axes>, "knobs": {NAME: integer}, "point"?: text}.
// At a workload the first variant whose `when` is nonzero replaces `kernelarc.knobs` (and the
// template provenance's point); when none holds, the solution's own knobs serve it. A variant is
// therefore a build of its own: the guard compiles and loads one library per variant in use.
// A harness that ignores the extension runs the top-level knobs, which are valid for every
// shape (docs/FORMAT.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/expr.h"
#include "core/problem.h"

namespace kernelarc {

struct SolutionVariant {
  std::string when;
  OrderedJson knobs;  ///< {NAME: integer}
  std::string point;  ///< the template knob point it came from; may be empty
};

/// Reads and checks kernelarc.variants (absent = none). InputError naming the solution's file
/// and the field (e.g. "kernelarc.variants[1].when") for anything malformed, including a `when`
/// that mentions a name which is not one of the definition's axes.
std::vector<SolutionVariant> parse_variants(const Solution& solution, const Definition& definition);

/// Which variant serves these axis values: its index, or nullopt for the top-level knobs.
std::optional<std::size_t> select_variant(const Solution& solution,
                                          const std::vector<SolutionVariant>& variants,
                                          const AxisValues& axes);

/// The single-point solution that runs at these axes: the variant's knobs (or the top-level
/// ones) and no variants. Solutions without variants come back unchanged.
Solution resolve_variant(const Solution& solution, const std::vector<SolutionVariant>& variants,
                         std::optional<std::size_t> chosen);

/// The solution as it runs at `workload`: parse_variants, select_variant and resolve_variant.
Solution solution_for_workload(const Solution& solution, const Definition& definition,
                               const Workload& workload);

/// A solution that dispatches: `base` (a single-point solution whose knobs serve every other
/// shape) with `variants` attached, under a name of its own.
Solution with_variants(Solution base, const std::vector<SolutionVariant>& variants);

}  // namespace kernelarc
