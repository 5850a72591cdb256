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
#include "core/error.h"

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

std::string describe(const char* role, const ArenaTensor& tensor, std::size_t index) {
  return tensor.name.empty() ? std::string(role) + " " + std::to_string(index)
                             : std::string(role) + " '" + tensor.name + "'";
}

void prepare(BufferPool& pool, std::size_t& slot, const std::vector<ArenaTensor>& tensors,
             StagedTensors& prepared) {
  prepared = {};
  for (const ArenaTensor& tensor : tensors) {
    std::size_t bytes = arena_tensor_bytes(tensor);
    prepared.bases.push_back(pool.get(slot++, bytes));
    prepared.bytes.push_back(bytes);
    prepared.views.push_back(make_ka_tensor(tensor));
  }
}

/// The request's buffers, and its inputs copied from the arena into pristine device buffers.
void stage_buffers(Device& device, BufferPool& pool, std::span<std::byte> arena,
                   const ExecuteRequest& request, StagedCall& staged) {
  std::size_t slot = 0;
  prepare(pool, slot, request.inputs, staged.inputs);
  prepare(pool, slot, request.outputs, staged.outputs);
  staged.workspace_base =
      request.workspace_bytes > 0 ? pool.get(slot, request.workspace_bytes) : nullptr;
  ++slot;
  // The inputs cross the host link once per request; every call then starts from a device-side
  // copy of them (so a call that wrote its inputs cannot feed the next), at device bandwidth:
  // re-sending 128 MiB from the host before each timed call cost ~30 ms a call.
  staged.pristine.clear();
  const auto copy_in = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < request.inputs.size(); ++i) {
    staged.pristine.push_back(pool.get(slot++, staged.inputs.bytes[i]));
    device.copy_from_host(staged.pristine[i], arena.data() + request.inputs[i].offset,
                          staged.inputs.bytes[i]);
  }
  staged.host_link_seconds = seconds_since(copy_in);
}

/// One call's buffers at the next address: inputs from the pristine copies, outputs poisoned,
/// guard bytes armed, the cache flushed if asked.
void stage_call(Device& device, const ExecuteRequest& request, uint64_t& call_counter,
                StagedCall& staged) {
  const std::size_t slot_now = call_counter++ % kShiftSlots;
  const std::size_t shift =
      (request.address_slot ? static_cast<std::size_t>(*request.address_slot) : slot_now) *
      kShiftStep;
  staged.shift = shift;
  staged.guarded.clear();
  for (std::size_t i = 0; i < request.inputs.size(); ++i) {
    auto* data = staged.inputs.bases[i] + shift;
    staged.inputs.views[i].data = data;
    device.copy_on_device(data, staged.pristine[i], staged.inputs.bytes[i]);
    staged.guarded.push_back(
        {describe("input", request.inputs[i], i), data, staged.inputs.bytes[i]});
  }
  for (std::size_t i = 0; i < request.outputs.size(); ++i) {
    auto* data = staged.outputs.bases[i] + shift;
    staged.outputs.views[i].data = data;
    device.fill_pattern(data, staged.outputs.bytes[i], request.output_poison[i]);
    staged.guarded.push_back(
        {describe("output", request.outputs[i], i), data, staged.outputs.bytes[i]});
  }
  if (staged.workspace_base) {
    staged.guarded.push_back(
        {"the workspace", staged.workspace_base + shift, request.workspace_bytes});
  }
  arm_guard_zones(device, staged.guarded);
  if (request.flush_cache) {
    for (std::size_t i = 0; i < request.inputs.size(); ++i)
      device.evict(staged.inputs.views[i].data, staged.inputs.bytes[i]);
    for (std::size_t i = 0; i < request.outputs.size(); ++i)
      device.evict(staged.outputs.views[i].data, staged.outputs.bytes[i]);
    device.flush_cache();
  }
  device.synchronize();
  staged.ready = true;
}

