// The best solution profiled with Nsight Compute on the largest workload it passed, stored in
// that trace's extra["profile"] (diagnosis/ncu_runner.h): --profile on `eval`, `templates try`
// and `optimize`.
#pragma once

#include <string>
#include <vector>

#include "app/guard_session.h"

namespace kernelarc {

struct ProfileFlags {
  bool enabled = false;
  int top = 1;  ///< optimize: the finalists profiled, best first
  std::string ncu;
  int timeout_s = 600;
  bool source = false;  ///< also ncu's source page: the instructions warps stalled in most
};

/// Profiles `solution` on the largest workload among its passed `traces` and attaches the
/// record to that trace. Returns what to print: the profile, why there is none, or that
/// profiling is a CUDA feature (on the CPU device, where the trace records the same).
std::string profile_best_trace(const ProfileFlags& flags, GuardSession& session,
                               const Problem& problem, const Solution& solution,
                               std::vector<Trace>& traces);

/// GuardSession::evaluate_and_report, then (with flags.enabled) profile_best_trace's record
/// attached before the traces are written and its text printed after the report: `eval` and
/// `templates try`. Whether every workload passed.
bool evaluate_report_and_profile(const ProfileFlags& flags, GuardSession& session,
                                 const Problem& problem, const Solution& solution,
                                 std::ostream& out);

}  // namespace kernelarc
