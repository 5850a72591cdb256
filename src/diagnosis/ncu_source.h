// Nsight Compute's source page: per SASS instruction, how often warps were sampled stalled there
// ("Warp Stall Sampling (All Samples)"). Where the stalls of a kernel concentrate says which
// instruction a latency-bound kernel waits in (a barrier wait for a TMA stage, a wgmma wait, a
// global load), which the kernel-wide stall reasons of the metrics page cannot.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kernelarc {

/// `ncu --page source --print-source sass --csv` with the sections that sample warp stalls per
/// instruction, over every process `executable args...` starts.
std::vector<std::string> ncu_source_command(const std::filesystem::path& ncu,
                                            const std::filesystem::path& executable,
                                            const std::vector<std::string>& args);

struct NcuHotspot {
  std::size_t index = 0;  ///< the instruction's row in its kernel's listing, from 0
  std::string instruction;
  double samples = 0;
  double share = 0;  ///< of the kernel's samples
};

/// The kernel (of those in the output) with the most stall samples.
struct NcuSourceProfile {
  std::string kernel;  ///< its name where the output gives one
  std::size_t instructions = 0;
  double samples = 0;
  std::vector<NcuHotspot> top;                          ///< most samples first
  std::vector<std::pair<std::string, double>> opcodes;  ///< share by opcode, largest first
};

struct NcuSourceResult {
  std::optional<NcuSourceProfile> profile;
  std::string unavailable;  ///< why not, with the start of ncu's output when it had no table
};

/// Reads the source page's CSV: a table per kernel whose header names a "Source" column and a
/// "Warp Stall Sampling (All Samples)" one. Keeps the `top` instructions by samples.
NcuSourceResult parse_ncu_source(std::string_view output, int exit_code, std::size_t top = 12);

/// "stalls by instruction (kernel, N samples): 31% #412 SYNCS.PHASECHK...; by opcode: ...".
std::string hotspots_text(const NcuSourceProfile& profile);

}  // namespace kernelarc
