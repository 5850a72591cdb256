#include "diagnosis/diagnosis_hints.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "eval/occupancy.h"

namespace kernelarc {

std::optional<int64_t> int_knob(const std::optional<KnobPoint>& knobs, std::string_view name) {
  if (!knobs) return std::nullopt;
  const auto it = knobs->find(name);
  if (it == knobs->end() || !std::holds_alternative<int64_t>(it->second)) return std::nullopt;
  return std::get<int64_t>(it->second);
}

namespace {

// The dtype a vectorised load reads: the first tensor input's (the problem's main operand, as
// the speed-of-light model also takes it).
std::optional<DType> load_dtype(const Definition& def) {
  for (const TensorSpec& spec : def.inputs) {
    if (!spec.is_scalar()) return spec.dtype;
  }
  return std::nullopt;
}

// One rule's output at a time: its hint, and the knob moves its numbers back for the knobs the
// candidate's point has (the first rule to move a knob keeps it).
class AdviceBuilder {
 public:
  explicit AdviceBuilder(const std::optional<KnobPoint>& knobs) : knobs_(knobs) {}

  void hint(std::string text) { advice_.hints.push_back(std::move(text)); }
  void suggest(std::string_view knob, KnobDirection direction, const std::string& reason,
               std::optional<KnobValue> value = std::nullopt) {
    if (!knobs_ || !knobs_->contains(knob)) return;
    const auto& taken = advice_.suggestions;
    if (std::any_of(taken.begin(), taken.end(),
                    [&](const KnobSuggestion& suggestion) { return suggestion.knob == knob; }))
      return;
    advice_.suggestions.push_back({std::string(knob), direction, std::move(value), reason});
  }
  Advice take() { return std::move(advice_); }

