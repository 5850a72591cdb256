// GPU clocks, temperature, power, name and driver version through NVML, loaded with dlopen.
//
// The guard records the SM and memory clocks before and after timing (it never changes them);
// a Trace carries them as part of its environment. libnvidia-ml ships with the driver, not with
// the toolkit, so on a machine without a driver every reading is "unavailable" with the reason,
// never an error.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kernelarc {

/// One reading of one GPU.
struct GpuStatus {
  bool available = false;          ///< NVML was loaded and the GPU found
  std::string unavailable_reason;  ///< why not, when !available
  std::string name;                ///< "NVIDIA H200"
  std::string driver_version;      ///< "580.159.04"
  unsigned sm_clock_mhz = 0;       ///< current SM clock
  unsigned memory_clock_mhz = 0;   ///< current memory clock
  unsigned temperature_c = 0;      ///< GPU core temperature
  double power_watts = 0;          ///< board power draw
  /// NVML's clocks-event (throttle) reason bits: 0 = not throttled, 1 = idle, 4 = software
  /// power cap, 0x20 = software thermal slowdown, ...
  unsigned long long clock_event_reasons = 0;
  /// The fields above that NVML could not read on this GPU (they stay 0 or empty).
  std::vector<std::string> unread;

  /// {"available":true,"name":...,"sm_clock_mhz":...} or {"available":false,"reason":...}.
  nlohmann::json to_json() const;
};

/// Reads the GPU with this PCI bus id, as cudaDeviceGetPCIBusId writes it ("0000:1b:00.0").
/// The bus id, unlike an index, names the same GPU for CUDA and NVML whatever
/// CUDA_VISIBLE_DEVICES says.
GpuStatus read_gpu_status_by_pci(const std::string& pci_bus_id);
/// Reads the GPU at NVML's index `index` (NVML numbers all GPUs of the machine).
GpuStatus read_gpu_status(unsigned index);

}  // namespace kernelarc
