#include "backend/cuda/cuda_nvml.h"

#include "backend/cuda/cuda_dynlib.h"

namespace kernelarc {
namespace {

// NVML's C ABI, declared here because nvml.h ships with the driver's development files, which
// a build machine need not have. Enums are ints in the ABI; the values are NVML's.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;
constexpr int kNvmlTemperatureGpu = 0;
constexpr unsigned kNameLength = 96;     // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kVersionLength = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

struct Nvml {
  NvmlReturn (*init)();
  const char* (*error_string)(NvmlReturn);
  NvmlReturn (*handle_by_index)(unsigned, NvmlDevice*);
  NvmlReturn (*handle_by_pci)(const char*, NvmlDevice*);
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*);
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*);
  NvmlReturn (*power)(NvmlDevice, unsigned*);
  NvmlReturn (*name)(NvmlDevice, char*, unsigned);
  NvmlReturn (*driver_version)(char*, unsigned);
  NvmlReturn (*clock_event_reasons)(NvmlDevice, unsigned long long*);
  std::string error;  ///< why NVML cannot be used; empty when it can
};

std::string describe(const Nvml& nvml, NvmlReturn code) {
  const char* text = nvml.error_string != nullptr ? nvml.error_string(code) : nullptr;
  return text != nullptr ? text : "NVML error " + std::to_string(code);
}

Nvml load_nvml() {
  Nvml nvml{};
  DynamicLibrary library = DynamicLibrary::open({"libnvidia-ml.so.1", "libnvidia-ml.so"});
  if (!library.loaded()) {
    nvml.error = "NVML is not available: " + library.error();
    return nvml;
  }
  nvml.init = library.function<decltype(nvml.init)>("nvmlInit_v2");
  nvml.error_string = library.function<decltype(nvml.error_string)>("nvmlErrorString");
  nvml.handle_by_index =
      library.function<decltype(nvml.handle_by_index)>("nvmlDeviceGetHandleByIndex_v2");
  nvml.handle_by_pci =
      library.function<decltype(nvml.handle_by_pci)>("nvmlDeviceGetHandleByPciBusId_v2");
  nvml.clock = library.function<decltype(nvml.clock)>("nvmlDeviceGetClockInfo");
  nvml.temperature = library.function<decltype(nvml.temperature)>("nvmlDeviceGetTemperature");
  nvml.power = library.function<decltype(nvml.power)>("nvmlDeviceGetPowerUsage");
  nvml.name = library.function<decltype(nvml.name)>("nvmlDeviceGetName");
  nvml.driver_version =
      library.function<decltype(nvml.driver_version)>("nvmlSystemGetDriverVersion");
  nvml.clock_event_reasons = library.function<decltype(nvml.clock_event_reasons)>(
      "nvmlDeviceGetCurrentClocksEventReasons");
  if (nvml.clock_event_reasons == nullptr) {  // the name before driver 535
    nvml.clock_event_reasons = library.function<decltype(nvml.clock_event_reasons)>(
        "nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  if (nvml.init == nullptr || nvml.handle_by_index == nullptr || nvml.handle_by_pci == nullptr) {
    nvml.error = "NVML is not available: " + library.name() + " lacks nvmlInit_v2";
    return nvml;
  }
  if (NvmlReturn code = nvml.init(); code != kNvmlSuccess) {
    nvml.error = "NVML is not available: nvmlInit failed: " + describe(nvml, code);
  }
  return nvml;
}

const Nvml& nvml() {
  static const Nvml instance = load_nvml();
  return instance;
}

GpuStatus read_device(const Nvml& api, NvmlDevice device) {
  GpuStatus status;
  status.available = true;
  auto read = [&](const char* field, auto function, auto&&... arguments) {
    if (function == nullptr || function(arguments...) != kNvmlSuccess)
      status.unread.push_back(field);
  };
  char name[kNameLength] = {};
  read("name", api.name, device, name, kNameLength);
  status.name = name;
  char version[kVersionLength] = {};
  read("driver_version", api.driver_version, version, kVersionLength);
  status.driver_version = version;
  read("sm_clock_mhz", api.clock, device, kNvmlClockSm, &status.sm_clock_mhz);
  read("memory_clock_mhz", api.clock, device, kNvmlClockMem, &status.memory_clock_mhz);
  read("temperature_c", api.temperature, device, kNvmlTemperatureGpu, &status.temperature_c);
  unsigned milliwatts = 0;
  read("power_watts", api.power, device, &milliwatts);
  status.power_watts = milliwatts / 1000.0;
  read("clock_event_reasons", api.clock_event_reasons, device, &status.clock_event_reasons);
  return status;
}

GpuStatus unavailable(std::string reason) {
  GpuStatus status;
  status.unavailable_reason = std::move(reason);
  return status;
}

}  // namespace

nlohmann::json GpuStatus::to_json() const {
  if (!available) return {{"available", false}, {"reason", unavailable_reason}};
  return {{"available", true},
          {"name", name},
          {"driver_version", driver_version},
          {"sm_clock_mhz", sm_clock_mhz},
          {"memory_clock_mhz", memory_clock_mhz},
          {"temperature_c", temperature_c},
          {"power_watts", power_watts},
          {"clock_event_reasons", clock_event_reasons},
          {"unread", unread}};
}

GpuStatus read_gpu_status_by_pci(const std::string& pci_bus_id) {
  const Nvml& api = nvml();
  if (!api.error.empty()) return unavailable(api.error);
  NvmlDevice device = nullptr;
  if (NvmlReturn code = api.handle_by_pci(pci_bus_id.c_str(), &device); code != kNvmlSuccess) {
    return unavailable("NVML has no GPU at PCI bus id " + pci_bus_id + ": " + describe(api, code));
  }
  return read_device(api, device);
}

GpuStatus read_gpu_status(unsigned index) {
  const Nvml& api = nvml();
  if (!api.error.empty()) return unavailable(api.error);
  NvmlDevice device = nullptr;
  if (NvmlReturn code = api.handle_by_index(index, &device); code != kNvmlSuccess) {
    return unavailable("NVML has no GPU " + std::to_string(index) + ": " + describe(api, code));
  }
  return read_device(api, device);
}

}  // namespace kernelarc
