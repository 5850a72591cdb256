// Why a candidate is slow: the achieved bandwidth and arithmetic rate as fractions of the
// device's calibrated ceilings, the resources and occupancy of what it launched, the share of
// the call lost to launches, a bottleneck class chosen by the rules below, the numbers behind
// that choice as a sentence, and hints drawn from those numbers only.
//
// Classification, first rule that applies (thresholds are the named constants below):
//   unknown  no timing, or no calibration of the device (nothing to compare the rates with);
//   memory   bandwidth fraction >= kSaturated (0.6) and at least the compute fraction;
//   compute  compute fraction >= kSaturated and above the bandwidth fraction;
//   launch   (GPU) median within kLaunchSlackUs of one launch latency (kLaunchLatencyUs), or
//            launches take at least kLaunchBoundShare of the call;
//   latency  neither throughput is saturated (Nsight Compute's rule for a latency-bound kernel);
//            the cause, first that applies: "occupancy" (lowest theoretical occupancy below
//            kLowOccupancy, among the kernels that take at least kMaterialKernelShare of the
//            kernels' GPU time where the device recorded it), "parallelism" (GPU: fewer blocks than
//            SMs; CPU: a THREADS knob below the cores), "small_work" (the problem's own bound is
//            under kSmallWorkUs), else "stalls" (enough warps and work, yet latency is not hidden).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/calibrate.h"
#include "core/problem.h"
#include "eval/trace.h"
#include "synth/knob_point.h"

namespace kernelarc {

enum class Bottleneck { Memory, Compute, Latency, Launch, Unknown };

/// "memory", "compute", "latency", "launch", "unknown": the knowledge base's keys.
std::string_view bottleneck_name(Bottleneck bottleneck);
std::optional<Bottleneck> bottleneck_from_name(std::string_view name);

/// A fraction of a ceiling counts as saturated from here (Nsight Compute uses 60% likewise).
inline constexpr double kSaturated = 0.6;
/// Above this fraction of copy bandwidth, only moving fewer bytes helps.
inline constexpr double kNearCeiling = 0.85;
/// One kernel launch's fixed cost on current NVIDIA GPUs (launch, ramp-up, drain), in us.
inline constexpr double kLaunchLatencyUs = 2.5;
/// A median within this of one launch latency is dominated by it.
inline constexpr double kLaunchSlackUs = 3.0;
inline constexpr double kLaunchBoundShare = 0.5;
/// A launch share worth a fusion hint.
inline constexpr double kLaunchNoticeShare = 0.2;
/// A measured gap between a call's kernels this many launch latencies long is host work between
/// the launches (a library call's setup, a synchronisation), which fusing would not remove.
inline constexpr double kHostGapLaunches = 4.0;
inline constexpr double kLowOccupancy = 0.5;
/// A kernel with less of the call's kernel time than this is not the one to blame: a router
/// or a combine step beside a grouped GEMM may have poor occupancy and cost nothing.
inline constexpr double kMaterialKernelShare = 0.2;
/// Below this speed-of-light time the work is too small for throughput to dominate.
inline constexpr double kSmallWorkUs = 5.0;
/// The widest vector load a thread can issue (LDG.128).
inline constexpr int kWidestLoadBytes = 16;

/// The kernel with the lowest theoretical occupancy (among those that take a material share of
/// the call's kernel time, where it was recorded), and its resources.
struct OccupancyLimit {
  std::string kernel;
  double fraction = 0;
  std::string limited_by;  ///< "warps", "registers", "shared memory", "blocks"
  int registers_per_thread = 0;
  int threads_per_block = 0;
  int64_t shared_bytes_per_block = 0;
  /// Its share of the kernels' GPU time in the call; absent when the device did not record it.
  std::optional<double> time_share;

  bool operator==(const OccupancyLimit&) const = default;
};

/// Which way a suggestion moves its knob.
enum class KnobDirection { Raise, Lower, Set };

/// "raise", "lower", "set".
std::string_view knob_direction_name(KnobDirection direction);
std::optional<KnobDirection> knob_direction_from_name(std::string_view name);

/// A knob move that a hint's numbers back, for a candidate whose point has that knob: one step
/// up or down the knob's domain, or straight to `value`. Knobs are recognised by the names the
/// templates share (VEC, BLOCK_THREADS, ROWS_PER_BLOCK, MAX_VECS_PER_THREAD, STAGES, BM, BN,
/// THREADS), so the rules know no template.
struct KnobSuggestion {
  std::string knob;
  KnobDirection direction = KnobDirection::Raise;
  std::optional<KnobValue> value;  ///< exactly for Set
  std::string reason;              ///< the numbers of the hint it comes from