 private:
  const std::optional<KnobPoint>& knobs_;
  Advice advice_;
};

void add_vector_width(AdviceBuilder& advice, const Diagnosis& d, const Definition& def,
                      const std::optional<KnobPoint>& knobs) {
  if (d.bottleneck != Bottleneck::Memory && d.bottleneck != Bottleneck::Latency) return;
  const auto vec = int_knob(knobs, "VEC");
  const auto dtype = load_dtype(def);
  if (!vec || *vec < 1 || !dtype) return;
  const auto element = static_cast<int64_t>(dtype_size(*dtype));
  const int64_t width = *vec * element;
  if (width >= kWidestLoadBytes) return;
  const std::string reason =
      fmt::format("loads are {} bytes wide (VEC={} of {})", width, *vec, dtype_name(*dtype));
  advice.hint(fmt::format("{}; {}-byte loads (VEC={}) would cut load instructions {}x", reason,
                          kWidestLoadBytes, kWidestLoadBytes / element, kWidestLoadBytes / width));
  advice.suggest("VEC", KnobDirection::Raise, reason);
}

void add_occupancy(AdviceBuilder& advice, const OccupancyLimit& limit,
                   const std::optional<KnobPoint>& knobs) {
  const std::string limited =
      fmt::format("theoretical occupancy {:.2f} limited by ", limit.fraction);
  if (limit.limited_by.find(kOccupancyLimitJoin) != std::string::npos) {
    // No single knob raises it, so none is suggested.
    advice.hint(fmt::format(
        "{}{} alike ({}/thread, {:.1f} KiB/block, {} threads/block): lowering one alone gains "
        "no block per SM; a kernel built for one block per SM (warp-specialised, its tiles in "
        "shared memory) hides latency inside the block, by deeper pipelines and overlapped "
        "stages",
        limited, limit.limited_by, limit.registers_per_thread,
        static_cast<double>(limit.shared_bytes_per_block) / 1024.0, limit.threads_per_block));
  } else if (limit.limited_by == "registers") {
    // A per-thread row cache is held in registers: the knob that sets its size sets their count.
    const std::string reason =
        limited + fmt::format("registers ({}/thread, {} threads/block)", limit.registers_per_thread,
                              limit.threads_per_block);
    const auto cached = int_knob(knobs, "MAX_VECS_PER_THREAD");
    advice.hint(fmt::format(
        "{}; fewer registers per thread (__launch_bounds__, fewer live values{})", reason,
        cached ? fmt::format(", MAX_VECS_PER_THREAD={} smaller", *cached) : ""));
    advice.suggest("MAX_VECS_PER_THREAD", KnobDirection::Lower, reason);
  } else if (limit.limited_by == "shared memory") {
    const std::string reason =
        limited + fmt::format("shared memory ({:.1f} KiB/block)",
                              static_cast<double>(limit.shared_bytes_per_block) / 1024.0);
    const auto stages = int_knob(knobs, "STAGES");
    advice.hint(fmt::format("{}; smaller tiles{}", reason,
                            stages ? fmt::format(" or fewer stages (STAGES={})", *stages) : ""));
    advice.suggest("STAGES", KnobDirection::Lower, reason);
  } else if (limit.limited_by == "blocks") {
    const std::string reason =
        limited +
        fmt::format("the number of blocks per SM ({} threads/block)", limit.threads_per_block);
    advice.hint(reason + "; larger blocks");
    advice.suggest("BLOCK_THREADS", KnobDirection::Raise, reason);
  } else {
    advice.hint(limited + fmt::format("{} ({} threads/block); a block size that divides the "
                                      "SM's threads",
                                      limit.limited_by, limit.threads_per_block));
  }
}

void add_block_parallelism(AdviceBuilder& advice, const Diagnosis& d,
                           const Calibration& calibration, const std::optional<KnobPoint>& knobs) {
  const std::string reason =
      fmt::format("achieved {:.2f} of copy bandwidth with {} SMs and only {} blocks",
                  *d.bandwidth_fraction, calibration.sm_count, d.max_blocks);
  const auto rows = int_knob(knobs, "ROWS_PER_BLOCK");
  const auto bm = int_knob(knobs, "BM");
  const auto bn = int_knob(knobs, "BN");
  const auto threads = int_knob(knobs, "BLOCK_THREADS");
  if (rows && *rows > 1) {
    advice.hint(fmt::format("{}: more parallelism (ROWS_PER_BLOCK={} smaller / more blocks)",
                            reason, *rows));
    advice.suggest("ROWS_PER_BLOCK", KnobDirection::Lower, reason);
  } else if (bm && bn) {
    advice.hint(fmt::format("{}: more parallelism (smaller tiles than BM={}, BN={} / more blocks)",
                            reason, *bm, *bn));
    advice.suggest("BM", KnobDirection::Lower, reason);
    advice.suggest("BN", KnobDirection::Lower, reason);
  } else if (threads) {
    // The block count of a fixed amount of work grows as its blocks shrink.
    advice.hint(fmt::format("{}: more parallelism (BLOCK_THREADS={} smaller / more blocks)", reason,
                            *threads));
    advice.suggest("BLOCK_THREADS", KnobDirection::Lower, reason);
  } else {
    advice.hint(reason + ": more parallelism (more blocks)");
  }
}

void add_latency_hints(AdviceBuilder& advice, const Diagnosis& d,
                       const std::optional<Calibration>& calibration,
                       const std::optional<KnobPoint>& knobs) {
  if (d.cause == "occupancy") {
    add_occupancy(advice, *d.lowest_occupancy, knobs);
  } else if (d.cause == "parallelism" && d.gpu) {
    add_block_parallelism(advice, d, *calibration, knobs);
  } else if (d.cause == "parallelism") {
    const int64_t threads = *int_knob(knobs, "THREADS");
    const std::string reason = fmt::format("THREADS={} leaves {} of {} cores idle", threads,
                                           calibration->cores - threads, calibration->cores);
    advice.hint(reason + ": more threads");
    // 0 takes every core: the convention of the CPU templates' shared entry (ka_cpu_entry.h).
    advice.suggest("THREADS", KnobDirection::Set, reason, KnobValue(int64_t{0}));
  } else if (d.cause == "small_work") {
    advice.hint(
        fmt::format("the whole problem moves {:.3g} MB ({:.3g} us at copy bandwidth): "
                    "fixed costs outweigh tuning; fusing it with a neighbouring op "
                    "pays more",
                    d.bytes * 1e-6, *d.sol_us));
  } else if (d.cause == "stalls" && d.gpu) {
    advice.hint(
        "neither occupancy nor the block count explains the stalls: an Nsight Compute profile "
        "(warp stall reasons, DRAM bytes) would show what the warps wait for");
  } else if (d.cause == "stalls") {
    advice.hint(
        "the cores stall: walk memory in the order it lies (unit stride in the inner loop), block "
        "the loops so a tile's data stays in L1/L2, keep several independent accumulators per "
        "loop so the FMA latency is hidden, and let the inner loop vectorize (no aliasing, no "
        "calls); `perf stat` (cache misses, instructions per cycle) shows which");
  }
}

// No template has a knob that merges kernels or launches, so these rules suggest none. Gaps far
// longer than a launch are host time between the launches, which fusing would not remove.
void add_launch_hints(AdviceBuilder& advice, const Diagnosis& d) {
  const bool launch_matters =
      d.bottleneck == Bottleneck::Launch || d.launch_share.value_or(0) >= kLaunchNoticeShare;
  if (!launch_matters) return;
  if (d.kernels_per_call > 1) {
    const int saved = d.kernels_per_call - 1;
    const double gaps_us = d.launch_share.value_or(0) * *d.median_us;
    if (!d.launch_share_estimated && gaps_us / saved >= kHostGapLaunches * kLaunchLatencyUs) {
      advice.hint(fmt::format(
          "{} kernels per call with ~{:.3g} us of the {:.4g} us span between them (~{:.3g} us a "
          "gap, where a launch costs ~{:.3g} us): the GPU waits for host work between the "
          "launches (a library call's setup, a synchronisation) or for copies and memsets; do "
          "the host work before the first launch, or capture the call in a CUDA graph",
          d.kernels_per_call, gaps_us, *d.median_us, gaps_us / saved, kLaunchLatencyUs));
      return;
    }
    advice.hint(
        fmt::format("{} kernels per call: fusing them saves ~{} launch{} (~{:.3g} us "
                    "of {:.4g} us)",
                    d.kernels_per_call, saved, saved == 1 ? "" : "es",
                    d.launch_share_estimated ? saved * kLaunchLatencyUs : gaps_us, *d.median_us));
  } else if (d.kernels_per_call == 1 && d.bottleneck == Bottleneck::Launch) {
    advice.hint(
        fmt::format("one launch of {:.3g} us costs about a launch's fixed overhead: "
                    "fuse this op into a neighbouring kernel or capture the calls "
                    "in a CUDA graph",
                    *d.median_us));
  }
}

}  // namespace

Advice diagnosis_advice(const Diagnosis& d, const Definition& def,
                        const std::optional<Calibration>& calibration,
                        const std::optional<KnobPoint>& knobs) {
  AdviceBuilder advice(knobs);
  if (d.bottleneck == Bottleneck::Memory && *d.bandwidth_fraction >= kNearCeiling) {
    advice.hint(
        fmt::format("at {:.2f} of copy bandwidth the kernel is near the ceiling: only "
                    "moving fewer bytes (fusion with neighbouring ops) helps now",
                    *d.bandwidth_fraction));
  }
  add_vector_width(advice, d, def, knobs);
  if (d.bottleneck == Bottleneck::Latency) add_latency_hints(advice, d, calibration, knobs);
  add_launch_hints(advice, d);
  if (d.max_local_bytes_per_thread > 0) {
    // Spilled values and an indexed local array are most often the per-thread row cache.
    const std::string reason =
        fmt::format("{} bytes of local memory per thread", d.max_local_bytes_per_thread);
    advice.hint(reason +
                " (register spills or an indexed local array): keep those values in registers");
    advice.suggest("MAX_VECS_PER_THREAD", KnobDirection::Lower, reason);
  }
  return advice.take();
}

}  // namespace kernelarc
