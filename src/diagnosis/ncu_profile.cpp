#include "diagnosis/ncu_profile.h"

#include <algorithm>

#include <fmt/format.h>

#include "diagnosis/ncu_csv.h"

namespace kernelarc {

namespace {

constexpr std::string_view kStallPrefix = "smsp__average_warps_issue_stalled_";
constexpr std::string_view kStallSuffix = "_per_issue_active.ratio";
constexpr std::string_view kDuration = "gpu__time_duration.sum";
/// Cycles the tensor pipe (mma.sync and wgmma alike) was busy: what bounds a compute-bound kernel.
constexpr std::string_view kTensorPipe =
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
/// Below this fraction of the problem's bytes, DRAM traffic cannot come from a correct kernel.
constexpr double kTooFewBytes = 0.5;

// ncu's metric names are "<unit>__<counter>..."; the identity columns ("ID", "Kernel Name",
// "Block Size", ...) never contain "__".
bool is_metric_column(std::string_view name) {
  return name.find("__") != std::string_view::npos;
}

std::string last_error_line(const std::vector<std::string>& lines) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->starts_with("==ERROR==")) return *it;
  }
  return {};
}

std::string unavailable_reason(std::string_view output, int exit_code,
                               const std::vector<std::string>& lines) {
  if (output.find("ERR_NVGPUCTRPERM") != std::string_view::npos) {
    return "Nsight Compute may not read the GPU performance counters (ERR_NVGPUCTRPERM): the "
           "user does not have permission; run it as root or load the NVIDIA driver with "
           "NVreg_RestrictProfilingToAdminUsers=0";
  }
  if (exit_code == 127 || output.find("ncu: not found") != std::string_view::npos ||
      output.find("ncu: command not found") != std::string_view::npos) {
    return "Nsight Compute (ncu) was not found; install it with the CUDA toolkit or put it on "
           "PATH";
  }
  if (output.find("No kernels were profiled") != std::string_view::npos) {
    return "ncu profiled no kernel: the program launched none, or exited first";
  }
  const std::string error = last_error_line(lines);
  return fmt::format("ncu printed no metrics table (exit code {}){}", exit_code,
                     error.empty() ? "" : ": " + error);
}

struct Column {
  std::size_t index;
  std::string metric;
  double factor;
};

NcuAggregate aggregate_of(const std::vector<NcuKernel>& kernels) {
  NcuAggregate total;
  struct Weighted {
    double sum = 0;
    double weight = 0;
  };
  std::map<std::string, Weighted, std::less<>> weighted;
  for (const NcuKernel& kernel : kernels) {
    ++total.launches;
    const double duration = kernel.metric(kDuration).value_or(0);
    total.duration_ns += duration;
    total.dram_bytes_read += kernel.metric("dram__bytes_read.sum").value_or(0);
    total.dram_bytes_write += kernel.metric("dram__bytes_write.sum").value_or(0);
    total.max_registers_per_thread =
        std::max(total.max_registers_per_thread,
                 static_cast<int>(kernel.metric("launch__registers_per_thread").value_or(0)));
    for (const auto& [metric, value] : kernel.metrics) {
      if (!value || duration <= 0) continue;
      weighted[metric].sum += *value * duration;
      weighted[metric].weight += duration;
    }
  }
  auto mean = [&](std::string_view metric) -> std::optional<double> {
    const auto it = weighted.find(metric);
    if (it == weighted.end() || it->second.weight <= 0) return std::nullopt;
    return it->second.sum / it->second.weight;
  };
  total.dram_throughput_pct = mean("dram__throughput.avg.pct_of_peak_sustained_elapsed");
  total.sm_throughput_pct = mean("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  total.achieved_occupancy_pct = mean("sm__warps_active.avg.pct_of_peak_sustained_active");
  total.l2_hit_rate_pct = mean("lts__t_sector_hit_rate.pct");
  total.tensor_pipe_pct = mean(kTensorPipe);
  for (const auto& [metric, sums] : weighted) {
    if (!metric.starts_with(kStallPrefix) || !metric.ends_with(kStallSuffix)) continue;
    const std::string reason = metric.substr(
        kStallPrefix.size(), metric.size() - kStallPrefix.size() - kStallSuffix.size());
    total.stalls[reason] = *mean(metric);
  }
  return total;
}

}  // namespace

const std::vector<std::string>& ncu_stall_metrics() {
  static const std::vector<std::string> metrics = [] {
    std::vector<std::string> names;
    for (const char* reason :
         {"long_scoreboard", "short_scoreboard", "lg_throttle", "mio_throttle", "barrier", "membar",
          "math_pipe_throttle", "wait", "not_selected", "no_instruction", "imc_miss", "drain"}) {
      names.push_back(fmt::format("{}{}{}", kStallPrefix, reason, kStallSuffix));
    }
    return names;
  }();
  return metrics;
}