  bool operator==(const KnobSuggestion&) const = default;
  OrderedJson to_json() const;
  /// Throws InputError "<where>: <field>: ..." on a missing or mistyped field, or a value that
  /// does not match the direction.
  static KnobSuggestion from_json(const OrderedJson& json, const std::string& where);
};

/// The "suggestions" array of Diagnosis::to_json, and its inverse: InputError
/// "<where>: suggestions[i]: <field>: ..." on a malformed entry.
OrderedJson suggestions_to_json(const std::vector<KnobSuggestion>& suggestions);
std::vector<KnobSuggestion> suggestions_from_json(const OrderedJson& json,
                                                  const std::string& where);

/// "raise VEC (loads are 4 bytes wide (VEC=1 of float32))", "set THREADS=0 (...)".
std::string suggestion_text(const KnobSuggestion& suggestion);

struct Diagnosis {
  Bottleneck bottleneck = Bottleneck::Unknown;
  /// Within latency: "occupancy", "parallelism", "small_work" or "stalls"; empty otherwise.
  std::string cause;
  std::string reason;              ///< the numbers behind the class, one sentence
  std::vector<std::string> hints;  ///< concrete, each backed by the numbers here
  /// The knob moves the hints back, at most one per knob, in the order of the hints.
  std::vector<KnobSuggestion> suggestions;

  bool gpu = false;
  std::optional<double> median_us;
  double bytes = 0;  ///< what the problem must move, per call
  double flops = 0;  ///< what it must compute, per call
  std::optional<double> achieved_gbs;
  std::optional<double> bandwidth_fraction;  ///< of the calibrated copy bandwidth
  std::optional<double> achieved_tflops;
  std::optional<double> compute_fraction;  ///< of compute_peak
  std::string compute_peak;                ///< "bfloat16 tensor cores", "fp32 FMA"
  std::optional<double> sol_us;            ///< the larger of bytes and FLOPs over their ceilings

  int kernels_per_call = 0;  ///< launches per call (GPU traces with kernel records)
  int64_t max_blocks = 0;    ///< the largest grid launched
  std::optional<OccupancyLimit> lowest_occupancy;
  int64_t max_local_bytes_per_thread = 0;  ///< spills or a local array when > 0
  std::optional<double> launch_share;      ///< of the median lost to launches and gaps
  bool launch_share_estimated = false;     ///< from kernel count x kLaunchLatencyUs
  /// What ran, slowest first (kernels_summary); empty without kernel records.
  std::string kernels;

  OrderedJson to_json() const;
  /// Throws InputError "<where>: <field>: ..." on a missing or mistyped field. "suggestions"
  /// may be absent (diagnoses stored before there were any).
  static Diagnosis from_json(const OrderedJson& json, const std::string& where = "diagnosis");
};

/// A pure function of its arguments. `knobs` are the candidate's template knobs when it came
/// from a template; they sharpen hints ("VEC=2") and decide which suggestions apply. Throws
/// InputError for a malformed kernel record in trace.extra.
Diagnosis diagnose(const Definition& def, const AxisValues& axes, const Trace& trace,
                   const std::optional<Calibration>& calibration,
                   const std::optional<KnobPoint>& knobs = std::nullopt);

/// Adds extra["diagnosis"] to every passed trace of `solution` (its template knobs, when it has
/// them, from solution.ext["knobs"]).
void annotate_traces(std::vector<Trace>& traces, const Problem& problem, const Solution& solution,
                     const std::optional<Calibration>& calibration);

/// The one-paragraph form a person reads: "memory-bound (...): <reason>", the hints and the
/// suggestions.
std::string diagnosis_text(const Diagnosis& diagnosis);

/// diagnosis_text of the diagnosis annotate_traces attached to `trace`; nullopt when it has none
/// (a failed workload, or traces never annotated).
std::optional<std::string> trace_diagnosis_text(const Trace& trace);

}  // namespace kernelarc
