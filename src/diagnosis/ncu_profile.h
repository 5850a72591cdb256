// An optional deeper profile of a candidate with Nsight Compute (ncu): a fixed set of hardware
// metrics per kernel launch (DRAM and SM throughput, achieved occupancy, L2 hit rate, DRAM
// bytes, duration, registers, warp stall reasons), read from `ncu --csv --page raw` output.
// Launching ncu is the caller's job; this file builds its command line and reads what it
// printed, including the ways it fails (not installed, counters not permitted).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kernelarc {

/// Every metric a profile collects, as ncu names them: the throughput and occupancy metrics
/// first, then ncu_stall_metrics().
const std::vector<std::string>& ncu_metrics();
/// The warp stall reasons of Nsight Compute's Warp State Statistics section, as the average
/// number of cycles a warp spends stalled per issued instruction
/// (smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio).
const std::vector<std::string>& ncu_stall_metrics();

/// `ncu --csv <page> --clock-control none <sections> --target-processes all executable args...`:
/// what every kernelarc run of ncu shares (clocks left as they are, every process the target
/// starts profiled), around the page and the sections or metrics it asks for.
std::vector<std::string> ncu_csv_command(const std::filesystem::path& ncu,
                                         const std::vector<std::string>& page,
                                         const std::vector<std::string>& sections,
                                         const std::filesystem::path& executable,
                                         const std::vector<std::string>& args);

/// argv of `ncu --csv --page raw --print-units base --clock-control none --metrics <list>
/// --target-processes all <executable> <args...>`. Clocks are left as the guard finds them, as
/// the timed runs do; base units make the columns comparable across ncu versions.
std::vector<std::string> ncu_command(const std::filesystem::path& ncu,
                                     const std::filesystem::path& executable,
                                     const std::vector<std::string>& args);

/// One profiled kernel launch. Metric values are in base units (bytes, nanoseconds, percent,
/// ratios) whatever unit ncu printed; nullopt for "n/a".
struct NcuKernel {
  int id = 0;
  std::string name;
  std::string block_size;  ///< as ncu prints it: "(256, 1, 1)"
  std::string grid_size;
  std::map<std::string, std::optional<double>, std::less<>> metrics;

  std::optional<double> metric(std::string_view name) const;
};

/// The profile of a whole run: sums of bytes and time, and percentages and stall ratios
/// weighted by each launch's duration.
struct NcuAggregate {
  int launches = 0;
  double duration_ns = 0;
  double dram_bytes_read = 0;
  double dram_bytes_write = 0;
  std::optional<double> dram_throughput_pct;
  std::optional<double> sm_throughput_pct;
  std::optional<double> achieved_occupancy_pct;
  std::optional<double> l2_hit_rate_pct;
  std::optional<double> tensor_pipe_pct;  ///< of the cycles SMs were active
  int max_registers_per_thread = 0;
  /// Per stall reason ("long_scoreboard", ...), cycles per issued instruction.
  std::map<std::string, double> stalls;
};

struct NcuProfile {
  std::vector<NcuKernel> kernels;
  std::map<std::string, std::string> units;  ///< per metric, as ncu printed them
  NcuAggregate aggregate;
};

/// A profile, or why there is none.
struct NcuResult {
  std::optional<NcuProfile> profile;
  std::string unavailable;  ///< non-empty exactly when there is no profile
};

/// Reads ncu's combined stdout and stderr. Lines before the header (the program's own output,
/// "==PROF==" progress) are skipped; the header row is the first that starts with "\"ID\"", the
/// next row holds the units, each further row one launch. No profile when ncu was not found
/// (exit code 127 or a shell's "not found"), when the counters were refused (ERR_NVGPUCTRPERM),
/// or when no table was printed.
NcuResult parse_ncu_output(std::string_view output, int exit_code);

/// A red flag when the profiled launches moved (DRAM read + write) under half of what `calls`
/// calls of the problem must move: with ncu flushing caches before each launch, a correct
/// kernel cannot read less than its inputs. nullopt when the bytes are plausible.
std::optional<std::string> dram_bytes_red_flag(const NcuAggregate& aggregate,
                                               double required_bytes_per_call, int calls = 1);

}  // namespace kernelarc
