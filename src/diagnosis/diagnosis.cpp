#include "diagnosis/diagnosis.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "backend/backend.h"
#include "diagnosis/diagnosis_hints.h"
#include "diagnosis/kernel_records.h"
#include "eval/speed_of_light.h"

namespace kernelarc {

std::string_view bottleneck_name(Bottleneck bottleneck) {
  switch (bottleneck) {
    case Bottleneck::Memory:
      return "memory";
    case Bottleneck::Compute:
      return "compute";
    case Bottleneck::Latency:
      return "latency";
    case Bottleneck::Launch:
      return "launch";
    case Bottleneck::Unknown:
      return "unknown";
  }
  return "unknown";
}

std::optional<Bottleneck> bottleneck_from_name(std::string_view name) {
  for (Bottleneck bottleneck : {Bottleneck::Memory, Bottleneck::Compute, Bottleneck::Latency,
                                Bottleneck::Launch, Bottleneck::Unknown}) {
    if (bottleneck_name(bottleneck) == name) return bottleneck;
  }
  return std::nullopt;
}

std::string_view knob_direction_name(KnobDirection direction) {
  switch (direction) {
    case KnobDirection::Raise:
      return "raise";
    case KnobDirection::Lower:
      return "lower";
    case KnobDirection::Set:
      return "set";
  }
  return "raise";
}

std::optional<KnobDirection> knob_direction_from_name(std::string_view name) {
  for (KnobDirection direction : {KnobDirection::Raise, KnobDirection::Lower, KnobDirection::Set}) {
    if (knob_direction_name(direction) == name) return direction;
  }
  return std::nullopt;
}

std::string suggestion_text(const KnobSuggestion& suggestion) {
  const std::string move =
      suggestion.direction == KnobDirection::Set && suggestion.value
          ? fmt::format("set {}={}", suggestion.knob, knob_value_text(*suggestion.value))
          : fmt::format("{} {}", knob_direction_name(suggestion.direction), suggestion.knob);
  return fmt::format("{} ({})", move, suggestion.reason);
}

namespace {

bool runs_on_gpu(const Trace& trace, const std::optional<Calibration>& calibration,
                 const std::vector<KernelRecord>& records) {
  if (calibration) return backend_for(calibration->device).kind() != DeviceKind::Cpu;
  return trace.clock == "cupti" || trace.clock == "cuda_events" || !records.empty();
}

bool busy_recorded(const std::vector<KernelRecord>& records) {
  return std::all_of(records.begin(), records.end(),
                     [](const KernelRecord& r) { return r.busy_us.has_value(); });
}

// Each record's share of the kernels' GPU time; empty when the device did not record it.
std::vector<double> time_shares(const std::vector<KernelRecord>& records) {
  if (records.empty() || !busy_recorded(records)) return {};
  double total_us = 0;
  for (const KernelRecord& record : records) total_us += *record.busy_us;
  if (total_us <= 0) return {};
  std::vector<double> shares;
  for (const KernelRecord& record : records) shares.push_back(*record.busy_us / total_us);
  return shares;
}

void add_kernel_facts(Diagnosis& diagnosis, const std::vector<KernelRecord>& records) {
  const std::vector<double> shares = time_shares(records);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const KernelRecord& record = records[i];
    diagnosis.kernels_per_call += record.launches;
    diagnosis.max_blocks = std::max(diagnosis.max_blocks, record.blocks);
    diagnosis.max_local_bytes_per_thread =
        std::max(diagnosis.max_local_bytes_per_thread, record.local_bytes_per_thread);
    if (!record.occupancy) continue;
    if (!shares.empty() && shares[i] < kMaterialKernelShare) continue;
    if (diagnosis.lowest_occupancy && diagnosis.lowest_occupancy->fraction <= *record.occupancy) {
      continue;
    }
    diagnosis.lowest_occupancy =
        OccupancyLimit{readable_kernel_name(record.name),
                       *record.occupancy,
                       record.occupancy_limited_by,
                       record.registers_per_thread,
                       record.threads_per_block,
                       record.shared_bytes_per_block,
                       shares.empty() ? std::nullopt : std::optional<double>(shares[i])};
  }
}

// Measured when every kernel's busy time is recorded: the rest of the span is gaps. Otherwise
// estimated from the count: CUPTI's span starts at the first kernel, so only the launches
// after it add gaps; CUDA events also enclose the first launch.
void add_launch_share(Diagnosis& diagnosis, const Trace& trace,
                      const std::vector<KernelRecord>& records) {
  if (!diagnosis.gpu || records.empty() || !diagnosis.median_us || *diagnosis.median_us <= 0) {
    return;
  }
  const double median_us = *diagnosis.median_us;
  // Copies and memsets inside the call have no kernel record: their time counts with the gaps.
  if (busy_recorded(records)) {
    double busy_us = 0;
    for (const KernelRecord& record : records) busy_us += *record.busy_us;
    diagnosis.launch_share = std::clamp(1.0 - busy_us / median_us, 0.0, 1.0);
    return;
  }
  const int launches = diagnosis.kernels_per_call - (trace.clock == "cupti" ? 1 : 0);
  diagnosis.launch_share = std::clamp(launches * kLaunchLatencyUs / median_us, 0.0, 1.0);
  diagnosis.launch_share_estimated = true;
}

void add_rates(Diagnosis& diagnosis, const Definition& def, const Calibration& calibration) {
  const double seconds = *diagnosis.median_us * 1e-6;
  diagnosis.achieved_gbs = diagnosis.bytes / seconds * 1e-9;
  double sol_s = 0;
  if (calibration.copy_bandwidth_gbs > 0) {
    diagnosis.bandwidth_fraction = *diagnosis.achieved_gbs / calibration.copy_bandwidth_gbs;
    sol_s = diagnosis.bytes / (calibration.copy_bandwidth_gbs * 1e9);
  }
  if (diagnosis.flops <= 0) {
    diagnosis.sol_us = sol_s * 1e6;
    return;
  }
  diagnosis.achieved_tflops = diagnosis.flops / seconds * 1e-12;
  if (const auto peak = compute_peak(def, calibration)) {
    diagnosis.compute_fraction = diagnosis.flops / seconds / peak->flops_per_second;
    diagnosis.compute_peak = peak->what;
    if (peak->bounds_sol) sol_s = std::max(sol_s, diagnosis.flops / peak->flops_per_second);
  }
  diagnosis.sol_us = sol_s * 1e6;
}

std::string fraction_text(const std::optional<double>& fraction) {
  return fraction ? fmt::format("{:.2f}", *fraction) : std::string("unknown");
}

std::string rates_text(const Diagnosis& d) {
  std::string text =
      fmt::format("{:.4g} MB in {:.4g} us: {:.4g} GB/s, {} of copy bandwidth", d.bytes * 1e-6,
                  *d.median_us, *d.achieved_gbs, fraction_text(d.bandwidth_fraction));
  if (d.compute_fraction) {
    text += fmt::format("; {:.4g} GFLOP at {:.4g} TFLOP/s, {} of the {} peak", d.flops * 1e-9,
                        *d.achieved_tflops, fraction_text(d.compute_fraction), d.compute_peak);
  }
  return text;
}

bool launch_bound(const Diagnosis& d) {
  if (!d.gpu) return false;
  return *d.median_us <= kLaunchLatencyUs + kLaunchSlackUs ||
         d.launch_share.value_or(0) >= kLaunchBoundShare;
}

std::string launch_reason(const Diagnosis& d) {
  if (*d.median_us <= kLaunchLatencyUs + kLaunchSlackUs) {
    return fmt::format(
        "median {:.3g} us is at most one launch (~{:.3g} us) plus {:.3g} us: fixed "
        "per-launch costs dominate ({})",
        *d.median_us, kLaunchLatencyUs, kLaunchSlackUs, rates_text(d));
  }
  return fmt::format(
      "launches and the gaps between them take {:.2f} of the {:.4g} us call ({} "
      "kernels{}); {}",
      *d.launch_share, *d.median_us, d.kernels_per_call,
      d.launch_share_estimated ? fmt::format(", ~{:.3g} us each", kLaunchLatencyUs)
                               : std::string(", measured"),
      rates_text(d));
}

// The latency class's cause and its numbers.
std::pair<std::string, std::string> latency_cause(const Diagnosis& d,
                                                  const std::optional<Calibration>& calibration,
                                                  const std::optional<KnobPoint>& knobs) {
  if (d.lowest_occupancy && d.lowest_occupancy->fraction < kLowOccupancy) {
    const OccupancyLimit& limit = *d.lowest_occupancy;
    const std::string share =
        limit.time_share ? fmt::format(" ({:.2f} of the kernels' GPU time)", *limit.time_share)
                         : std::string();
    return {"occupancy", fmt::format("theoretical occupancy {:.2f} in {}{}, limited by {}",
                                     limit.fraction, limit.kernel, share, limit.limited_by)};
  }
  if (d.gpu && calibration->sm_count > 0 && d.max_blocks > 0 &&
      d.max_blocks < calibration->sm_count) {
    return {"parallelism",
            fmt::format("only {} blocks for {} SMs", d.max_blocks, calibration->sm_count)};
  }
  const auto threads = int_knob(knobs, "THREADS");
  if (!d.gpu && threads && *threads >= 1 && *threads < calibration->cores) {
    return {"parallelism", fmt::format("THREADS={} of {} cores", *threads, calibration->cores)};
  }
  if (d.sol_us && *d.sol_us < kSmallWorkUs) {
    return {"small_work",
            fmt::format("the problem's own bound is only {:.3g} us, so fixed costs weigh heavily",
                        *d.sol_us)};
  }
  if (!d.gpu)
    return {"stalls",
            "every core has work and the problem is not small, so the cores wait on memory or on "
            "dependent instructions"};
  return {"stalls", "occupancy and parallelism are adequate, so latency is not hidden"};
}

void classify(Diagnosis& d, const Trace& trace, const std::optional<Calibration>& calibration,
              const std::optional<KnobPoint>& knobs) {
  if (!d.median_us) {
    d.reason = fmt::format("no timing: the evaluation ended with {}", status_name(trace.status));
    return;
  }
  if (!calibration || !d.bandwidth_fraction) {
    d.reason = fmt::format(
        "median {:.4g} us, but no calibration of this device gives a ceiling to compare the "
        "rates with (run `kernelarc calibrate`)",
        *d.median_us);
    return;
  }
  const double bandwidth = *d.bandwidth_fraction;
  const double compute = d.compute_fraction.value_or(0);
  if (bandwidth >= kSaturated && bandwidth >= compute) {
    d.bottleneck = Bottleneck::Memory;
    d.reason = rates_text(d);
  } else if (compute >= kSaturated) {
    d.bottleneck = Bottleneck::Compute;
    d.reason = rates_text(d);
  } else if (launch_bound(d)) {
    d.bottleneck = Bottleneck::Launch;
    d.reason = launch_reason(d);
  } else {
    d.bottleneck = Bottleneck::Latency;
    const auto [cause, numbers] = latency_cause(d, calibration, knobs);
    d.cause = cause;
    d.reason = fmt::format("neither throughput reaches {:.2f} ({}); {}", kSaturated, rates_text(d),
                           numbers);
  }
}

// The compiler's remarks on the build (trace.extra.build.notes: ptxas on wgmma) as hints: they
// explain a slow kernel that the rates alone cannot.
void add_compiler_notes(Diagnosis& d, const Trace& trace) {
  if (!trace.extra.is_object() || !trace.extra.contains("build")) return;
  const OrderedJson& build = trace.extra.at("build");
  if (!build.is_object() || !build.contains("notes") || !build.at("notes").is_array()) return;
  for (const OrderedJson& note : build.at("notes")) {
    if (!note.is_string()) continue;
    const std::string text = note.get<std::string>();
    if (text.find("C7520") != std::string::npos) {
      d.hints.push_back(
          "ptxas serialised every wgmma of the kernel (" + text +
          "): keep the wgmma code, and the barrier waits and branches around it, on paths ptxas "
          "can prove warp-uniform (branch on a warpgroup index broadcast with __shfl_sync; wait "
          "on barriers before wgmma.fence, not between the products)");
    } else {
      d.hints.push_back("ptxas: " + text);
    }
  }
}

}  // namespace

