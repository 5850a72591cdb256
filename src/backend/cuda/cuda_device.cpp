// The CUDA device: device memory of one GPU, a dedicated stream, L2 flushing, and timed calls
// measured by CUPTI (GPU span of all work on all streams) or, without CUPTI, by CUDA events.
#include "backend/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>

#include "backend/cuda/cuda_cupti.h"
#include "core/error.h"

namespace kernelarc {
namespace {

// A fill's first chunk, copied from the host; the rest is doubled on the device.
constexpr std::size_t kFillChunkBytes = std::size_t{1} << 20;

// A CUDA error inside the worker: after a candidate's kernel faults, the context is unusable,
// so the worker dies (device.h) and the parent reports the candidate as crashed, with this line
// in the worker's log.
[[noreturn]] void fail(const char* operation, cudaError_t error) {
  std::fprintf(stderr, "kernelarc: CUDA error in %s: %s: %s\n", operation, cudaGetErrorName(error),
               cudaGetErrorString(error));
  std::fflush(stderr);
  std::abort();
}

void check(cudaError_t error, const char* operation) {
  if (error != cudaSuccess) fail(operation, error);
}

int attribute(cudaDeviceAttr attr, int ordinal) {
  int value = 0;
  check(cudaDeviceGetAttribute(&value, attr, ordinal), "cudaDeviceGetAttribute");
  return value;
}

class CudaDevice final : public Device, public CudaDeviceInfo {
 public:
  CudaDevice(int ordinal, bool trace_activity) : ordinal_(ordinal) {
    // CUPTI first, so that it sees the context being created.
    if (trace_activity)
      tracer_ = CuptiTracer::instance(tracer_error_);
    else
      tracer_error_ = "CUPTI activity tracing is off";
    check(cudaSetDevice(ordinal), "cudaSetDevice");
    check(cudaFree(nullptr), "creating the context");
    cudaDeviceProp properties{};
    check(cudaGetDeviceProperties(&properties, ordinal), "cudaGetDeviceProperties");
    name_ = properties.name;
    memory_bytes_ = properties.totalGlobalMem;
    major_ = attribute(cudaDevAttrComputeCapabilityMajor, ordinal);
    minor_ = attribute(cudaDevAttrComputeCapabilityMinor, ordinal);
    sm_count_ = attribute(cudaDevAttrMultiProcessorCount, ordinal);
    l2_bytes_ = static_cast<std::size_t>(attribute(cudaDevAttrL2CacheSize, ordinal));
    char bus_id[32] = {};
    check(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), ordinal), "cudaDeviceGetPCIBusId");
    pci_bus_id_ = bus_id;
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }

