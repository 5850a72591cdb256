#include "diagnosis/ncu_runner.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/process.h"
#include "backend/worker/worker.h"
#include "backend/worker/worker_protocol.h"
#include "backend/worker/worker_sandbox.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/expr.h"
#include "core/paths.h"
#include "diagnosis/ncu_profile.h"
#include "diagnosis/ncu_source.h"
#include "eval/arena_layout.h"
#include "eval/solution_build.h"
#include "eval/solution_variants.h"
#include "eval/speed_of_light.h"
#include "eval/workload_run.h"
#include "oracle/subprocess.h"

namespace kernelarc {
namespace {

constexpr std::string_view kDefaultNcu = "/usr/local/cuda/bin/ncu";
constexpr std::chrono::seconds kVersionTimeout{20};

bool is_executable_file(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && access(path.c_str(), X_OK) == 0;
}

int exit_code_of(const CommandResult& result) {
  return result.status.signaled ? 128 + result.status.signal : result.status.exit_code;
}

std::optional<std::string> ncu_version(const std::filesystem::path& ncu,
                                       const std::vector<std::string>& environment) {
  const CommandResult result =
      run_command({ncu.string(), "--version"}, kVersionTimeout, {}, environment);
  if (result.timed_out || exit_code_of(result) != 0) return std::nullopt;
  std::string last;
  std::string_view text = result.output;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    if (text.substr(0, end).find_first_not_of(" \t\r") != std::string_view::npos)
      last = std::string(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return last.empty() ? std::nullopt : std::optional(last);
}

OrderedJson aggregate_json(const NcuAggregate& aggregate) {
  return {{"launches", aggregate.launches},
          {"duration_ns", aggregate.duration_ns},
          {"dram_bytes_read", aggregate.dram_bytes_read},
          {"dram_bytes_write", aggregate.dram_bytes_write},
          {"dram_throughput_pct", optional_number(aggregate.dram_throughput_pct)},
          {"sm_throughput_pct", optional_number(aggregate.sm_throughput_pct)},
          {"achieved_occupancy_pct", optional_number(aggregate.achieved_occupancy_pct)},
          {"l2_hit_rate_pct", optional_number(aggregate.l2_hit_rate_pct)},
          {"tensor_pipe_pct", optional_number(aggregate.tensor_pipe_pct)},
          {"max_registers_per_thread", aggregate.max_registers_per_thread},
          {"stalls", aggregate.stalls}};
}

OrderedJson kernel_json(const NcuKernel& kernel) {
  OrderedJson metrics = OrderedJson::object();
  for (const auto& [name, value] : kernel.metrics) metrics[name] = optional_number(value);
  return {{"id", kernel.id},
          {"name", kernel.name},
          {"block_size", kernel.block_size},
          {"grid_size", kernel.grid_size},
          {"metrics", std::move(metrics)}};
}

/// A private directory for the profiled process's files: the one it may write.
std::filesystem::path make_scratch_directory() {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/kernelarc-profile-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    throw InternalError("cannot create a directory for the profiled process (" + pattern +
                        "): " + std::strerror(errno));
  }
  return pattern;
}

OrderedJson unavailable(std::string why) {
  return {{"unavailable", std::move(why)}};
}

}  // namespace

NcuLocation find_ncu(const std::string& requested) {
  NcuLocation location;
  auto try_path = [&](const std::filesystem::path& path, const std::string& how) {
    location.looked_in.push_back(how);
    if (is_executable_file(path)) location.path = std::filesystem::absolute(path);
    return location.path.has_value();
  };
  if (!requested.empty()) {
    const auto found = find_executable(requested);
    try_path(found.value_or(requested), "--ncu " + requested);
    return location;
  }
  if (const char* variable = std::getenv("KERNELARC_NCU"); variable && *variable) {
    const auto found = find_executable(variable);
    if (try_path(found.value_or(variable), std::string("KERNELARC_NCU=") + variable))
      return location;
  }
  location.looked_in.emplace_back("ncu on PATH");
  if (const auto on_path = find_executable("ncu"); on_path && is_executable_file(*on_path)) {
    location.path = *on_path;
    return location;
  }
  try_path(std::string(kDefaultNcu), std::string(kDefaultNcu));
  return location;
}

namespace {

/// A second ncu run over the same target for the source page: where its stalls concentrate.
OrderedJson source_record(const std::filesystem::path& ncu, const std::vector<std::string>& target,
                          const std::vector<std::string>& environment,
                          std::chrono::seconds timeout) {
  const std::vector<std::string> argv = ncu_source_command(
      ncu, target.front(), std::vector<std::string>(target.begin() + 1, target.end()));
  OrderedJson record = {{"command", argv}};
  const CommandResult result = run_command(argv, timeout, {}, environment);
  if (result.timed_out) {
    record["unavailable"] =
        fmt::format("ncu's source page did not finish within {} s", timeout.count());
    return record;
  }
  const NcuSourceResult parsed = parse_ncu_source(result.output, exit_code_of(result));
  if (!parsed.profile) {
    record["unavailable"] = parsed.unavailable;
    return record;
  }
  const NcuSourceProfile& profile = *parsed.profile;
  record["kernel"] = profile.kernel;
  record["instructions"] = profile.instructions;
  record["samples"] = profile.samples;
  record["top"] = OrderedJson::array();
  for (const NcuHotspot& row : profile.top)
    record["top"].push_back({{"index", row.index},
                             {"instruction", row.instruction},
                             {"samples", row.samples},
                             {"share", row.share}});
  record["opcodes"] = OrderedJson::array();
  for (const auto& [name, share] : profile.opcodes)
    record["opcodes"].push_back({{"opcode", name}, {"share", share}});
  record["text"] = hotspots_text(profile);
  return record;
}

}  // namespace

OrderedJson profile_command(const ProfileOptions& options, const std::vector<std::string>& target,
                            double required_bytes_per_call,
                            const std::filesystem::path& temp_directory) {
  const NcuLocation location = find_ncu(options.ncu);
  if (!location.path) {
    return unavailable(
        fmt::format("Nsight Compute not found (looked in {}); install it with "
                    "the CUDA toolkit, or name it with --ncu or KERNELARC_NCU",
                    fmt::join(location.looked_in, ", ")));
  }
  std::vector<std::string> environment = environment_without_secrets();
  if (!temp_directory.empty()) {
    std::erase_if(environment,
                  [](const std::string& entry) { return entry.starts_with("TMPDIR="); });
    environment.push_back("TMPDIR=" + temp_directory.string());
    environment.push_back("HOME=" + temp_directory.string());  // ncu keeps its settings there
  }
  const std::vector<std::string> argv = ncu_command(
      *location.path, target.front(), std::vector<std::string>(target.begin() + 1, target.end()));
  OrderedJson record = {{"command", argv}};
  if (const auto version = ncu_version(*location.path, environment))
    record["ncu_version"] = *version;
  const CommandResult result = run_command(argv, options.timeout, {}, environment);
  if (result.timed_out) {
    record["unavailable"] = fmt::format(
        "ncu did not finish within {} s and was killed (it replays every kernel once per "
        "metric group); allow it more with --profile-timeout",
        options.timeout.count());
    return record;
  }
  NcuResult parsed = parse_ncu_output(result.output, exit_code_of(result));
  if (!parsed.profile) {
    record["unavailable"] = parsed.unavailable;
    return record;
  }
  const NcuProfile& profile = *parsed.profile;
  record["calls"] = options.calls;
  record["required_bytes_per_call"] = required_bytes_per_call;
  record["aggregate"] = aggregate_json(profile.aggregate);
  record["kernels"] = OrderedJson::array();
  for (const NcuKernel& kernel : profile.kernels) record["kernels"].push_back(kernel_json(kernel));
  if (const auto flag =
          dram_bytes_red_flag(profile.aggregate, required_bytes_per_call, options.calls)) {
    record["red_flag"] = *flag;
  }
  if (options.source_hotspots) {
    record["source"] = source_record(*location.path, target, environment, options.timeout);
  }
  return record;
}

OrderedJson profile_solution(const Problem& problem, const Workload& workload,
                             const Solution& solution, Guard& guard, Oracle& oracle,
                             const ProfileOptions& options) {
  const Definition& definition = problem.definition;
  const GuardOptions& settings = guard.options();
  // Built by the guard's settings for the GPU its worker found, so that the build cache serves
  // the guard's binary.
  guard.prepare_builds();
  const Solution runnable = solution_for_workload(solution, definition, workload);
  const BuildResult build = build_solution(runnable, definition, settings, guard.device_arch());
  if (!build.ok) {
    OrderedJson record = unavailable("the solution did not build: " + build.log);
    record["workload"] = workload.uuid;
    return record;
  }
  // The guard's shape, request and trial-0 inputs (workload_run.h), so that the profiled calls
  // are made as the timed ones are; profile-run stages, runs and collects each of them as the
  // guard does (backend/worker/staged_call.h).
  const CallShape shape = call_shape(definition, workload, runnable);
  const ArenaLayout& layout = shape.layout;
  ExecuteRequest request = call_request(layout, shape.workspace_bytes, 0);
  // warmup + iterations is the number of calls profile-run makes; each Run is timed, which with
  // no CUPTI costs two CUDA events that ncu ignores.
  request.warmup = std::max(options.calls, 1) - 1;
  request.iterations = 1;
  request.flush_cache = false;  // ncu flushes the caches before every kernel it profiles
  request.copy_back = false;

  const std::filesystem::path scratch = make_scratch_directory();
  OrderedJson record;
  try {
    std::vector<std::byte> arena(layout.bytes);
    write_oracle_inputs(arena, layout, problem, workload, oracle, 0);
    write_file_atomically(
        scratch / "arena",
        std::string_view(reinterpret_cast<const char*>(arena.data()), arena.size()));
    write_file_atomically(scratch / "request.json", request_to_json(request).dump());
    const auto workspace = std::filesystem::absolute(settings.workspace);
    const std::vector<std::string> target{
        (options.executable.empty() ? self_executable() : options.executable).string(),
        "profile-run",
        "--device",
        settings.device,
        "--library",
        build.library.string(),
        "--symbol",
        build.symbol,
        "--request",
        (scratch / "request.json").string(),
        "--arena",
        (scratch / "arena").string(),
        "--log",
        (scratch / "log").string(),
        "--protect",
        workspace.string(),
        "--readable",
        (workspace / "build").string(),
        "--scratch",
        scratch.string()};
    record = profile_command(
        options, target, problem_bytes(definition, resolve_axes(definition, workload)), scratch);
    if (record.contains("unavailable") && record.contains("command")) {
      const std::string log = file_tail(scratch / "log");
      if (!log.empty())
        record["unavailable"] =
            record["unavailable"].get<std::string>() + "\nprofiled process:\n" + log;
    }
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
    throw;
  }
  std::error_code ignored;
  std::filesystem::remove_all(scratch, ignored);
  record["workload"] = workload.uuid;
  return record;
}

void attach_profile(Trace& trace, const OrderedJson& record) {
  if (!trace.extra.is_object()) trace.extra = OrderedJson::object();
  trace.extra["profile"] = record;
  if (!record.contains("aggregate") || !trace.extra.contains("diagnosis")) return;
  const OrderedJson& aggregate = record["aggregate"];
  auto fraction = [&](const char* key) {
    const OrderedJson& pct = aggregate[key];
    return pct.is_number() ? OrderedJson(pct.get<double>() / 100) : OrderedJson();
  };
  const double bytes =
      aggregate.value("dram_bytes_read", 0.0) + aggregate.value("dram_bytes_write", 0.0);
  trace.extra["diagnosis"]["profiled"] = {
      {"source", "Nsight Compute"},
      {"achieved_occupancy", fraction("achieved_occupancy_pct")},
      {"dram_throughput", fraction("dram_throughput_pct")},
      {"sm_throughput", fraction("sm_throughput_pct")},
      {"dram_bytes_per_call", bytes / std::max(record.value("calls", 1), 1)}};
}

std::string profile_text(const OrderedJson& record) {
  if (record.contains("unavailable")) {
    return "no profile: " + record["unavailable"].get<std::string>() +
           "\n(the analytic diagnosis above stands)";
  }
  const OrderedJson& aggregate = record["aggregate"];
  const int calls = std::max(record.value("calls", 1), 1);
  auto pct = [&](const char* key) {
    const OrderedJson& value = aggregate[key];
    return value.is_number() ? fmt::format("{:.1f}%", value.get<double>()) : std::string("-");
  };
  std::string stall = "-";
  double worst = 0;
  for (const auto& [reason, cycles] : aggregate["stalls"].items()) {
    if (cycles.get<double>() > worst) {
      worst = cycles.get<double>();
      stall = fmt::format("{} ({:.2f} cycles/instruction)", reason, worst);
    }
  }
  const double bytes =
      aggregate.value("dram_bytes_read", 0.0) + aggregate.value("dram_bytes_write", 0.0);
  std::string text = fmt::format(
      "Nsight Compute{}: {} launches over {} calls; DRAM {:.4g} MB/call (the problem must move "
      "{:.4g} MB), DRAM throughput {}, SM throughput {}, tensor pipe {}, achieved occupancy {}, L2 "
      "hit rate {}, top stall {}",
      record.contains("ncu_version") ? " (" + record["ncu_version"].get<std::string>() + ")" : "",
      aggregate.value("launches", 0), calls, bytes / calls * 1e-6,
      record.value("required_bytes_per_call", 0.0) * 1e-6, pct("dram_throughput_pct"),
      pct("sm_throughput_pct"), pct("tensor_pipe_pct"), pct("achieved_occupancy_pct"),
      pct("l2_hit_rate_pct"), stall);
  if (record.contains("red_flag")) text += "\nRED FLAG: " + record["red_flag"].get<std::string>();
  if (record.contains("source")) {
    const OrderedJson& source = record["source"];
    text += "\n" + (source.contains("text") ? source["text"].get<std::string>()
                                            : "no source page: " + source.value("unavailable", ""));
  }
  return text;
}

}  // namespace kernelarc
