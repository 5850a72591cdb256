#include "oracle/baseline_processes.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "oracle/oracle_cache.h"

namespace kernelarc {
namespace {

double median_of(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::infinity();
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::filesystem::path process_out(const PythonTimingJob& job, int process) {
  return job.out.string() + fmt::format(".process{}", process);
}

}  // namespace

std::optional<FastestRun> fastest_run(const std::vector<const std::vector<double>*>& runs,
                                      std::string_view runs_are) {
  std::vector<std::string> medians;
  std::optional<std::size_t> fastest;
  double fastest_median = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->empty()) continue;
    const double median = median_of(*runs[i]);
    medians.push_back(fmt::format("{:.4g} ms", median / 1e6));
    if (!fastest || median < fastest_median) {
      fastest = i;
      fastest_median = median;
    }
  }
  if (!fastest) return std::nullopt;
  FastestRun run{*fastest, ""};
  if (medians.size() > 1)
    run.note = fmt::format("; the fastest of {} {} (medians {})", medians.size(), runs_are,
                           fmt::join(medians, ", "));
  return run;
}

std::map<std::string, PythonJobOutcome> time_in_fresh_processes(
    PythonBridge& bridge, const Problem& problem, const std::vector<PythonTimingJob>& jobs,
    const std::filesystem::path& scratch_dir, int processes) {
  std::map<std::string, PythonJobOutcome> outcomes;
  std::map<std::string, std::vector<CachedTiming>> runs;
  std::vector<PythonTimingJob> pending = jobs;
  for (int process = 0; process < processes && !pending.empty(); ++process) {
    std::vector<PythonTimingJob> copies = pending;
    for (PythonTimingJob& copy : copies) copy.out = process_out(copy, process);
    const auto ran = bridge.run(problem, {}, copies, scratch_dir);
    std::vector<PythonTimingJob> timed;
    for (std::size_t i = 0; i < copies.size(); ++i) {
      const PythonTimingJob& job = pending[i];
      const PythonJobOutcome& outcome = ran.at(job.id);
      if (!outcomes.contains(job.id) || outcome.ok) outcomes[job.id] = outcome;
      auto cached = read_cached_timing(copies[i].out, job.baseline);
      std::error_code ignored;
      std::filesystem::remove(copies[i].out, ignored);
      if (!cached) continue;
      const bool has_times = cached->timing && !cached->timing->times_ns.empty();
      runs[job.id].push_back(std::move(*cached));
      if (has_times) timed.push_back(job);
    }
    pending = std::move(timed);
  }
  for (const PythonTimingJob& job : jobs) {
    auto found = runs.find(job.id);
    if (found == runs.end()) continue;
    std::vector<CachedTiming>& made = found->second;
    static const std::vector<double> none;
    std::vector<const std::vector<double>*> times;
    for (const CachedTiming& run : made)
      times.push_back(run.timing ? &run.timing->times_ns : &none);
    const auto fastest = fastest_run(times, "fresh processes");
    CachedTiming kept = std::move(made[fastest ? fastest->index : 0]);
    if (fastest) kept.timing->note += fastest->note;
    write_cached_timing(job.out, job.baseline, kept);
  }
  return outcomes;
}

}  // namespace kernelarc
