#include "backend/worker/worker_execute.h"

#include <dlfcn.h>

#include <chrono>
#include <filesystem>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "backend/cuda/cuda_device.h"
#include "backend/cuda/cuda_launch.h"
#include "backend/worker/guard_zones.h"
#include "backend/worker/worker_integrity.h"
#include "backend/worker/worker_protocol.h"
#include "core/elapsed.h"

namespace kernelarc {
namespace {

// Each call moves every buffer by kShiftStep bytes, cycling through kShiftSlots positions, so a
// candidate cannot cache results keyed on the input address. 256 keeps CUDA's alignment.
constexpr std::size_t kShiftStep = 256;
constexpr std::size_t kShiftSlots = kAddressSlots;
// ka_last_error text beyond this is cut: it only needs to explain, and must fit in a frame.
constexpr std::size_t kMaxMessage = 4096;

ka_tensor make_ka_tensor(const ArenaTensor& tensor) {
  ka_tensor view{};
  view.dtype = static_cast<int>(tensor.dtype);
  view.ndim = static_cast<int>(tensor.shape.size());
  int64_t stride = 1;
  for (int dim = view.ndim - 1; dim >= 0; --dim) {
    view.shape[dim] = tensor.shape[dim];
    view.stride[dim] = stride;
    stride *= tensor.shape[dim];
  }
  return view;
}

struct Tensors {
  std::vector<std::byte*> bases;
  std::vector<std::size_t> bytes;
  std::vector<ka_tensor> views;
};

std::string describe(const char* role, const ArenaTensor& tensor, std::size_t index) {
  return tensor.name.empty() ? std::string(role) + " " + std::to_string(index)
                             : std::string(role) + " '" + tensor.name + "'";
}

Tensors prepare(BufferPool& pool, std::size_t& slot, const std::vector<ArenaTensor>& tensors) {
  Tensors prepared;
  for (const ArenaTensor& tensor : tensors) {
    std::size_t bytes = arena_tensor_bytes(tensor);
    prepared.bases.push_back(pool.get(slot++, bytes));
    prepared.bytes.push_back(bytes);
    prepared.views.push_back(make_ka_tensor(tensor));
  }
  return prepared;
}

ExecuteResult run_calls(Device& device, BufferPool& pool, std::span<std::byte> arena,
                        const ExecuteRequest& request, const EntryPoint& entry,
                        uint64_t& call_counter) {
  std::size_t slot = 0;
  Tensors inputs = prepare(pool, slot, request.inputs);
  Tensors outputs = prepare(pool, slot, request.outputs);
  std::byte* workspace_base =
      request.workspace_bytes > 0 ? pool.get(slot, request.workspace_bytes) : nullptr;
  ++slot;
  // The inputs cross the host link once per request; every call then starts from a device-side
  // copy of them (so a call that wrote its inputs cannot feed the next), at device bandwidth:
  // re-sending 128 MiB from the host before each timed call cost ~30 ms a call.
  ExecuteResult result;
  std::vector<std::byte*> pristine;
  // The host link's share of the request (the copies synchronize), for the guard's account.
  const auto copy_in = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < request.inputs.size(); ++i) {
    pristine.push_back(pool.get(slot++, inputs.bytes[i]));
    device.copy_from_host(pristine[i], arena.data() + request.inputs[i].offset, inputs.bytes[i]);
  }
  result.host_link_seconds = seconds_since(copy_in);

