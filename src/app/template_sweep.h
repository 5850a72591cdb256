// `kernelarc templates sweep`: the benchmark of the template library. For each problem, every
// template serving it is evaluated through the guard at a set of knob points (the default, the
// extremes of the enumeration and seeded random points); per workload the fastest passing point
// is re-measured with the baselines, and a table shows the best point, its time, its fraction of
// the speed of light (calibrated bandwidth or peak) and PyTorch eager / torch.compile. For a
// GEMM, the cuBLASLt template at the heuristic's first choice is the library baseline.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "app/guard_session.h"
#include "synth/knob_point.h"

namespace kernelarc {

struct SweepFlags {
  std::vector<std::string> problems;
  std::vector<std::string> templates;  ///< only these; empty = all that serve
  std::string root;
  /// Files added to every instantiated solution (e.g. the cuBLASLt template's tuned table).
  std::map<std::string, std::string> extra_files;
  /// --knobs: only points holding these values (the other knobs are swept around them); a
  /// template without one of these knobs is not swept.
  KnobPoint pinned;
  int random_points = 8;
  uint64_t seed = 1;
  bool keep_accuracy = false;  ///< no knob value that trades accuracy
  GuardFlags guard;
};

/// 0 when every problem has at least one passing point on every workload.
int run_template_sweep(const SweepFlags& flags);

}  // namespace kernelarc