  ~CudaDevice() override {
    // Nothing here may abort: errors at teardown are ignored.
    cudaDeviceSynchronize();
    if (flush_buffer_ != nullptr) cudaFree(flush_buffer_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }

  std::string kind() const override { return "cuda:" + std::to_string(ordinal_); }

  std::string description() const override {
    std::string text = name_ + " (" + arch() + ", " + std::to_string(sm_count_) + " SMs, " +
                       std::to_string(l2_bytes_ >> 20) + " MiB L2, " +
                       std::to_string(memory_bytes_ >> 30) + " GiB, PCI " + pci_bus_id_ +
                       "; timing: ";
    return text + (tracer_ != nullptr ? "cupti)" : "cuda_events, " + tracer_error_ + ")");
  }

  void* allocate(std::size_t bytes) override {
    void* pointer = nullptr;
    // A zero-byte tensor still gets its own address.
    const cudaError_t error = cudaMalloc(&pointer, std::max<std::size_t>(bytes, 256));
    if (error == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: clear it so later calls do not report it
      throw std::bad_alloc();
    }
    check(error, "cudaMalloc");
    return pointer;
  }

  void release(void* pointer) override { check(cudaFree(pointer), "cudaFree"); }

  void copy_from_host(void* device_dst, const void* host_src, std::size_t bytes) override {
    copy(device_dst, host_src, bytes, cudaMemcpyHostToDevice);
  }

  void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) override {
    copy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost);
  }

  bool register_host(std::span<std::byte> memory) override {
    if (memory.empty()) return false;
    if (cudaHostRegister(memory.data(), memory.size(), cudaHostRegisterDefault) == cudaSuccess)
      return true;
    cudaGetLastError();  // clears it: unregistered memory still copies, only more slowly
    return false;
  }

  void unregister_host(void* memory) override {
    if (cudaHostUnregister(memory) != cudaSuccess) cudaGetLastError();
  }

  void copy_on_device(void* device_dst, const void* device_src, std::size_t bytes) override {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpyAsync");
  }

  void fill_pattern(void* device_dst, std::size_t bytes,
                    std::span<const uint8_t> pattern) override {
    if (bytes == 0 || pattern.empty()) return;
    auto* out = static_cast<uint8_t*>(device_dst);
    if (std::all_of(pattern.begin(), pattern.end(), [&](uint8_t b) { return b == pattern[0]; })) {
      check(cudaMemsetAsync(out, pattern[0], bytes, stream_), "cudaMemsetAsync");
      synchronize_stream();
      return;
    }
    // One chunk of whole patterns from the host, then doubling copies on the device: each copy
    // starts at a multiple of the pattern's length, so the pattern runs on unbroken.
    const std::size_t whole = std::max<std::size_t>(1, kFillChunkBytes / pattern.size());
    std::vector<uint8_t> chunk(std::min(bytes, whole * pattern.size()));
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = pattern[i % pattern.size()];
    check(cudaMemcpyAsync(out, chunk.data(), chunk.size(), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync");
    for (std::size_t filled = chunk.size(); filled < bytes;) {
      const std::size_t count = std::min(filled, bytes - filled);
      check(cudaMemcpyAsync(out + filled, out, count, cudaMemcpyDeviceToDevice, stream_),
            "cudaMemcpyAsync");
      filled += count;
    }
    synchronize_stream();
  }

  void flush_cache() override {
    const std::size_t bytes = 2 * l2_bytes_;
    if (flush_buffer_ == nullptr) check(cudaMalloc(&flush_buffer_, bytes), "cudaMalloc");
    // Persisting lines survive ordinary evictions; reset them first.
    check(cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache");
    ++flush_round_;
    check(cudaMemsetAsync(flush_buffer_, flush_round_ & 0xFF, bytes, stream_), "cudaMemsetAsync");
    synchronize_stream();
  }

  void* stream() override { return stream_; }

  TimedCall timed_call(const std::function<int()>& call) override {
    // Everything the worker queued ends before the window opens, so none of it is counted.
    synchronize();
    return tracer_ != nullptr ? traced_call(call) : event_timed_call(call);
  }

  void synchronize() override { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

  std::vector<KernelResources> last_kernel_resources() const override { return last_kernels_; }

  std::string arch() const override {
    return "sm_" + std::to_string(major_) + std::to_string(minor_);
  }

  std::string pci_bus_id() const override { return pci_bus_id_; }

  GpuStatus gpu_status() const override { return read_gpu_status_by_pci(pci_bus_id_); }

 private:
  void copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, kind, stream_), "cudaMemcpyAsync");
    synchronize_stream();
  }

  void synchronize_stream() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  TimedCall traced_call(const std::function<int()>& call) {
    TimedCall result;
    result.clock = "cupti";
    tracer_->reset();
    const uint64_t begin = tracer_->timestamp();
    result.return_code = call();
    // The device-wide synchronize waits for work on every stream, the candidate's own too.
    check(cudaDeviceSynchronize(), "the candidate's work (cudaDeviceSynchronize)");
    const uint64_t end = tracer_->timestamp();
    std::vector<GpuActivity> activities = tracer_->collect(begin, end);
    uint64_t first = UINT64_MAX;
    uint64_t last = 0;
    std::map<std::string, KernelResources> kernels;
    for (GpuActivity& activity : activities) {
      first = std::min(first, activity.start_ns);
      last = std::max(last, activity.end_ns);
      result.launched.push_back(std::move(activity.signature));
      if (!activity.kernel) continue;
      auto [it, inserted] = kernels.emplace(result.launched.back(), *activity.kernel);
      if (inserted) continue;
      ++it->second.launches;
      it->second.busy_us += activity.kernel->busy_us;
    }
    result.nanoseconds = activities.empty() ? 0.0 : static_cast<double>(last - first);
    if (activities.empty()) result.clock = kClockSawNothing;
    std::sort(result.launched.begin(), result.launched.end());
    last_kernels_.clear();
    for (auto& [signature, kernel] : kernels) last_kernels_.push_back(std::move(kernel));
    return result;
  }

  // Without CUPTI: events on the device's stream bracket the call. Work on other streams is
  // not ordered after the stop event, so it is not measured; `clock` tells the guard so.
  TimedCall event_timed_call(const std::function<int()>& call) {
    TimedCall result;
    result.clock = "cuda_events";
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    result.return_code = call();
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    check(cudaDeviceSynchronize(), "the candidate's work (cudaDeviceSynchronize)");
    float milliseconds = 0;
    check(cudaEventElapsedTime(&milliseconds, start_, stop_), "cudaEventElapsedTime");
    result.nanoseconds = milliseconds * 1e6;
    last_kernels_.clear();
    return result;
  }

  int ordinal_;
  CuptiTracer* tracer_ = nullptr;
  std::string tracer_error_;
  std::string name_;
  std::string pci_bus_id_;
  std::size_t memory_bytes_ = 0;
  std::size_t l2_bytes_ = 0;
  int major_ = 0;
  int minor_ = 0;
  int sm_count_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  void* flush_buffer_ = nullptr;
  unsigned flush_round_ = 0;
  std::vector<KernelResources> last_kernels_;
};

}  // namespace

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::unique_ptr<Device> make_cuda_device(int ordinal, bool trace_activity) {
  int count = 0;
  if (cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) {
    throw InternalError("cuda:" + std::to_string(ordinal) + ": no CUDA device can be used (" +
                        cudaGetErrorString(error) + ")");
  }
  if (ordinal < 0 || ordinal >= count) {
    throw InternalError("cuda:" + std::to_string(ordinal) + ": no such device (this machine has " +
                        std::to_string(count) + " CUDA device(s))");
  }
  return std::make_unique<CudaDevice>(ordinal, trace_activity);
}

}  // namespace kernelarc