Diagnosis diagnose(const Definition& def, const AxisValues& axes, const Trace& trace,
                   const std::optional<Calibration>& calibration,
                   const std::optional<KnobPoint>& knobs) {
  const auto records = kernel_records(trace.extra, "trace of " + trace.solution);
  Diagnosis diagnosis;
  diagnosis.gpu = runs_on_gpu(trace, calibration, records);
  diagnosis.bytes = problem_bytes(def, axes);
  diagnosis.flops = problem_flops(def, axes);
  if (trace.latency_ms && trace.latency_ms->median > 0) {
    diagnosis.median_us = trace.latency_ms->median * 1e3;
  }
  add_kernel_facts(diagnosis, records);
  add_launch_share(diagnosis, trace, records);
  diagnosis.kernels = kernels_summary(records);
  // The measured gaps, where the span is the call's GPU time (CUDA events also enclose the
  // host's first launch).
  if (!diagnosis.kernels.empty() && trace.clock == "cupti" && diagnosis.launch_share &&
      !diagnosis.launch_share_estimated)
    diagnosis.kernels +=
        fmt::format("; idle between them {:.3g} us of {:.4g} us",
                    *diagnosis.launch_share * *diagnosis.median_us, *diagnosis.median_us);
  if (diagnosis.median_us && calibration) add_rates(diagnosis, def, *calibration);
  classify(diagnosis, trace, calibration, knobs);
  Advice advice = diagnosis_advice(diagnosis, def, calibration, knobs);
  diagnosis.hints = std::move(advice.hints);
  diagnosis.suggestions = std::move(advice.suggestions);
  add_compiler_notes(diagnosis, trace);
  return diagnosis;
}

