#include "backend/cuda/cuda_cupti.h"

#include <cupti.h>

#include <cstdlib>
#include <unordered_set>

#include "backend/cuda/cuda_dynlib.h"

namespace kernelarc {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{8} << 20;
constexpr std::size_t kRecordAlignment = 8;

#ifdef KERNELARC_CUPTI_LIBRARY
constexpr const char* kCuptiAtBuild = KERNELARC_CUPTI_LIBRARY;
#else
constexpr const char* kCuptiAtBuild = "";
#endif

// The CUPTI functions used, resolved from the dlopen'ed library with the headers' prototypes.
struct Cupti {
  decltype(&cuptiGetVersion) get_version;
  decltype(&cuptiGetResultString) result_string;
  decltype(&cuptiGetTimestamp) get_timestamp;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks;
  decltype(&cuptiActivityEnable) enable;
  decltype(&cuptiActivityFlushAll) flush_all;
  decltype(&cuptiActivityGetNextRecord) next_record;
};

/// An API call (runtime or driver) and the id that ties it to the GPU work it launched.
struct ApiCall {
  uint64_t start_ns = 0;
  uint32_t correlation_id = 0;
};

/// What the buffer callbacks have delivered, guarded by `mutex`: CUPTI calls them from its own
/// thread when a buffer fills, and from the flushing thread.
struct Records {
  std::mutex mutex;
  std::vector<ApiCall> api_calls;
  std::vector<GpuActivity> activities;
  /// A memcpy's runtime correlation id, when it differs from its driver one.
  std::vector<std::pair<std::size_t, uint32_t>> second_ids;
};

Cupti g_cupti{};
Records g_records;

std::string describe(CUptiResult result) {
  const char* text = nullptr;
  if (g_cupti.result_string != nullptr) g_cupti.result_string(result, &text);
  return text != nullptr ? text : "CUPTI error " + std::to_string(static_cast<int>(result));
}

const char* memcpy_kind_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "array";
  }
}

std::string triple(int x, int y, int z) {
  return std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z);
}

