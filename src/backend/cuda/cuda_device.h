// What the CUDA device knows beyond the Device interface: the resources of the kernels a timed
// call launched (from CUPTI's kernel records), the GPU's architecture and its NVML reading.
//
// Header-only for its users: the worker reaches these through cuda_device_info(device), which
// is null for the CPU device and in builds without CUDA, so the worker compiles either way.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cuda/cuda_nvml.h"
#include "backend/device.h"

namespace kernelarc {

/// One distinct kernel launch of a timed call, as CUPTI recorded it.
struct KernelResources {
  std::string name;  ///< the kernel's (mangled) symbol
  std::array<int, 3> grid{};
  std::array<int, 3> block{};
  std::array<int, 3> cluster{};  ///< {0, 0, 0} without thread-block clusters
  int registers_per_thread = 0;
  int static_shared_bytes = 0;          ///< per block
  int dynamic_shared_bytes = 0;         ///< per block
  uint32_t local_bytes_per_thread = 0;  ///< stack frame and spills; > 0 hints at spilling
  int launches = 0;                     ///< how many times the call launched it
  double busy_us = 0;                   ///< GPU time of those launches, start to end, summed

  /// {"name":..,"grid":[x,y,z],"block":[..],"cluster":[..],"registers_per_thread":..,
  ///  "static_shared_bytes":..,"dynamic_shared_bytes":..,"local_bytes_per_thread":..,
  ///  "launches":..,"busy_us":..}
  nlohmann::json to_json() const;
};

/// The CUDA device's extras, implemented by the device that make_cuda_device returns.
class CudaDeviceInfo {
 public:
  virtual ~CudaDeviceInfo() = default;
  /// The distinct kernels the last timed_call launched, with their resources, sorted by name
  /// then launch shape; empty when timing falls back to CUDA events (no CUPTI).
  virtual std::vector<KernelResources> last_kernel_resources() const = 0;
  /// "sm_90": what CudaCompileOptions::device_arch takes.
  virtual std::string arch() const = 0;
  /// The PCI bus id ("0000:1b:00.0"), which names the GPU for NVML too.
  virtual std::string pci_bus_id() const = 0;
  /// Clocks, temperature and power now (NVML); unavailable with the reason when NVML is absent.
  virtual GpuStatus gpu_status() const = 0;
};

/// The CUDA extras of a device, or nullptr for any other device.
inline const CudaDeviceInfo* cuda_device_info(const Device& device) {
  return dynamic_cast<const CudaDeviceInfo*>(&device);
}

/// The number of CUDA devices this process can use; 0 without a driver, without a GPU or in a
/// build without CUDA. It initializes the CUDA driver: call it only where CUDA may be loaded.
int cuda_device_count();

inline nlohmann::json KernelResources::to_json() const {
  return {{"name", name},
          {"grid", grid},
          {"block", block},
          {"cluster", cluster},
          {"registers_per_thread", registers_per_thread},
          {"static_shared_bytes", static_shared_bytes},
          {"dynamic_shared_bytes", dynamic_shared_bytes},
          {"local_bytes_per_thread", local_bytes_per_thread},
          {"launches", launches},
          {"busy_us", busy_us}};
}

}  // namespace kernelarc
