// The worker's execute loop: one ExecuteRequest against the loaded entry point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/cuda/cuda_cubin_kernel.h"
#include "backend/device.h"
#include "backend/worker/guard_zones.h"
#include "backend/worker/worker.h"
#include "kernelarc/abi.h"

namespace kernelarc {

/// The loaded candidate: a library's entry point, or a cubin behind its launch plan.
struct EntryPoint {
  ka_run_fn run = nullptr;
  ka_last_error_fn last_error = nullptr;  ///< optional
  std::unique_ptr<CubinKernel> kernel;    ///< set instead of run for a launch plan

  bool loaded() const { return run || kernel; }
  /// ka_run's contract, through whichever of run and kernel is set.
  int call(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs, void* stream,
           void* workspace, std::size_t workspace_bytes) const;
  /// Why the last call failed (ka_last_error or CubinKernel::last_error, cut to a length that
  /// fits a message); empty when the candidate does not say.
  std::string error_text() const;
};

/// The worker's own entry point, which returns 0 at once (ExecuteRequest::null_kernel).
const EntryPoint& null_entry_point();

/// Loads a candidate by the worker's rules into `entry`: a launch plan's cubin into the CUDA
/// context of `device` (a CUDA device only), or a library's `symbol`, refused as Tampered when
/// the library shadows the runtime's symbols. Earlier libraries stay loaded: dlclose of a library
/// whose OpenMP threads or thread-local destructors are still live can crash the process. The
/// outcome is Ok, LoadFailed or Tampered, with the reason; `entry` is replaced only on Ok.
ExecuteResult load_entry_point(Device& device, const std::string& library,
                               const std::string& symbol, EntryPoint& entry);

/// Device buffers kept from one request to the next, one per tensor position, so that
/// repeated requests of the same shapes allocate nothing (cudaMalloc costs far more than a
/// call, and synchronizes the device). Each has room to be shifted to a new address per call,
/// with guard bytes (guard_zones.h) on both sides of it.
class BufferPool {
 public:
  explicit BufferPool(Device& device) : device_(device) {}
  ~BufferPool() { clear(); }
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// Buffer number `slot`, able to hold `bytes` at every shift. Throws std::bad_alloc.
  std::byte* get(std::size_t slot, std::size_t bytes);
  /// Releases every buffer.
  void clear();

 private:
  struct Buffer {
    void* base = nullptr;
    std::size_t capacity = 0;
  };
  Device& device_;
  std::vector<Buffer> buffers_;
};

struct StagedTensors {
  std::vector<std::byte*> bases;
  std::vector<std::size_t> bytes;
  std::vector<ka_tensor> views;
};

/// A call's buffers from one request to the next (RequestPhase): what Stage prepared for Run,
/// and what Run left for Collect.
struct StagedCall {
  StagedTensors inputs, outputs;
  std::vector<std::byte*> pristine;  ///< the inputs as the arena held them
  std::byte* workspace_base = nullptr;
  std::size_t shift = 0;  ///< the call's address offset
  std::vector<GuardedBuffer> guarded;
  double host_link_seconds = 0;
  bool ready = false;        ///< staged, not yet run
  bool collectable = false;  ///< run successfully, not yet collected
};

/// Runs `request` (already validated against `arena`): per call, copies the inputs into pool
/// buffers shifted to a new address, poisons the outputs, arms the guard
/// bytes, flushes the cache if asked, then calls the entry point (warm-up calls untimed, the rest
/// through Device::timed_call). `call_counter` numbers calls across requests so that consecutive
/// requests also see new addresses. A write into the guard bytes gives OutOfBounds; allocation
/// failures OutOfMemory (and empty the pool), a non-zero return Failed, an exception thrown by the
/// candidate Crashed; it never throws. On a CUDA device the result also carries the GPU's status at
/// its start and end, and the kernels of the last timed call.
/// A Stage/Run/Collect request does its part of one call, keeping the call's state in `staged`;
/// a Run or Collect out of order throws InternalError.
ExecuteResult execute_request(Device& device, BufferPool& pool, std::span<std::byte> arena,
                              const ExecuteRequest& request, const EntryPoint& entry,
                              uint64_t& call_counter, StagedCall& staged);

/// Threads of this process (entries of /proc/self/task).
int count_threads();

}  // namespace kernelarc
