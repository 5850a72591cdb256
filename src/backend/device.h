// The worker-side view of one device: memory, copies, cache flushing and a timed call.
//
// The worker process owns exactly one Device. The CPU device works on host memory; the CUDA
// device (src/backend/cuda/cuda_device.cpp) on device memory of one GPU. A driver error inside a
// Device may abort the worker: the parent classifies the death, it never aborts itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kernelarc {

/// TimedCall::clock of a CUPTI-timed call that left no activity record at all: no kernel, copy
/// or memset. Every CUDA solution must write its outputs on the device, so the candidate
/// disabled or bypassed the tracing; the guard rejects it.
inline constexpr std::string_view kClockSawNothing = "cupti, but no GPU activity was recorded";

/// One timed invocation of the candidate.
struct TimedCall {
  int return_code = 0;
  double nanoseconds = 0;  ///< by the device's clock (CPU: steady clock; CUDA: GPU span)
  /// What the call launched, one entry per kernel or copy ("name|grid|block|bytes"), sorted;
  /// empty on the CPU. The guard requires it to be identical on every timed run.
  std::vector<std::string> launched;
  std::string clock;  ///< "steady_clock", "cupti", "cuda_events"
};

class Device {
 public:
  virtual ~Device() = default;

  /// "cpu" or "cuda:0"; plus a human description (CPU model / GPU name).
  virtual std::string kind() const = 0;
  virtual std::string description() const = 0;

  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* pointer) = 0;
  virtual void copy_from_host(void* device_dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) = 0;
  /// Ordered before the next call on the device's stream.
  virtual void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) = 0;
  /// Repeats `pattern` (one element's bytes) over `bytes` bytes.
  virtual void fill_pattern(void* device_dst, std::size_t bytes,
                            std::span<const uint8_t> pattern) = 0;
  /// Page-locks host memory so that copies to and from it run at the link's speed rather than
  /// through a staging buffer (CUDA). Returns false where it cannot, and the copies then work as
  /// before. Undone by unregister_host before the memory is unmapped.
  virtual bool register_host(std::span<std::byte> /*memory*/) { return false; }
  virtual void unregister_host(void* /*memory*/) {}
  /// Evicts one region (a tensor the next call will touch) from every cache level, so its data
  /// comes from memory. The CPU device flushes its lines (clflush); devices whose flush_cache
  /// already empties the whole cache cheaply (CUDA's L2) ignore it.
  virtual void evict(const void* /*data*/, std::size_t /*bytes*/) {}
  /// Evicts the last-level cache (CPU: writes a buffer of 2x the LLC; CUDA: resets persisting
  /// L2 lines and writes a buffer of 2x the L2).
  virtual void flush_cache() = 0;
  /// The stream handed to ka_run (nullptr on the CPU).
  virtual void* stream() = 0;
  /// Runs `call` once, waits for all work it started and measures it.
  virtual TimedCall timed_call(const std::function<int()>& call) = 0;
  virtual void synchronize() = 0;
};

std::unique_ptr<Device> make_cpu_device();
/// The host CPU's model name from /proc/cpuinfo ("unknown CPU" when it names none).
std::string host_cpu_model();
/// Throws InternalError when CUDA support is not built in or the ordinal is invalid. Without
/// `trace_activity` CUPTI is never loaded and calls are timed with CUDA events: for a process
/// profiled by Nsight Compute, whose own collection conflicts with CUPTI activity tracing.
std::unique_ptr<Device> make_cuda_device(int ordinal, bool trace_activity = true);

}  // namespace kernelarc
