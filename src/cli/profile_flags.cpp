#include "cli/profile_flags.h"

#include <fmt/format.h>

#include "backend/backend.h"
#include "diagnosis/ncu_runner.h"
#include "optimize/search_setup.h"

namespace kernelarc {

void add_profile_flags(CLI::App& cmd, ProfileFlags& flags, bool with_top) {
  cmd.add_flag("--profile", flags.enabled,
               with_top ? "profile the winner with Nsight Compute (CUDA) on its largest workload"
                        : "profile the solution with Nsight Compute (CUDA) on its largest "
                          "passed workload");
  if (with_top) {
    cmd.add_option("--profile-top", flags.top, "with --profile: the best K finalists")
        ->capture_default_str()
        ->check(CLI::Range(1, 100));
  }
  cmd.add_option("--ncu", flags.ncu,
                 "Nsight Compute's ncu (default: $KERNELARC_NCU, ncu on PATH, "
                 "/usr/local/cuda/bin/ncu)");
  cmd.add_option("--profile-timeout", flags.timeout_s, "seconds one ncu run may take")
      ->capture_default_str()
      ->check(CLI::Range(1, 86'400));
}

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
                                 .executable = {}};
    record =
        profile_solution(problem, workload, solution, session.oracle(), session.options(), options);
  }
  attach_profile(trace, record);
  return fmt::format("profile of {} on {}: {}", solution.name, format_axes(workload.axes),
                     profile_text(record));
}

}  // namespace kernelarc