void annotate_traces(std::vector<Trace>& traces, const Problem& problem, const Solution& solution,
                     const std::optional<Calibration>& calibration) {
  std::optional<KnobPoint> knobs;
  if (solution.ext.contains("knobs")) knobs = knob_point_from_json(solution.ext["knobs"]);
  for (Trace& trace : traces) {
    if (trace.status != EvalStatus::Passed || !trace.latency_ms) continue;
    const Workload* workload = find_workload(problem, trace.workload.value("uuid", std::string()));
    if (workload == nullptr) continue;
    trace.extra["diagnosis"] =
        diagnose(problem.definition, resolve_axes(problem.definition, *workload), trace,
                 calibration, knobs)
            .to_json();
  }
}

std::string diagnosis_text(const Diagnosis& diagnosis) {
  std::string text = diagnosis.bottleneck == Bottleneck::Unknown
                         ? std::string("bottleneck unknown")
                         : std::string(bottleneck_name(diagnosis.bottleneck)) + "-bound";
  if (!diagnosis.cause.empty()) text += " (" + diagnosis.cause + ")";
  text += ": " + diagnosis.reason;
  if (!diagnosis.kernels.empty()) text += "\n  kernels: " + diagnosis.kernels;
  for (const std::string& hint : diagnosis.hints) text += "\n  hint: " + hint;
  for (const KnobSuggestion& suggestion : diagnosis.suggestions)
    text += "\n  suggestion: " + suggestion_text(suggestion);
  return text;
}

std::optional<std::string> trace_diagnosis_text(const Trace& trace) {
  if (!trace.extra.is_object() || !trace.extra.contains("diagnosis")) return std::nullopt;
  return diagnosis_text(Diagnosis::from_json(trace.extra.at("diagnosis")));
}

}  // namespace kernelarc
