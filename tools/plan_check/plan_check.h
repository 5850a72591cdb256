// One problem through trace -> lower -> plan interpreter, compared with the oracle's expected
// outputs under the workload's tolerance.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "oracle/oracle.h"

namespace kernelarc {

struct PlanCheckOptions {
  std::string python;              ///< empty = the oracle's detection
  std::filesystem::path scratch;   ///< trace and oracle caches
  int64_t max_work = 200'000'000;  ///< plan_work() beyond which the interpreter is not run
};

struct PlanCheckRow {
  std::string problem;
  bool loaded = false, traced = false, lowered = false;
  std::string kernels;  ///< "3: reduce pointwise pointwise"
  double max_abs = 0, max_rel = 0;
  std::string verdict;  ///< "PASS", "FAIL", "skip", or "-" when not lowered
  std::string reason;
};

PlanCheckRow check_problem(const std::filesystem::path& dir, const PlanCheckOptions& options,
                           Oracle& oracle);

}  // namespace kernelarc
