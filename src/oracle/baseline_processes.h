// Times PyTorch baselines in several fresh interpreters and keeps the fastest. A process can
// start in a slow mode that lasts for its life (glibc's allocator unmapping the intermediates
// of every call was one, 40x); one process would report that mode as PyTorch's speed.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.h"
#include "oracle/python_bridge.h"

namespace kernelarc {

/// Of several runs of one baseline, the one with the lowest median time and what a note says
/// of the choice ("; the fastest of 3 rounds (medians 1.2 ms, ...)", empty for a single run).
struct FastestRun {
  std::size_t index = 0;
  std::string note;
};
/// `runs` holds each run's times in nanoseconds; runs without any are skipped; nullopt when no
/// run has times. `runs_are` names the runs in the note ("fresh processes").
std::optional<FastestRun> fastest_run(const std::vector<const std::vector<double>*>& runs,
                                      std::string_view runs_are);

/// Runs `jobs` in `processes` interpreters one after another (one PythonBridge::run each) and
/// writes to each job's `out` the run with the lowest median, its note naming every process'
/// median. A job that the first process could not time (the reference failed, torch.compile is
/// missing) is not run again. Outcomes as PythonBridge::run's: ok when any process timed it.
std::map<std::string, PythonJobOutcome> time_in_fresh_processes(
    PythonBridge& bridge, const Problem& problem, const std::vector<PythonTimingJob>& jobs,
    const std::filesystem::path& scratch_dir, int processes = kBaselineProcesses);

}  // namespace kernelarc
