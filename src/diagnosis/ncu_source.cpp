#include "diagnosis/ncu_source.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "diagnosis/ncu_csv.h"
#include "diagnosis/ncu_profile.h"

namespace kernelarc {
namespace {

constexpr std::string_view kStallColumn = "Warp Stall Sampling (All Samples)";
constexpr std::size_t kQuotedLines = 12;

std::optional<std::size_t> column(const std::vector<std::string>& header, std::string_view name) {
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) return std::nullopt;
  return static_cast<std::size_t>(it - header.begin());
}

/// The opcode of a SASS line: "@!P0 BRA `(.L_x_3)" -> "BRA", "HGMMA.64x128x32.F32.E4M3..." ->
/// "HGMMA".
std::string opcode(std::string_view instruction) {
  std::size_t at = instruction.find_first_not_of(' ');
  if (at != std::string_view::npos && instruction[at] == '@') {
    at = instruction.find(' ', at);
    if (at != std::string_view::npos) at = instruction.find_first_not_of(' ', at);
  }
  if (at == std::string_view::npos) return "?";
  const std::size_t end = instruction.find_first_of(" .;", at);
  return std::string(instruction.substr(at, end == std::string_view::npos ? end : end - at));
}

struct Table {
  std::string kernel;
  std::vector<NcuHotspot> rows;
  double samples = 0;
};

}  // namespace

std::vector<std::string> ncu_source_command(const std::filesystem::path& ncu,
                                            const std::filesystem::path& executable,
                                            const std::vector<std::string>& args) {
  return ncu_csv_command(ncu, {"--page", "source", "--print-source", "sass"},
                         {"--section", "SourceCounters", "--section", "WarpStateStats"}, executable,
                         args);
}

NcuSourceResult parse_ncu_source(std::string_view output, int exit_code, std::size_t top) {
  const std::vector<std::string> lines = split_lines(output);
  std::vector<Table> tables;
  std::optional<std::size_t> source, stalls;
  std::size_t width = 0;
  std::string kernel;
  for (const std::string& line : lines) {
    const auto fields = split_csv_line(line);
    if (!fields || fields->empty()) continue;
    const auto source_at = column(*fields, "Source");
    const auto stalls_at = column(*fields, kStallColumn);
    if (source_at && stalls_at) {  // a kernel's table starts
      source = source_at, stalls = stalls_at, width = fields->size();
      tables.push_back({kernel, {}, 0});
      continue;
    }
    if (!source || fields->size() != width) {
      // A line outside a table may name the kernel the next table lists ("Kernel Name", ...).
      if (fields->size() >= 2 && (*fields)[0].find("Kernel") != std::string::npos)
        kernel = fields->back();
      continue;
    }
    const double samples = parse_ncu_number((*fields)[*stalls]).value_or(0.0);
    Table& table = tables.back();
    table.rows.push_back({table.rows.size(), (*fields)[*source], samples, 0});
    table.samples += samples;
  }
  const auto busiest = std::max_element(tables.begin(), tables.end(),
                                        [](auto& a, auto& b) { return a.samples < b.samples; });
  if (busiest == tables.end() || busiest->samples <= 0) {
    std::string quoted;
    for (std::size_t i = 0; i < std::min(lines.size(), kQuotedLines); ++i)
      quoted += "\n  " + lines[i];
    return {
        std::nullopt,
        fmt::format("ncu printed no source table with \"{}\" samples (exit code {}){}{}",
                    kStallColumn, exit_code, quoted.empty() ? "" : "; its output began:", quoted)};
  }
  NcuSourceProfile profile;
  profile.kernel = busiest->kernel;
  profile.instructions = busiest->rows.size();
  profile.samples = busiest->samples;
  std::map<std::string, double> by_opcode;
  for (NcuHotspot& row : busiest->rows) {
    row.share = row.samples / busiest->samples;
    by_opcode[opcode(row.instruction)] += row.share;
  }
  std::vector<NcuHotspot> rows = busiest->rows;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const NcuHotspot& a, const NcuHotspot& b) { return a.samples > b.samples; });
  rows.resize(std::min(rows.size(), top));
  profile.top = std::move(rows);
  profile.opcodes.assign(by_opcode.begin(), by_opcode.end());
  std::stable_sort(profile.opcodes.begin(), profile.opcodes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return {std::move(profile), ""};
}

std::string hotspots_text(const NcuSourceProfile& profile) {
  std::string text = fmt::format("stalls by instruction ({}{:.0f} samples over {} instructions):",
                                 profile.kernel.empty() ? "" : profile.kernel + ", ",
                                 profile.samples, profile.instructions);
  for (std::size_t i = 0; i < std::min<std::size_t>(profile.top.size(), 6); ++i) {
    const NcuHotspot& row = profile.top[i];
    text += fmt::format("\n  {:5.1f}% #{} {}", 100 * row.share, row.index, row.instruction);
  }
  text += "\n  by opcode:";
  for (std::size_t i = 0; i < std::min<std::size_t>(profile.opcodes.size(), 6); ++i) {
    text += fmt::format("{} {} {:.1f}%", i ? "," : "", profile.opcodes[i].first,
                        100 * profile.opcodes[i].second);
  }
  return text;
}

}  // namespace kernelarc