const std::vector<std::string>& ncu_metrics() {
  static const std::vector<std::string> metrics = [] {
    std::vector<std::string> names{"dram__throughput.avg.pct_of_peak_sustained_elapsed",
                                   "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                   "sm__warps_active.avg.pct_of_peak_sustained_active",
                                   std::string(kTensorPipe),
                                   "lts__t_sector_hit_rate.pct",
                                   "dram__bytes_read.sum",
                                   "dram__bytes_write.sum",
                                   std::string(kDuration),
                                   "launch__registers_per_thread"};
    const auto& stalls = ncu_stall_metrics();
    names.insert(names.end(), stalls.begin(), stalls.end());
    return names;
  }();
  return metrics;
}

std::vector<std::string> ncu_command(const std::filesystem::path& ncu,
                                     const std::filesystem::path& executable,
                                     const std::vector<std::string>& args) {
  std::string metric_list;
  for (const std::string& metric : ncu_metrics()) {
    metric_list += (metric_list.empty() ? "" : ",") + metric;
  }
  return ncu_csv_command(ncu, {"--page", "raw", "--print-units", "base"},
                         {"--metrics", metric_list}, executable, args);
}

std::vector<std::string> ncu_csv_command(const std::filesystem::path& ncu,
                                         const std::vector<std::string>& page,
                                         const std::vector<std::string>& sections,
                                         const std::filesystem::path& executable,
                                         const std::vector<std::string>& args) {
  std::vector<std::string> argv{ncu.string(), "--csv"};
  argv.insert(argv.end(), page.begin(), page.end());
  argv.insert(argv.end(), {"--clock-control", "none"});
  argv.insert(argv.end(), sections.begin(), sections.end());
  argv.insert(argv.end(), {"--target-processes", "all", executable.string()});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::optional<double> NcuKernel::metric(std::string_view name) const {
  const auto it = metrics.find(name);
  return it == metrics.end() ? std::nullopt : it->second;
}

NcuResult parse_ncu_output(std::string_view output, int exit_code) {
  const std::vector<std::string> lines = split_lines(output);
  const auto header_it = std::find_if(lines.begin(), lines.end(),
                                      [](const std::string& l) { return l.starts_with("\"ID\""); });
  if (output.find("ERR_NVGPUCTRPERM") != std::string_view::npos || header_it == lines.end() ||
      header_it + 1 == lines.end()) {
    return {std::nullopt, unavailable_reason(output, exit_code, lines)};
  }
  const auto header = split_csv_line(*header_it);
  const auto units = split_csv_line(*(header_it + 1));
  if (!header || !units || units->size() != header->size()) {
    return {std::nullopt, "ncu's table has no units row matching its header"};
  }
  auto index_of = [&](std::string_view name) -> std::optional<std::size_t> {
    const auto it = std::find(header->begin(), header->end(), name);
    if (it == header->end()) return std::nullopt;
    return static_cast<std::size_t>(it - header->begin());
  };
  NcuProfile profile;
  std::vector<Column> columns;
  for (std::size_t i = 0; i < header->size(); ++i) {
    if (!is_metric_column((*header)[i])) continue;
    profile.units[(*header)[i]] = (*units)[i];
    columns.push_back({i, (*header)[i], ncu_base_unit((*units)[i]).first});
  }
  const auto id_column = index_of("ID");
  const auto name_column = index_of("Kernel Name");
  const auto block_column = index_of("Block Size");
  const auto grid_column = index_of("Grid Size");
  auto field = [](const std::vector<std::string>& row, std::optional<std::size_t> column) {
    return column ? row[*column] : std::string();
  };
  for (auto it = header_it + 2; it != lines.end(); ++it) {
    if (!it->starts_with("\"")) continue;
    const auto row = split_csv_line(*it);
    if (!row || row->size() != header->size()) continue;
    NcuKernel kernel;
    kernel.id = static_cast<int>(parse_ncu_number(field(*row, id_column)).value_or(-1));
    kernel.name = field(*row, name_column);
    kernel.block_size = field(*row, block_column);
    kernel.grid_size = field(*row, grid_column);
    for (const Column& column : columns) {
      const auto value = parse_ncu_number((*row)[column.index]);
      kernel.metrics[column.metric] =
          value ? std::optional<double>(*value * column.factor) : std::nullopt;
    }
    profile.kernels.push_back(std::move(kernel));
  }
  if (profile.kernels.empty()) {
    return {std::nullopt, "ncu's table holds no kernel launch"};
  }
  profile.aggregate = aggregate_of(profile.kernels);
  return {std::move(profile), {}};
}

std::optional<std::string> dram_bytes_red_flag(const NcuAggregate& aggregate,
                                               double required_bytes_per_call, int calls) {
  const double required = required_bytes_per_call * std::max(calls, 1);
  const double moved = aggregate.dram_bytes_read + aggregate.dram_bytes_write;
  if (required <= 0 || moved >= kTooFewBytes * required) return std::nullopt;
  return fmt::format(
      "DRAM moved {:.4g} MB, {:.2f}x of the {:.4g} MB that {} call(s) of the problem must move: "
      "with caches flushed before each launch a correct kernel reads all its inputs, so it "
      "skips work or reuses data from an earlier call",
      moved * 1e-6, moved / required, required * 1e-6, std::max(calls, 1));
}

}  // namespace kernelarc
