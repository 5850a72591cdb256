// What `kernelarc optimize` shows while it runs. On a terminal: a live block (a progress bar
// over the budget, the best so far, a line per agent) redrawn under a scrolling log of board
// posts. Elsewhere (CI, pipes): plain lines, one per evaluated candidate and one per message.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "optimize/orchestrator.h"

namespace kernelarc {

/// The live view when `out` is a terminal (and `plain` is false), else the line view.
std::unique_ptr<ProgressSink> make_progress(std::ostream& out, bool terminal);

/// What a code synthesizer was asked and spent, in one line.
std::string synthesis_text(const SynthesisTotals& totals);

}  // namespace kernelarc