  std::size_t last_shift = 0;
  int calls = request.warmup + request.iterations;
  for (int call = 0; call < calls; ++call) {
    const std::size_t slot_now = call_counter++ % kShiftSlots;
    std::size_t shift =
        (request.address_slot ? static_cast<std::size_t>(*request.address_slot) : slot_now) *
        kShiftStep;
    last_shift = shift;
    std::vector<GuardedBuffer> guarded;
    for (std::size_t i = 0; i < request.inputs.size(); ++i) {
      auto* data = inputs.bases[i] + shift;
      inputs.views[i].data = data;
      device.copy_on_device(data, pristine[i], inputs.bytes[i]);
      guarded.push_back({describe("input", request.inputs[i], i), data, inputs.bytes[i]});
    }
    for (std::size_t i = 0; i < request.outputs.size(); ++i) {
      auto* data = outputs.bases[i] + shift;
      outputs.views[i].data = data;
      device.fill_pattern(data, outputs.bytes[i], request.output_poison[i]);
      guarded.push_back({describe("output", request.outputs[i], i), data, outputs.bytes[i]});
    }
    void* workspace = workspace_base ? workspace_base + shift : nullptr;
    if (workspace_base) {
      guarded.push_back({"the workspace", workspace_base + shift, request.workspace_bytes});
    }
    arm_guard_zones(device, guarded);
    if (request.flush_cache) {
      for (std::size_t i = 0; i < request.inputs.size(); ++i) {
        device.evict(inputs.views[i].data, inputs.bytes[i]);
      }
      for (std::size_t i = 0; i < request.outputs.size(); ++i) {
        device.evict(outputs.views[i].data, outputs.bytes[i]);
      }
      device.flush_cache();
    }
    device.synchronize();

    auto invoke = [&] {
      return entry.call(inputs.views.data(), static_cast<int>(inputs.views.size()),
                        outputs.views.data(), static_cast<int>(outputs.views.size()),
                        device.stream(), workspace, request.workspace_bytes);
    };
    int return_code;
    if (call < request.warmup) {
      return_code = invoke();
      device.synchronize();
    } else {
      TimedCall timed = device.timed_call(invoke);
      return_code = timed.return_code;
      result.times_ns.push_back(timed.nanoseconds);
      result.launched.push_back(std::move(timed.launched));
      result.clock = timed.clock;
    }
    if (call == 0) result.threads_before = count_threads();
    if (std::string breach = breached_guard_zone(device, guarded); !breach.empty()) {
      result.outcome = CallOutcome::OutOfBounds;
      result.message = std::move(breach);
      result.threads_after = count_threads();
      return result;
    }
    if (return_code != 0) {
      result.outcome = CallOutcome::Failed;
      result.return_code = return_code;
      result.message = entry.error_text();
      result.threads_after = count_threads();
      return result;
    }
  }
  result.threads_after = count_threads();
  if (const CudaDeviceInfo* info = cuda_device_info(device); info && request.iterations > 0) {
    for (const KernelResources& kernel : info->last_kernel_resources())
      result.kernels.push_back(kernel.to_json());
  }
  if (request.copy_back) {
    const auto copy_back = std::chrono::steady_clock::now();
    // From the worker's own addresses: the candidate may have re-pointed its descriptors.
    for (std::size_t i = 0; i < request.outputs.size(); ++i)
      device.copy_to_host(arena.data() + request.outputs[i].offset, outputs.bases[i] + last_shift,
                          outputs.bytes[i]);
    for (std::size_t i = 0; i < request.inputs.size(); ++i)
      device.copy_to_host(arena.data() + request.inputs[i].offset, inputs.bases[i] + last_shift,
                          inputs.bytes[i]);
    result.host_link_seconds += seconds_since(copy_back);
  }
  return result;
}

ExecuteResult guarded_calls(Device& device, BufferPool& pool, std::span<std::byte> arena,
                            const ExecuteRequest& request, const EntryPoint& entry,
                            uint64_t& call_counter) {
  ExecuteResult result;
  try {
    return run_calls(device, pool, arena, request, entry, call_counter);
  } catch (const std::bad_alloc&) {
    pool.clear();
    result.outcome = CallOutcome::OutOfMemory;
    result.message =
        "an allocation failed (std::bad_alloc): out of memory or over the memory limit";
  } catch (const std::exception& error) {
    result.outcome = CallOutcome::Crashed;
    result.message = std::string("the call threw an exception: ") + error.what();
  } catch (...) {
    result.outcome = CallOutcome::Crashed;
    result.message = "the call threw an exception that is not a std::exception";
  }
  if (result.message.size() > kMaxMessage) result.message.resize(kMaxMessage);
  return result;
}

}  // namespace

