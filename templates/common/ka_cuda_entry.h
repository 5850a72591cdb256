// The host glue of a shared-object CUDA template: the message ka_last_error returns (ka_fail
// sets it), a once-per-device preparation that also gives the multiprocessor count, and the
// 256-byte alignment of workspace offsets. Included by the template's one translation unit.
#pragma once

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>

namespace ka_entry {
inline char g_error[512];
}  // namespace ka_entry

extern "C" const char* ka_last_error(void) {
  return ka_entry::g_error;
}

/// Formats the message ka_last_error returns; returns 1, ka_run's failure code.
inline int ka_fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(ka_entry::g_error, sizeof ka_entry::g_error, format, args);
  va_end(args);
  return 1;
}

/// Runs prepare(device) on the current device the first time it is seen (e.g. opting kernels in
/// to more than 48 KB of shared memory; it returns 0, or ka_fail's 1) and gives the device's
/// multiprocessor count. 0 on success.
template <typename Prepare>
int ka_prepare_device(int& multiprocessors, Prepare prepare) {
  constexpr int kMaxDevices = 64;
  struct DeviceState {
    bool ready = false;
    int multiprocessors = 0;
  };
  static DeviceState devices[kMaxDevices];
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return ka_fail("cudaGetDevice: %s", cudaGetErrorString(status));
  if (device < 0 || device >= kMaxDevices)
    return ka_fail("device %d: at most %d devices", device, kMaxDevices);
  DeviceState& state = devices[device];
  if (!state.ready) {
    status = cudaDeviceGetAttribute(&state.multiprocessors, cudaDevAttrMultiProcessorCount, device);
    if (status != cudaSuccess)
      return ka_fail("device %d: reading the multiprocessor count: %s", device,
                     cudaGetErrorString(status));
    if (prepare(device) != 0) return 1;
    state.ready = true;
  }
  multiprocessors = state.multiprocessors;
  return 0;
}

inline size_t ka_align256(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}
