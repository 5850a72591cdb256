#include "eval/timing_bounds.h"
#include "core/text.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

namespace kernelarc {
namespace {

constexpr double kMs = 1e6;  // nanoseconds per millisecond

// Margins (see timing_violation): scheduling noise moves a request's wall time by up to a few
// overheads on a loaded machine (the time the calling thread and the parent's thread waited for a
// core is subtracted first), and CUDA adds launch latency and synchronization on the host that the
// GPU span leaves out. CPU time is not inflated by waiting, and the measured request holds the call
// alone (the cache flush and the copies are requests of their own, staged_call.h), so the CPU
// margin is twice the null call's CPU time and a few hundred microseconds of the worker's own
// jitter.
constexpr double kWallOverheads = 3.0;
constexpr double kWallSlackCpuNs = 2.0 * kMs;
constexpr double kWallSlackCudaNs = 1.0 * kMs;
constexpr double kWallReportedShare = 0.5;
constexpr double kMainCpuOverheads = 2.0;
constexpr double kMainCpuSlackNs = 0.3 * kMs;
constexpr double kHelperSlackNs = 0.5 * kMs;
constexpr double kHelperReportedShare = 0.1;
constexpr double kIdleSlackPerGapNs = 0.3 * kMs;
// After a parallel region each of a pool's threads runs once more to go back to sleep, after the
// call has returned: an OpenMP team of 64 on two loaded cores used 1.4 ms between requests
// (22 us a thread), honestly. A gap's slack grows by this much per thread the worker had.
constexpr double kIdleSlackPerThreadNs = 0.04 * kMs;
constexpr double kIdleWallShare = 0.02;

double median_of(const std::vector<TimedRequest>& requests,
                 const std::function<double(const TimedRequest&)>& value) {
  std::vector<double> values;
  for (const TimedRequest& request : requests) values.push_back(value(request));
  return median(values);
}

// The part of a request's wall time that the worker's calling thread and the parent's thread
// spent waiting for a core: a loaded machine's, not the call's.
double waited_ns(const ParentObservation& observed) {
  return observed.main_wait_ns + observed.parent_wait_ns;
}

bool all_valid(const std::vector<TimedRequest>& requests) {
  return !requests.empty() &&
         std::all_of(requests.begin(), requests.end(),
                     [](const TimedRequest& request) { return request.observed.valid; });
}

}  // namespace

RequestOverhead summarize_overhead(const std::vector<ParentObservation>& observed) {
  RequestOverhead overhead;
  std::vector<double> wall, main_cpu;
  for (std::size_t i = observed.size() > 1 ? 1 : 0; i < observed.size(); ++i) {
    if (!observed[i].valid) return overhead;
    // The scheduler's wait can overlap the request's edges by a few microseconds.
    wall.push_back(std::max(0.0, observed[i].wall_ns - waited_ns(observed[i])));
    main_cpu.push_back(observed[i].main_cpu_ns);
  }
  if (wall.empty()) return overhead;
  overhead.valid = true;
  overhead.wall_median_ns = median(wall);
  overhead.wall_max_ns = *std::max_element(wall.begin(), wall.end());
  overhead.main_cpu_median_ns = median(main_cpu);
  overhead.main_cpu_max_ns = *std::max_element(main_cpu.begin(), main_cpu.end());
  return overhead;
}

std::optional<std::string> timing_violation(const std::vector<TimedRequest>& requests,
                                            const RequestOverhead& overhead, bool cpu_device,
                                            int cores) {
  if (!overhead.valid || !all_valid(requests)) return std::nullopt;
  const double reported = median_of(requests, [](const TimedRequest& r) { return r.reported_ns; });

  const double wall_excess = median_of(requests, [](const TimedRequest& r) {
    return r.observed.wall_ns - waited_ns(r.observed) - r.reported_ns;
  });
  const double wall_allowed = kWallOverheads * overhead.wall_max_ns +
                              (cpu_device ? kWallSlackCpuNs : kWallSlackCudaNs) +
                              kWallReportedShare * reported;
  if (wall_excess > wall_allowed) {
    return fmt::format(
        "the worker reported a median call of {:.4f} ms, but the guard's own clock saw requests "
        "{:.4f} ms longer than that (not counting the time the worker and the guard waited for a "
        "core), while a "
        "request costs {:.4f} ms around a call that does "
        "nothing (at most {:.4f} ms allowed): the reported times are not the calls' real times",
        reported / kMs, wall_excess / kMs, overhead.wall_median_ns / kMs, wall_allowed / kMs);
  }
  if (!cpu_device) return std::nullopt;

  const double main_excess = median_of(
      requests, [](const TimedRequest& r) { return r.observed.main_cpu_ns - r.reported_ns; });
  const double main_allowed = kMainCpuOverheads * overhead.main_cpu_median_ns + kMainCpuSlackNs;
  if (main_excess > main_allowed) {
    return fmt::format(
        "the worker's calling thread used {:.4f} ms of CPU per request beyond the reported call "
        "time of {:.4f} ms, while a request costs {:.4f} ms of CPU around a call that does "
        "nothing (at most {:.4f} ms allowed): the reported times are not the calls' real times",
        main_excess / kMs, reported / kMs, overhead.main_cpu_median_ns / kMs, main_allowed / kMs);
  }

  const double helper_excess = median_of(requests, [&](const TimedRequest& r) {
    const int threads = std::min(r.observed.other_threads, std::max(cores, 1));
    return r.observed.other_cpu_ns - r.reported_ns * threads;
  });
  const double helper_allowed = kHelperSlackNs + kHelperReportedShare * reported;
  if (helper_excess > helper_allowed) {
    return fmt::format(
        "the worker's other threads used {:.4f} ms of CPU per request beyond what they could use "
        "during the reported call of {:.4f} ms (at most {:.4f} ms allowed): work done outside "
        "the timed call",
        helper_excess / kMs, reported / kMs, helper_allowed / kMs);
  }

  double idle_cpu = 0, idle_wall = 0, idle_allowed = 0;
  for (const TimedRequest& request : requests) {
    idle_cpu += request.observed.idle_cpu_ns;
    idle_wall += request.observed.idle_wall_ns;
    idle_allowed += kIdleSlackPerGapNs + kIdleSlackPerThreadNs * request.observed.other_threads;
  }
  idle_allowed += kIdleWallShare * idle_wall;
  if (idle_cpu > idle_allowed) {
    return fmt::format(
        "the worker used {:.4f} ms of CPU between its requests, while it had nothing to do but "
        "wait for the next one ({:.4f} ms in {} intervals allowed): work done outside the timed "
        "calls",
        idle_cpu / kMs, idle_allowed / kMs, requests.size());
  }
  return std::nullopt;
}

OrderedJson timing_bounds_json(const std::vector<TimedRequest>& requests,
                               const RequestOverhead& overhead) {
  if (!overhead.valid || !all_valid(requests)) return "not checked: /proc was not readable";
  double idle_cpu = 0;
  for (const TimedRequest& request : requests) idle_cpu += request.observed.idle_cpu_ns;
  return {
      {"reported_ms",
       median_of(requests, [](const TimedRequest& r) { return r.reported_ns; }) / kMs},
      {"request_wall_ms",
       median_of(requests, [](const TimedRequest& r) { return r.observed.wall_ns; }) / kMs},
      {"calling_thread_waited_ms",
       median_of(requests, [](const TimedRequest& r) { return r.observed.main_wait_ns; }) / kMs},
      {"guard_thread_waited_ms",
       median_of(requests, [](const TimedRequest& r) { return r.observed.parent_wait_ns; }) / kMs},
      {"calling_thread_cpu_ms",
       median_of(requests, [](const TimedRequest& r) { return r.observed.main_cpu_ns; }) / kMs},
      {"other_threads_cpu_ms",
       median_of(requests, [](const TimedRequest& r) { return r.observed.other_cpu_ns; }) / kMs},
      {"idle_cpu_ms_total", idle_cpu / kMs},
      {"null_request_wall_ms", overhead.wall_median_ns / kMs},
      {"null_request_cpu_ms", overhead.main_cpu_median_ns / kMs}};
}

}  // namespace kernelarc
