// Launching Nsight Compute on a candidate that passed the guard: finding ncu, running
// `ncu ... kernelarc profile-run ...` (backend/worker/profile_run.h) with a timeout, and turning
// what it printed (ncu_profile.h) into the record a trace keeps in extra["profile"], with the DRAM
// red flag. Optional and best-effort: when ncu is missing, refused the counters, timed out or
// printed no table, the record says why and the analytic diagnosis stands alone.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "eval/guard.h"
#include "eval/trace.h"
#include "oracle/oracle.h"

namespace kernelarc {

struct NcuLocation {
  std::optional<std::filesystem::path> path;
  std::vector<std::string> looked_in;  ///< every place tried, in order
};

/// `requested` (--ncu) when given, else $KERNELARC_NCU, else `ncu` on PATH, else
/// /usr/local/cuda/bin/ncu; the first that is an executable file.
NcuLocation find_ncu(const std::string& requested);

struct ProfileOptions {
  std::string ncu;  ///< --ncu; empty = find_ncu's search
  /// ncu replays every kernel once per metric group, and its start is slow: a run past this is
  /// killed, and the record says so.
  std::chrono::seconds timeout{600};
  int calls = 3;  ///< calls of the candidate in the profiled process
  /// The kernelarc executable run as `profile-run`; empty = this process's.
  std::filesystem::path executable;
  /// Also run ncu's source page (ncu_source.h): the instructions the warps stalled in most.
  bool source_hotspots = false;
};

/// Runs ncu_command(ncu, target) in an environment without secrets (is_secret_variable) and
/// reads its output. The record: {"command": [argv], "ncu_version"?, "calls",
/// "required_bytes_per_call", "aggregate": {...}, "kernels": [{...}], "red_flag"?, "source"?}
/// with a profile (source: the source page's hotspots, or why not), else {"command"?,
/// "unavailable": why}. Never throws for ncu's failures.
/// `temp_directory`, when given, is ncu's and the target's TMPDIR: the profiled process may
/// write nowhere else, and ncu's injected library keeps its files there.
OrderedJson profile_command(const ProfileOptions& options, const std::vector<std::string>& target,
                            double required_bytes_per_call,
                            const std::filesystem::path& temp_directory = {});

/// Profiles `solution` on `workload`: builds it by `guard`'s settings for the device its worker
/// found (a cache hit after the guard ran), lays trial 0's inputs (drawn by `oracle`) out as the
/// worker's arena in a private scratch directory with the guard's request, and profiles
/// `kernelarc profile-run` on them (in the guard's sandbox), which stages, runs and collects
/// each call as the guard does; why that is a process of its own and not the guard's worker:
/// backend/worker/profile_run.h. The record of profile_command() plus "workload" (its uuid);
/// when the profiled process failed, "unavailable" ends with its log.
OrderedJson profile_solution(const Problem& problem, const Workload& workload,
                             const Solution& solution, Guard& guard, Oracle& oracle,
                             const ProfileOptions& options);

/// Stores the record in trace.extra["profile"] and, when it holds a profile and the trace a
/// diagnosis, the measured numbers in extra["diagnosis"]["profiled"] (fractions, as the
/// diagnosis writes them): achieved_occupancy, dram_throughput, sm_throughput,
/// dram_bytes_per_call.
void attach_profile(Trace& trace, const OrderedJson& record);

/// A line or two for people: the aggregate, or why there is no profile; the red flag if any.
std::string profile_text(const OrderedJson& record);

}  // namespace kernelarc
