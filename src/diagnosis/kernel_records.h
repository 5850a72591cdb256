// The kernel records a GPU trace carries (extra["kernels"]: CUPTI's resources per launched
// kernel plus the guard's theoretical occupancy), read into what a diagnosis reasons about.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"

namespace kernelarc {

struct KernelRecord {
  std::string name;
  int64_t blocks = 0;  ///< grid x * y * z
  int threads_per_block = 0;
  int registers_per_thread = 0;
  int64_t shared_bytes_per_block = 0;  ///< static + dynamic
  int64_t local_bytes_per_thread = 0;  ///< stack frame and spills
  int launches = 1;                    ///< per call
  std::optional<double> occupancy;     ///< theoretical, when the guard knew the architecture
  std::string occupancy_limited_by;
  /// GPU time of this kernel's launches in one call, in microseconds; present only when the
  /// device recorded it ("busy_us"), which lets the launch share be measured, not estimated.
  std::optional<double> busy_us;
};

/// A kernel's name as a person reads it: demangled, without its parameter list, at most
/// `max_chars` long ("ka_moe::dgrad_act_kernel<128, 64, 64, 2, 4, 3, 1>", "nvjet_sm90_...").
std::string readable_kernel_name(const std::string& name, std::size_t max_chars = 96);

/// What ran in one call, slowest first: "nvjet_sm90_... x1 98.0 us, transpose_scales x1 2.0 us"
/// (GPU time per call, when recorded), at most `listed` kernels and then how many more.
std::string kernels_summary(const std::vector<KernelRecord>& records, std::size_t listed = 4);

/// The records of extra["kernels"]; empty when there are none (CPU traces, the CUDA events
/// clock). A record that is not an object, or a field of the wrong type, is an InputError
/// naming `where` and the field.
std::vector<KernelRecord> kernel_records(const OrderedJson& extra, const std::string& where);

}  // namespace kernelarc
