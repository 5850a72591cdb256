// Measured ceilings of a device: the bandwidth and arithmetic peaks that the speed-of-light
// model divides by. Every number is measured on the machine, never taken from a datasheet,
// because clocks, power limits and memory configuration move the real ceiling far from the
// nominal one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kernelarc {

struct Calibration {
  std::string device;       ///< "cpu" or "cuda:N"
  std::string description;  ///< CPU model or GPU name
  std::string measured_at;  ///< ISO 8601, UTC ("2025-01-31T12:00:00Z")
  /// Memory bandwidth over buffers far larger than the last-level cache, counted as bytes read +
  /// written, in GB/s (1e9 bytes): the best of several methods (read-only, write-only and
  /// read+write streams at several vector widths; CPU: on all cores and one; GPU: also
  /// cudaMemcpy D2D), so that no honest kernel moves bytes faster. environment["bandwidth_method"]
  /// names the winner.
  double copy_bandwidth_gbs = 0;
  /// GPU only: dense matrix-product peak per input dtype ("bfloat16", "float16",
  /// "float8_e4m3fn", "tfloat32"), in TFLOP/s, measured through cuBLASLt.
  std::map<std::string, double> tensor_tflops;
  /// Plain fp32 fused multiply-add peak in TFLOP/s (an FMA counts as 2 FLOPs).
  double fp32_fma_tflops = 0;
  int64_t l2_bytes = 0;   ///< GPU: the L2; CPU: one core's L2; 0 when unknown
  int sm_count = 0;       ///< GPU only
  int64_t llc_bytes = 0;  ///< last-level cache (GPU: the L2); 0 when unknown
  int cores = 0;          ///< CPU: usable cores; GPU: 0
  /// Driver, runtime and library versions, clocks at measurement, compiler.
  std::map<std::string, std::string> environment;

  nlohmann::json to_json() const;
  /// Throws InputError "<where>: <field>: expected ..." on a missing or mistyped field.
  static Calibration from_json(const nlohmann::json& json,
                               const std::string& where = "calibration");
};

/// The current time in UTC as ISO 8601, to the second ("2025-01-31T12:00:00Z").
std::string utc_timestamp();

/// Measures this machine's CPU. Takes a few seconds at most.
Calibration calibrate_cpu();

/// Measures one GPU. Throws InternalError with a clear message when kernelarc was built
/// without CUDA, no driver or device is present, or the ordinal does not exist.
Calibration calibrate_cuda(int ordinal);

/// The file a device's calibration is stored in: <workspace>/calibration/<device-id>.json,
/// where the id is the device with ':' replaced by '-' ("cpu", "cuda-0"). Throws InputError for
/// a device name that is not "cpu" or "cuda:N".
std::filesystem::path calibration_path(const std::filesystem::path& workspace,
                                       const std::string& device);

/// Writes the calibration atomically (a temporary file renamed over the old one).
void save_calibration(const std::filesystem::path& workspace, const Calibration& calibration);

/// The stored calibration of `device`, or nullopt when none was saved. A file that exists but
/// is malformed is an InputError naming it.
std::optional<Calibration> load_calibration(const std::filesystem::path& workspace,
                                            const std::string& device);

}  // namespace kernelarc
