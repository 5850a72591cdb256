// Per-shape dispatch of a search's winner: one knob point rarely suits every shape (a tiny batch
// wants a few threads, a large one all of them), and the search measured many points of the
// winning template on every workload. Where another point of that template was faster at a
// workload beyond both intervals, the winner gains a variant (kernelarc.variants) that runs that
// point at exactly that shape; every other shape keeps the winner's own point. The composed
// solution then competes in the final side-by-side re-measurement like any finalist.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "eval/solution_variants.h"
#include "optimize/measurement.h"

namespace kernelarc {

/// A measured candidate of the winner's template.
struct DispatchSource {
  int64_t candidate_id = 0;
  const Measurement* measurement = nullptr;
};

/// Which candidate serves which workload, for the workloads where the base is beaten.
struct DispatchPlan {
  struct Choice {
    const Workload* workload = nullptr;
    int64_t candidate_id = 0;
    double median_ms = 0;       ///< the chosen candidate's median there
    double base_median_ms = 0;  ///< the base's median there
  };
  std::vector<Choice> choices;
};

/// Per workload of `workloads` measured by the base: the source with the lowest median there,
/// chosen only when its interval lies wholly below the base's. Empty when the base is best (or
/// tied) everywhere. Ties between sources go to the lower candidate id.
DispatchPlan plan_shape_dispatch(const std::vector<Workload>& workloads, const DispatchSource& base,
                                 const std::vector<DispatchSource>& sources);

/// The candidates the plan borrows points from, each once, in the order they first serve a
/// workload.
std::vector<int64_t> dispatch_sources(const DispatchPlan& plan);

/// "batch_size == 1 and hidden_size == 4096": a condition that holds at exactly this workload's
/// shape (its var axes).
std::string exact_shape_condition(const Workload& workload);

/// The variants that carry out `plan`: one per chosen candidate, its condition the disjunction
/// of its workloads' shapes; `solution_of` gives a candidate's single-point solution (its
/// kernelarc.knobs and template point are what the variant runs).
std::vector<SolutionVariant> dispatch_variants(const DispatchPlan& plan,
                                               const std::function<Solution(int64_t)>& solution_of);

/// One line per choice for the log and the candidate's note: "batch_size=1 hidden_size=4096:
/// #12 0.0120 ms instead of 0.0150 ms".
std::string dispatch_plan_text(const DispatchPlan& plan);

}  // namespace kernelarc
