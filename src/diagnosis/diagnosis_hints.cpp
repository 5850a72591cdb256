#include "diagnosis/diagnosis_hints.h"

#include <fmt/format.h>

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

std::optional<std::string> vector_width_hint(const Diagnosis& d, const Definition& def,
                                             const std::optional<KnobPoint>& knobs) {
  if (d.bottleneck != Bottleneck::Memory && d.bottleneck != Bottleneck::Latency) return {};
  const auto vec = int_knob(knobs, "VEC");
  const auto dtype = load_dtype(def);
  if (!vec || *vec < 1 || !dtype) return {};
  const auto element = static_cast<int64_t>(dtype_size(*dtype));
  const int64_t width = *vec * element;
  if (width >= kWidestLoadBytes) return {};
  return fmt::format(
      "loads are {} bytes wide (VEC={} of {}); {}-byte loads (VEC={}) would cut "
      "load instructions {}x",
      width, *vec, dtype_name(*dtype), kWidestLoadBytes, kWidestLoadBytes / element,
      kWidestLoadBytes / width);
}

std::string occupancy_remedy(const OccupancyLimit& limit, const std::optional<KnobPoint>& knobs) {
  if (limit.limited_by == "registers") {
    return fmt::format(
        "registers ({}/thread, {} threads/block); fewer registers per thread "
        "(__launch_bounds__, fewer live values)",
        limit.registers_per_thread, limit.threads_per_block);
  }
  if (limit.limited_by == "shared memory") {
    const auto stages = int_knob(knobs, "STAGES");
    return fmt::format("shared memory ({:.1f} KiB/block); smaller tiles{}",
                       static_cast<double>(limit.shared_bytes_per_block) / 1024.0,
                       stages ? fmt::format(" or fewer stages (STAGES={})", *stages) : "");
  }
  if (limit.limited_by == "blocks") {
    return fmt::format("the number of blocks per SM ({} threads/block); larger blocks",
                       limit.threads_per_block);
  }
  return fmt::format("{} ({} threads/block); a block size that divides the SM's threads",
                     limit.limited_by, limit.threads_per_block);
}

std::string parallelism_remedy(const std::optional<KnobPoint>& knobs) {
  if (const auto rows = int_knob(knobs, "ROWS_PER_BLOCK"); rows && *rows > 1) {
    return fmt::format("ROWS_PER_BLOCK={} smaller / more blocks", *rows);
  }
  const auto bm = int_knob(knobs, "BM");
  const auto bn = int_knob(knobs, "BN");
  if (bm && bn) return fmt::format("smaller tiles than BM={}, BN={} / more blocks", *bm, *bn);
  return "more blocks";
}

void add_latency_hints(std::vector<std::string>& hints, const Diagnosis& d,
                       const std::optional<Calibration>& calibration,
                       const std::optional<KnobPoint>& knobs) {
  if (d.cause == "occupancy") {
    hints.push_back(fmt::format("theoretical occupancy {:.2f} limited by {}",
                                d.lowest_occupancy->fraction,
                                occupancy_remedy(*d.lowest_occupancy, knobs)));
  } else if (d.cause == "parallelism" && d.gpu) {
    hints.push_back(fmt::format(
        "achieved {:.2f} of copy bandwidth with {} SMs and only {} blocks: "
        "more parallelism ({})",
        *d.bandwidth_fraction, calibration->sm_count, d.max_blocks, parallelism_remedy(knobs)));
  } else if (d.cause == "parallelism") {
    hints.push_back(fmt::format(
        "THREADS={} leaves {} of {} cores idle: more threads", *int_knob(knobs, "THREADS"),
        calibration->cores - *int_knob(knobs, "THREADS"), calibration->cores));
  } else if (d.cause == "small_work") {
    hints.push_back(
        fmt::format("the whole problem moves {:.3g} MB ({:.3g} us at copy bandwidth): "
                    "fixed costs outweigh tuning; fusing it with a neighbouring op "
                    "pays more",
                    d.bytes * 1e-6, *d.sol_us));
  } else if (d.cause == "stalls" && d.gpu) {
    hints.push_back(
        "neither occupancy nor the block count explains the stalls: an Nsight Compute profile "
        "(warp stall reasons, DRAM bytes) would show what the warps wait for");
  }
}

void add_launch_hints(std::vector<std::string>& hints, const Diagnosis& d) {
  const bool launch_matters =
      d.bottleneck == Bottleneck::Launch || d.launch_share.value_or(0) >= kLaunchNoticeShare;
  if (!launch_matters) return;
  if (d.kernels_per_call > 1) {
    const int saved = d.kernels_per_call - 1;
    hints.push_back(
        fmt::format("{} kernels per call: fusing them saves ~{} launch{} (~{:.3g} us "
                    "of {:.4g} us)",
                    d.kernels_per_call, saved, saved == 1 ? "" : "es",
                    d.launch_share_estimated ? saved * kLaunchLatencyUs
                                             : d.launch_share.value_or(0) * *d.median_us,
                    *d.median_us));
  } else if (d.kernels_per_call == 1 && d.bottleneck == Bottleneck::Launch) {
    hints.push_back(
        fmt::format("one launch of {:.3g} us costs about a launch's fixed overhead: "
                    "fuse this op into a neighbouring kernel or capture the calls "
                    "in a CUDA graph",
                    *d.median_us));
  }
}

}  // namespace

std::vector<std::string> diagnosis_hints(const Diagnosis& d, const Definition& def,
                                         const std::optional<Calibration>& calibration,
                                         const std::optional<KnobPoint>& knobs) {
  std::vector<std::string> hints;
  if (d.bottleneck == Bottleneck::Memory && *d.bandwidth_fraction >= kNearCeiling) {
    hints.push_back(
        fmt::format("at {:.2f} of copy bandwidth the kernel is near the ceiling: only "
                    "moving fewer bytes (fusion with neighbouring ops) helps now",
                    *d.bandwidth_fraction));
  }
  if (auto hint = vector_width_hint(d, def, knobs)) hints.push_back(std::move(*hint));
  if (d.bottleneck == Bottleneck::Latency) add_latency_hints(hints, d, calibration, knobs);
  add_launch_hints(hints, d);
  if (d.max_local_bytes_per_thread > 0) {
    hints.push_back(
        fmt::format("{} bytes of local memory per thread (register spills or an "
                    "indexed local array): keep those values in registers",
                    d.max_local_bytes_per_thread));
  }
  return hints;
}

}  // namespace kernelarc