const EntryPoint& null_entry_point() {
  static const EntryPoint entry = [] {
    EntryPoint null;
    null.run = [](const ka_tensor*, int, ka_tensor*, int, void*, void*, std::size_t) { return 0; };
    return null;
  }();
  return entry;
}

int EntryPoint::call(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                     void* stream, void* workspace, std::size_t workspace_bytes) const {
  if (kernel)
    return kernel->run(inputs, n_inputs, outputs, n_outputs, stream, workspace, workspace_bytes);
  return run(inputs, n_inputs, outputs, n_outputs, stream, workspace, workspace_bytes);
}

std::string EntryPoint::error_text() const {
  const char* text = kernel ? kernel->last_error() : last_error ? last_error() : nullptr;
  if (!text) return {};
  std::string message(text);
  if (message.size() > kMaxMessage) message.resize(kMaxMessage);
  return message;
}

std::byte* BufferPool::get(std::size_t slot, std::size_t bytes) {
  if (slot >= buffers_.size()) buffers_.resize(slot + 1);
  Buffer& buffer = buffers_[slot];
  std::size_t needed = bytes + kShiftStep * (kShiftSlots - 1) + 2 * kGuardZoneBytes;
  if (buffer.capacity < needed) {
    if (buffer.base) device_.release(buffer.base);
    buffer = Buffer{};
    buffer.base = device_.allocate(needed);
    buffer.capacity = needed;
  }
  return static_cast<std::byte*>(buffer.base) + kGuardZoneBytes;
}

void BufferPool::clear() {
  for (Buffer& buffer : buffers_)
    if (buffer.base) device_.release(buffer.base);
  buffers_.clear();
}

int count_threads() {
  int count = 0;
  std::error_code error;
  for (std::filesystem::directory_iterator it("/proc/self/task", error), end; !error && it != end;
       it.increment(error))
    ++count;
  return count;
}

ExecuteResult execute_request(Device& device, BufferPool& pool, std::span<std::byte> arena,
                              const ExecuteRequest& request, const EntryPoint& entry,
                              uint64_t& call_counter) {
  // Clocks and temperature around the request tell a throttled GPU from a slow candidate.
  const CudaDeviceInfo* info = cuda_device_info(device);
  nlohmann::json status_before = info ? info->gpu_status().to_json() : nlohmann::json();
  ExecuteResult result = guarded_calls(device, pool, arena, request, entry, call_counter);
  result.device_status_before = std::move(status_before);
  if (info) result.device_status_after = info->gpu_status().to_json();
  return result;
}

ExecuteResult load_entry_point(Device& device, const std::string& library,
                               const std::string& symbol, EntryPoint& entry) {
  ExecuteResult result;
  if (is_launch_plan(library)) {
    if (!cuda_device_info(device)) {
      result.outcome = CallOutcome::LoadFailed;
      result.message =
          library + ": a launch plan runs only on a CUDA device, not on " + device.kind();
      return result;
    }
    std::string error;
    std::unique_ptr<CubinKernel> kernel = load_cubin_kernel(library, error);
    if (!kernel) {
      result.outcome = CallOutcome::LoadFailed;
      result.message = error;
      return result;
    }
    entry = EntryPoint{};
    entry.kernel = std::move(kernel);
    return result;
  }
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    result.outcome = CallOutcome::LoadFailed;
    result.message = dlerror();
    return result;
  }
  if (std::string shadow = shadowed_symbol(handle); !shadow.empty()) {
    result.outcome = CallOutcome::Tampered;
    result.message = shadow;
    return result;
  }
  void* run = dlsym(handle, symbol.c_str());
  if (!run) {
    result.outcome = CallOutcome::LoadFailed;
    result.message = "entry point \"" + symbol + "\" not found in " + library;
    return result;
  }
  entry = EntryPoint{};
  entry.run = reinterpret_cast<ka_run_fn>(run);
  entry.last_error = reinterpret_cast<ka_last_error_fn>(dlsym(handle, "ka_last_error"));
  return result;
}

}  // namespace kernelarc
