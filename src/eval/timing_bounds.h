// Bounds on the times a worker reports, from what the parent measured itself.
//
// The worker's reply is not trusted: a candidate runs in the worker's process and can rewrite
// the reply, or do its work where the worker's clock does not look (a helper thread before or
// after the call, between requests). The parent therefore measures every timed request by its
// own clock and reads the worker's CPU time per thread from the kernel (ParentObservation), and
// compares the reported times with them, after subtracting what a request costs around the call
// (RequestOverhead, measured with the worker's null kernel before any candidate was loaded).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/worker/worker.h"
#include "core/json_fields.h"

namespace kernelarc {

/// What a timed request costs around the call itself, per request: the parent's wall clock and
/// the worker's main thread's CPU time, measured on requests of the workload's shape with the
/// null kernel.
struct RequestOverhead {
  bool valid = false;
  double wall_median_ns = 0, wall_max_ns = 0;
  double main_cpu_median_ns = 0, main_cpu_max_ns = 0;
};

/// Summarizes null-kernel observations (the first, which faults in the buffers, is dropped).
RequestOverhead summarize_overhead(const std::vector<ParentObservation>& observed);

/// One timed request: the time the worker reported for its call and what the parent saw.
struct TimedRequest {
  double reported_ns = 0;
  ParentObservation observed;
};

/// Why the reported times cannot be true (a message for the trace log), or nullopt. Checks,
/// on medians over the requests so that one noisy request decides nothing:
/// - the parent's wall clock, less the time the calling thread and the parent's own thread
///   waited for a core: a request cannot take far longer than the reported call plus the
///   overhead (every device);
/// - on the CPU, the worker's main thread makes the call, and one thread's CPU time never
///   exceeds the wall time: its CPU time beyond the overhead bounds the call's time from below;
/// - on the CPU, the other threads can work only during the call: their CPU time cannot exceed
///   the call's time for each of them (a pool that sleeps between calls costs nothing);
/// - on the CPU, while the worker waits for the next request its threads use no CPU.
/// `cores` caps how many threads can run at once. The margins are generous: an honest kernel
/// must never be refused for noise (cost: a forgery below roughly the overhead's own jitter,
/// tens of microseconds on a quiet CPU, is not seen here; the speed-of-light floor remains).
std::optional<std::string> timing_violation(const std::vector<TimedRequest>& requests,
                                            const RequestOverhead& overhead, bool cpu_device,
                                            int cores);

/// The medians the checks compared, for the trace (extra.timing_checks).
OrderedJson timing_bounds_json(const std::vector<TimedRequest>& requests,
                               const RequestOverhead& overhead);

}  // namespace kernelarc