GpuActivity kernel_activity(const CUpti_ActivityKernel10& record) {
  KernelResources kernel;
  kernel.name = record.name != nullptr ? record.name : "?";
  kernel.grid = {record.gridX, record.gridY, record.gridZ};
  kernel.block = {record.blockX, record.blockY, record.blockZ};
  kernel.cluster = {static_cast<int>(record.clusterX), static_cast<int>(record.clusterY),
                    static_cast<int>(record.clusterZ)};
  kernel.registers_per_thread = record.registersPerThread;
  kernel.static_shared_bytes = record.staticSharedMemory;
  kernel.dynamic_shared_bytes = record.dynamicSharedMemory;
  kernel.local_bytes_per_thread = record.localMemoryPerThread;
  kernel.launches = 1;
  kernel.busy_us = static_cast<double>(record.end - record.start) * 1e-3;
  GpuActivity activity;
  activity.start_ns = record.start;
  activity.end_ns = record.end;
  activity.correlation_id = record.correlationId;
  activity.signature = kernel.name + "|" + triple(record.gridX, record.gridY, record.gridZ) + "|" +
                       triple(record.blockX, record.blockY, record.blockZ) + "|" +
                       std::to_string(record.dynamicSharedMemory);
  activity.kernel = std::move(kernel);
  return activity;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlignment, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<ApiCall> api_calls;
  std::vector<GpuActivity> activities;
  std::vector<std::pair<std::size_t, uint32_t>> second_ids;
  CUpti_Activity* record = nullptr;
  while (buffer != nullptr && g_cupti.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        activities.push_back(
            kernel_activity(*reinterpret_cast<const CUpti_ActivityKernel10*>(record)));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto& copy = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        activities.push_back({copy.start, copy.end, copy.correlationId,
                              std::string("[memcpy ") + memcpy_kind_name(copy.copyKind) + "]|" +
                                  std::to_string(copy.bytes),
                              std::nullopt});
        if (copy.runtimeCorrelationId != copy.correlationId) {
          second_ids.emplace_back(activities.size() - 1, copy.runtimeCorrelationId);
        }
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto& set = *reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        activities.push_back(
            {set.start, set.end, set.correlationId,
             "[memset " + std::to_string(set.value) + "]|" + std::to_string(set.bytes),
             std::nullopt});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto& call = *reinterpret_cast<const CUpti_ActivityAPI*>(record);
        api_calls.push_back({call.start, call.correlationId});
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
  std::lock_guard lock(g_records.mutex);
  const std::size_t offset = g_records.activities.size();
  for (auto& [index, id] : second_ids) g_records.second_ids.emplace_back(offset + index, id);
  g_records.api_calls.insert(g_records.api_calls.end(), api_calls.begin(), api_calls.end());
  std::move(activities.begin(), activities.end(), std::back_inserter(g_records.activities));
}

// Loads CUPTI and enables the activity kinds; an empty string on success, else why not.
std::string start_tracing() {
  DynamicLibrary library = DynamicLibrary::open(toolkit_library_candidates(
      kCuptiAtBuild, {"libcupti.so", "libcupti.so." + std::to_string(CUPTI_API_VERSION / 10000)}));
  if (!library.loaded()) return "CUPTI is not available: " + library.error();
  g_cupti.get_version = library.function<decltype(g_cupti.get_version)>("cuptiGetVersion");
  g_cupti.result_string = library.function<decltype(g_cupti.result_string)>("cuptiGetResultString");
  g_cupti.get_timestamp = library.function<decltype(g_cupti.get_timestamp)>("cuptiGetTimestamp");
  g_cupti.register_callbacks =
      library.function<decltype(g_cupti.register_callbacks)>("cuptiActivityRegisterCallbacks");
  g_cupti.enable = library.function<decltype(g_cupti.enable)>("cuptiActivityEnable");
  g_cupti.flush_all = library.function<decltype(g_cupti.flush_all)>("cuptiActivityFlushAll");
  g_cupti.next_record =
      library.function<decltype(g_cupti.next_record)>("cuptiActivityGetNextRecord");
  if (!g_cupti.get_version || !g_cupti.result_string || !g_cupti.get_timestamp ||
      !g_cupti.register_callbacks || !g_cupti.enable || !g_cupti.flush_all ||
      !g_cupti.next_record) {
    return "CUPTI is not usable: " + library.name() + " lacks an activity function";
  }
  // The records are read with this build's struct layouts, which older CUPTIs do not write.
  uint32_t version = 0;
  if (g_cupti.get_version(&version) != CUPTI_SUCCESS || version < CUPTI_API_VERSION) {
    return "CUPTI is too old: " + library.name() + " has API version " + std::to_string(version) +
           ", kernelarc was built for " + std::to_string(CUPTI_API_VERSION);
  }
  if (CUptiResult result = g_cupti.register_callbacks(buffer_requested, buffer_completed);
      result != CUPTI_SUCCESS) {
    return "cuptiActivityRegisterCallbacks failed: " + describe(result);
  }
  // CONCURRENT_KERNEL, unlike KERNEL, does not serialize the kernels it records.
  for (CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) {
    if (CUptiResult result = g_cupti.enable(kind); result != CUPTI_SUCCESS) {
      return "cuptiActivityEnable(" + std::to_string(static_cast<int>(kind)) +
             ") failed: " + describe(result);
    }
  }
  return {};
}

}  // namespace

CuptiTracer* CuptiTracer::instance(std::string& error) {
  static const std::string start_error = start_tracing();
  static CuptiTracer tracer;
  error = start_error;
  return start_error.empty() ? &tracer : nullptr;
}

uint64_t CuptiTracer::timestamp() const {
  uint64_t now = 0;
  g_cupti.get_timestamp(&now);
  return now;
}

void CuptiTracer::reset() {
  g_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard lock(g_records.mutex);
  g_records.api_calls.clear();
  g_records.activities.clear();
  g_records.second_ids.clear();
}

std::vector<GpuActivity> CuptiTracer::collect(uint64_t begin_ns, uint64_t end_ns) {
  g_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard lock(g_records.mutex);
  std::unordered_set<uint32_t> launched_in_window;
  for (const ApiCall& call : g_records.api_calls) {
    if (call.start_ns >= begin_ns && call.start_ns <= end_ns) {
      launched_in_window.insert(call.correlation_id);
    }
  }
  // An activity that starts inside the window is the call's too, even without a launch record
  // (the device was idle when the window opened): a launch path that CUPTI's API records miss
  // must not hide work from the timer.
  std::vector<bool> selected(g_records.activities.size(), false);
  for (std::size_t i = 0; i < g_records.activities.size(); ++i) {
    const GpuActivity& activity = g_records.activities[i];
    selected[i] = launched_in_window.contains(activity.correlation_id) ||
                  (activity.start_ns >= begin_ns && activity.start_ns <= end_ns);
  }
  for (const auto& [index, id] : g_records.second_ids) {
    if (launched_in_window.contains(id)) selected[index] = true;
  }
  std::vector<GpuActivity> result;
  for (std::size_t i = 0; i < g_records.activities.size(); ++i) {
    if (selected[i]) result.push_back(std::move(g_records.activities[i]));
  }
  g_records.api_calls.clear();
  g_records.activities.clear();
  g_records.second_ids.clear();
  return result;
}

}  // namespace kernelarc
