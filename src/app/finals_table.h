// The finalists of `kernelarc optimize`'s side-by-side re-measurement as a table. A speedup is
// shown only against a baseline re-measured with them, as `kernelarc bench` shows "-" where it
// has nothing to compare against: without one, the search's fitness is relative to its first
// passing candidate, a figure that reads as a speedup over PyTorch and is none.
#pragma once

#include <ostream>

#include "optimize/orchestrator.h"

namespace kernelarc {

/// A line saying what the speedup column is against (or that there is nothing to compare
/// against), then the table: the baseline's row first when there is one, then the finalists
/// best first.
void print_finals(const OptimizeSummary& summary, std::ostream& out);

}  // namespace kernelarc
