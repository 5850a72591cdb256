#include "app/profile_best.h"

#include <functional>
#include <ostream>

#include <fmt/format.h>

#include "backend/backend.h"
#include "diagnosis/ncu_runner.h"
#include "optimize/search_setup.h"

namespace kernelarc {

std::string profile_best_trace(const ProfileFlags& flags, GuardSession& session,
                               const Problem& problem, const Solution& solution,
                               std::vector<Trace>& traces) {
  std::vector<Workload> passed;
  for (const Trace& trace : traces) {
    const Workload* workload = find_workload(problem, trace.workload.value("uuid", std::string()));
    if (trace.status == EvalStatus::Passed && workload != nullptr) passed.push_back(*workload);
  }
  if (passed.empty()) return fmt::format("{}: no profile: no workload passed", solution.name);
  const Workload& workload = largest_workload(passed);
  Trace& trace = *std::find_if(traces.begin(), traces.end(), [&](const Trace& t) {
    return t.workload.value("uuid", std::string()) == workload.uuid;
  });
  OrderedJson record;
  if (backend_for(session.options().device).kind() == DeviceKind::Cpu) {
    record = {{"unavailable",
               "profiling with Nsight Compute is a CUDA feature; this run's device is the CPU"},
              {"workload", workload.uuid}};
  } else {
    const ProfileOptions options{.ncu = flags.ncu,
                                 .timeout = std::chrono::seconds(flags.timeout_s),
                                 .calls = 3,
                                 .executable = {},
                                 .source_hotspots = flags.source};
    record =
        profile_solution(problem, workload, solution, session.guard(), session.oracle(), options);
  }
  attach_profile(trace, record);
  return fmt::format("profile of {} on {}: {}", solution.name, format_axes(workload.axes),
                     profile_text(record));
}

bool evaluate_report_and_profile(const ProfileFlags& flags, GuardSession& session,
                                 const Problem& problem, const Solution& solution,
                                 std::ostream& out) {
  std::string profile;
  std::function<void(std::vector<Trace>&)> add_profile;
  if (flags.enabled) {
    add_profile = [&](std::vector<Trace>& traces) {
      profile = profile_best_trace(flags, session, problem, solution, traces);
    };
  }
  const bool passed = session.evaluate_and_report(problem, solution, out, add_profile);
  if (!profile.empty()) out << profile << '\n';
  return passed;
}

}  // namespace kernelarc
