// CUPTI activity tracing for the CUDA device's timed calls (internal to the CUDA device).
//
// The tracer records every kernel, memcpy and memset on the GPU together with the runtime and
// driver API calls that launched them. A timed call's GPU work is the activity whose launching
// API call began inside the call's window, on ANY stream: work a candidate hides on a stream of
// its own is caught, and the worker's own copies, fills and flushes, made outside the window,
// are not. This is SOL-ExecBench's method (a correlation-id join of API and GPU records), with
// the GPU records' own timestamps as a second net.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/cuda_device.h"

namespace kernelarc {

/// One kernel, memcpy or memset that ran on the GPU.
struct GpuActivity {
  uint64_t start_ns = 0;  ///< CUPTI's timestamps (nanoseconds)
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;
  /// "name|gx,gy,gz|bx,by,bz|dynamic shared bytes" for a kernel, "[memcpy HtoD]|bytes",
  /// "[memset value]|bytes": what the guard compares from one run to the next.
  std::string signature;
  std::optional<KernelResources> kernel;  ///< for a kernel
};

/// The process's one tracer. CUPTI's buffer callbacks are process-wide, so it is created once,
/// on first use, and lives until exit.
class CuptiTracer {
 public:
  /// The tracer, or nullptr with `error` set when CUPTI cannot be loaded or enabled (then the
  /// device times with CUDA events). Call before the CUDA context is created, so that CUPTI
  /// sees everything from the start.
  static CuptiTracer* instance(std::string& error);

  /// CUPTI's current timestamp, on the clock of the activity records.
  uint64_t timestamp() const;
  /// Flushes CUPTI's buffers and forgets every record so far.
  void reset();
  /// Flushes CUPTI's buffers (call after synchronizing the device) and returns the GPU
  /// activities whose launching API call started within [begin_ns, end_ns], or which started
  /// within it themselves. The device must have been idle at begin_ns.
  std::vector<GpuActivity> collect(uint64_t begin_ns, uint64_t end_ns);

 private:
  CuptiTracer() = default;
};

}  // namespace kernelarc