/// The staged call, timed or not; false (with the result's outcome set) when it failed.
bool invoke_staged(Device& device, const ExecuteRequest& request, const EntryPoint& entry,
                   bool timed, bool first, StagedCall& staged, ExecuteResult& result) {
  staged.ready = false;
  void* workspace = staged.workspace_base ? staged.workspace_base + staged.shift : nullptr;
  auto invoke = [&] {
    return entry.call(staged.inputs.views.data(), static_cast<int>(staged.inputs.views.size()),
                      staged.outputs.views.data(), static_cast<int>(staged.outputs.views.size()),
                      device.stream(), workspace, request.workspace_bytes);
  };
  int return_code;
  if (!timed) {
    return_code = invoke();
    device.synchronize();
  } else {
    TimedCall call = device.timed_call(invoke);
    return_code = call.return_code;
    result.times_ns.push_back(call.nanoseconds);
    result.launched.push_back(std::move(call.launched));
    result.clock = call.clock;
  }
  if (first) result.threads_before = count_threads();
  if (std::string breach = breached_guard_zone(device, staged.guarded); !breach.empty()) {
    result.outcome = CallOutcome::OutOfBounds;
    result.message = std::move(breach);
  } else if (return_code != 0) {
    result.outcome = CallOutcome::Failed;
    result.return_code = return_code;
    result.message = entry.error_text();
  }
  result.threads_after = count_threads();
  if (result.outcome != CallOutcome::Ok) return false;
  if (const CudaDeviceInfo* info = cuda_device_info(device); info && timed) {
    result.kernels = nlohmann::json::array();
    for (const KernelResources& kernel : info->last_kernel_resources())
      result.kernels.push_back(kernel.to_json());
  }
  staged.collectable = true;
  return true;
}

/// The last call's outputs and inputs back into the arena, from the worker's own addresses:
/// the candidate may have re-pointed its descriptors.
void collect(Device& device, std::span<std::byte> arena, const ExecuteRequest& request,
             StagedCall& staged, ExecuteResult& result) {
  staged.collectable = false;
  if (!request.copy_back) return;
  const auto copy_back = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < request.outputs.size(); ++i)
    device.copy_to_host(arena.data() + request.outputs[i].offset,
                        staged.outputs.bases[i] + staged.shift, staged.outputs.bytes[i]);
  for (std::size_t i = 0; i < request.inputs.size(); ++i)
    device.copy_to_host(arena.data() + request.inputs[i].offset,
                        staged.inputs.bases[i] + staged.shift, staged.inputs.bytes[i]);
  result.host_link_seconds += seconds_since(copy_back);
}

ExecuteResult run_phase(Device& device, BufferPool& pool, std::span<std::byte> arena,
                        const ExecuteRequest& request, const EntryPoint& entry,
                        uint64_t& call_counter, StagedCall& staged) {
  ExecuteResult result;
  switch (request.phase) {
    case RequestPhase::Stage:
      staged = {};
      stage_buffers(device, pool, arena, request, staged);
      stage_call(device, request, call_counter, staged);
      result.host_link_seconds = staged.host_link_seconds;
      return result;
    case RequestPhase::Run:
      if (!staged.ready) throw InternalError("a Run request without a Stage request before it");
      invoke_staged(device, request, entry, /*timed=*/true, /*first=*/true, staged, result);
      return result;
    case RequestPhase::Collect:
      if (!staged.collectable)
        throw InternalError("a Collect request without a successful Run request before it");
      collect(device, arena, request, staged, result);
      return result;
    case RequestPhase::Whole:
      break;
  }
  stage_buffers(device, pool, arena, request, staged);
  result.host_link_seconds = staged.host_link_seconds;
  const int calls = request.warmup + request.iterations;
  for (int call = 0; call < calls; ++call) {
    stage_call(device, request, call_counter, staged);
    if (!invoke_staged(device, request, entry, call >= request.warmup, call == 0, staged, result))
      return result;
  }
  collect(device, arena, request, staged, result);
  return result;
}

ExecuteResult guarded_calls(Device& device, BufferPool& pool, std::span<std::byte> arena,
                            const ExecuteRequest& request, const EntryPoint& entry,
                            uint64_t& call_counter, StagedCall& staged) {
  ExecuteResult result;
  try {
    return run_phase(device, pool, arena, request, entry, call_counter, staged);
  } catch (const InternalError&) {
    throw;  // the parent broke the protocol; the server answers with an error message
  } catch (const std::bad_alloc&) {
    staged = {};
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
                              uint64_t& call_counter, StagedCall& staged) {
  // Clocks and temperature around the request tell a throttled GPU from a slow candidate.
  const CudaDeviceInfo* info = cuda_device_info(device);
  nlohmann::json status_before = info ? info->gpu_status().to_json() : nlohmann::json();
  ExecuteResult result = guarded_calls(device, pool, arena, request, entry, call_counter, staged);
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
