// The CPU's memory bandwidth for the speed-of-light bound: the best of several ways to stream a
// buffer far larger than the last-level cache. One method (memcpy on every core) under-measures
// machines whose kernels read faster than they copy, and a kernel then beats the bound (an
// RMSNorm reads its input twice as often as it writes).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kernelarc {

struct BandwidthResult {
  std::string method;  ///< "read-only sum, 32-byte vectors, 2 threads"
  double gbs = 0;      ///< bytes moved (read + written) per second, in 1e9
};

struct CpuBandwidth {
  std::vector<BandwidthResult> methods;  ///< every method tried, in order
  BandwidthResult best;                  ///< the fastest of them
  std::size_t buffer_bytes = 0;          ///< each of the two buffers
};

/// Runs body(thread) on `threads` threads at once, `repetitions` times, and returns each
/// repetition's wall time in seconds, from the first thread's start to the last one's finish,
/// read by the threads themselves.
std::vector<double> time_parallel(int threads, int repetitions,
                                  const std::function<void(int)>& body);

/// Streams two buffers of max(2 x `llc_bytes`, 64 MiB) (at most 1 GiB each) with every method:
/// read-only sums, write-only fills (regular and non-temporal stores), read+write copy loops, at
/// 16- and 32-byte vectors where the CPU has them, and memcpy; on all `threads` and on one.
CpuBandwidth measure_cpu_bandwidth(int threads, int64_t llc_bytes);

}  // namespace kernelarc
