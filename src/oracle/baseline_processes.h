// Times PyTorch baselines in several fresh interpreters and keeps the fastest. A process can
// start in a slow mode that lasts for its life (glibc's allocator unmapping the intermediates
// of every call was one, 40x); one process would report that mode as PyTorch's speed.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/problem.h"
#include "oracle/python_bridge.h"

namespace kernelarc {

/// Runs `jobs` in `processes` interpreters one after another (one PythonBridge::run each) and
/// writes to each job's `out` the run with the lowest median, its note naming every process'
/// median. A job that the first process could not time (the reference failed, torch.compile is
/// missing) is not run again. Outcomes as PythonBridge::run's: ok when any process timed it.
std::map<std::string, PythonJobOutcome> time_in_fresh_processes(
    PythonBridge& bridge, const Problem& problem, const std::vector<PythonTimingJob>& jobs,
    const std::filesystem::path& scratch_dir, int processes = kBaselineProcesses);

}  // namespace kernelarc
