#include "diagnosis/diagnosis.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "diagnosis/kernel_records.h"
#include "diagnosis_test_support.h"
#include "eval/speed_of_light.h"

namespace kernelarc {
namespace {

using testing::cpu_calibration;
using testing::gpu_calibration;
using testing::gpu_trace;
using testing::kernel_record;
using testing::kProblems;
using testing::median_ms_at_bandwidth;
using testing::rmsnorm;
using testing::rows;

const Definition& gemm() {
  static const Definition def = load_definition(kProblems / "cuda/gemm_bf16/definition.json");
  return def;
}

// bytes = 4 * batch * 4096 + 2 * 4096 (the definition's kernelarc.bytes)
double rmsnorm_bytes(int64_t batch) {
  return 4.0 * batch * 4096 + 2.0 * 4096;
}

bool has_hint(const Diagnosis& d, const std::string& fragment) {
  return std::any_of(d.hints.begin(), d.hints.end(), [&](const std::string& hint) {
    return hint.find(fragment) != std::string::npos;
  });
}

std::string all_hints(const Diagnosis& d) {
  std::string text;
  for (const std::string& hint : d.hints) text += hint + "\n";
  return text;
}

TEST(Diagnosis, MemoryBoundRmsnormNearTheCeiling) {
  const double median = median_ms_at_bandwidth(rmsnorm_bytes(16384), 0.85, 4000);
  const Trace trace = gpu_trace(median, {kernel_record("rmsnorm", 16384, 256, 32, 1.0)});
  const Diagnosis d =
      diagnose(rmsnorm(), rows(16384), trace, gpu_calibration(), KnobPoint{{"VEC", int64_t{8}}});
  EXPECT_EQ(d.bottleneck, Bottleneck::Memory);
  ASSERT_TRUE(d.bandwidth_fraction);
  EXPECT_NEAR(*d.bandwidth_fraction, 0.85, 1e-9);
  EXPECT_NEAR(*d.achieved_gbs, 3400, 1e-6);
  EXPECT_EQ(d.compute_peak, "fp32 FMA");  // no tensor-core work in a norm
  // 4 FLOPs per element on the CUDA cores: 3.4 TFLOP/s of 60.
  EXPECT_NEAR(*d.compute_fraction, 4.0 * 16384 * 4096 / (median * 1e-3) / 60e12, 1e-9);
  EXPECT_NE(d.reason.find("0.85 of copy bandwidth"), std::string::npos) << d.reason;
  EXPECT_TRUE(has_hint(d, "near the ceiling")) << all_hints(d);
  // VEC=8 of bfloat16 is already 16 bytes wide, one kernel, no spills: nothing else to say.
  EXPECT_EQ(d.hints.size(), 1u) << all_hints(d);
  EXPECT_EQ(d.kernels_per_call, 1);
  EXPECT_EQ(*d.launch_share, 0.0);
}

TEST(Diagnosis, VectorWidthHintNeedsTheVecKnob) {
  const double median = median_ms_at_bandwidth(rmsnorm_bytes(16384), 0.7, 4000);
  const Trace trace = gpu_trace(median, {kernel_record("rmsnorm", 16384, 256, 32, 1.0)});
  const Diagnosis narrow =
      diagnose(rmsnorm(), rows(16384), trace, gpu_calibration(),
               KnobPoint{{"VEC", int64_t{2}}, {"BLOCK_THREADS", int64_t{256}}});
  EXPECT_EQ(narrow.bottleneck, Bottleneck::Memory);
  EXPECT_TRUE(has_hint(narrow,
                       "loads are 4 bytes wide (VEC=2 of bfloat16); 16-byte loads (VEC=8) "
                       "would cut load instructions 4x"))
      << all_hints(narrow);

  const Diagnosis unknown_knobs = diagnose(rmsnorm(), rows(16384), trace, gpu_calibration());
  EXPECT_FALSE(has_hint(unknown_knobs, "loads are")) << all_hints(unknown_knobs);
  const Diagnosis other_knobs = diagnose(rmsnorm(), rows(16384), trace, gpu_calibration(),
                                         KnobPoint{{"BLOCK_THREADS", int64_t{256}}});
  EXPECT_FALSE(has_hint(other_knobs, "loads are")) << all_hints(other_knobs);
  const Diagnosis wide =
      diagnose(rmsnorm(), rows(16384), trace, gpu_calibration(), KnobPoint{{"VEC", int64_t{8}}});
  EXPECT_FALSE(has_hint(wide, "loads are")) << all_hints(wide);
}

TEST(Diagnosis, LaunchBoundTinyWorkload) {
  const Trace trace = gpu_trace(0.003, {kernel_record("rmsnorm", 1, 256, 32, 1.0)});
  const Diagnosis d = diagnose(rmsnorm(), rows(1), trace, gpu_calibration());
  EXPECT_EQ(d.bottleneck, Bottleneck::Launch);
  EXPECT_NE(d.reason.find("median 3 us"), std::string::npos) << d.reason;
  EXPECT_TRUE(has_hint(d, "one launch of 3 us")) << all_hints(d);
}

TEST(Diagnosis, LaunchBoundByManyKernels) {
  // Two gaps of ~2.5 us after the first of three kernels in a 9 us CUPTI span: 0.56.
  const Trace trace = gpu_trace(
      0.009, {kernel_record("add", 64, 256, 16, 1.0), kernel_record("square_sum", 64, 256, 16, 1.0),
              kernel_record("scale", 64, 256, 16, 1.0)});
  const Diagnosis d = diagnose(rmsnorm(), rows(64), trace, gpu_calibration());
  EXPECT_EQ(d.bottleneck, Bottleneck::Launch);
  EXPECT_EQ(d.kernels_per_call, 3);
  EXPECT_TRUE(d.launch_share_estimated);
  EXPECT_NEAR(*d.launch_share, 5.0 / 9.0, 1e-9);
  EXPECT_TRUE(has_hint(d, "3 kernels per call: fusing them saves ~2 launches")) << all_hints(d);
}

TEST(Diagnosis, LaunchShareMeasuredWhenKernelTimesAreRecorded) {
  OrderedJson first = kernel_record("add", 64, 256, 16, 1.0);
  OrderedJson second = kernel_record("norm", 64, 256, 16, 1.0);
  first["busy_us"] = 3.0;
  second["busy_us"] = 4.0;
  const Diagnosis d =
      diagnose(rmsnorm(), rows(64), gpu_trace(0.010, {first, second}), gpu_calibration());
  EXPECT_FALSE(d.launch_share_estimated);
  EXPECT_NEAR(*d.launch_share, 0.3, 1e-9);
}

// A CUPTI trace of an FP8 block-scaled call: a scale transpose, then cuBLASLt's GEMM, each with
// its GPU time recorded, in a span of `span_ms`.
Trace transpose_then_gemm(const std::string& transpose_name, double transpose_us, double gemm_us,
                          double span_ms) {
  OrderedJson transpose = kernel_record(transpose_name, 256, 256, 16, 1.0);
  OrderedJson gemm_kernel = kernel_record("nvjet", 132, 384, 168, 0.19, "registers");
  transpose["busy_us"] = transpose_us;
  gemm_kernel["busy_us"] = gemm_us;
  return gpu_trace(span_ms, {transpose, gemm_kernel});
}

TEST(Diagnosis, LongMeasuredGapsAreHostWorkNotLaunches) {
  // Two kernels busy 100 us together in a 200 us CUPTI span: one gap of 100 us, forty launch
  // latencies, is host work between the launches (a library call), which fusing cannot save.
  const Diagnosis host =
      diagnose(rmsnorm(), rows(64), transpose_then_gemm("transpose_scales", 2.0, 98.0, 0.200),
               gpu_calibration());
  EXPECT_FALSE(host.launch_share_estimated);
  EXPECT_NEAR(*host.launch_share, 0.5, 1e-9);
  EXPECT_TRUE(has_hint(host,
                       "2 kernels per call with ~100 us of the 200 us span between them "
                       "(~100 us a gap, where a launch costs ~2.5 us): the GPU waits for "
                       "host work"))
      << all_hints(host);
  EXPECT_FALSE(has_hint(host, "fusing them saves")) << all_hints(host);

  // Gaps of about a launch each are launches: fusing is the advice.
  const Diagnosis launches =
      diagnose(rmsnorm(), rows(64), transpose_then_gemm("transpose_scales", 5.0, 5.0, 0.013),
               gpu_calibration());
  EXPECT_TRUE(
      has_hint(launches, "2 kernels per call: fusing them saves ~1 launch (~3 us of 13 us)"))
      << all_hints(launches);
  EXPECT_FALSE(has_hint(launches, "host work")) << all_hints(launches);
}

TEST(KernelRecords, ReadableNamesAndTheCallsSummary) {
  EXPECT_EQ(
      readable_kernel_name(
          "_ZN6ka_moe16dgrad_act_kernelILi128ELi64ELi64ELi2ELi4ELi3ELi1EEEv6KaArgsNS_9WorkspaceEi"),
      "ka_moe::dgrad_act_kernel<128, 64, 64, 2, 4, 3, 1>");
  EXPECT_EQ(readable_kernel_name("_Z20ka_attention_prefill6KaArgs"), "ka_attention_prefill");
  EXPECT_EQ(readable_kernel_name("nvjet_sm90_qqtst_128x128"), "nvjet_sm90_qqtst_128x128");
  EXPECT_EQ(readable_kernel_name(std::string(120, 'k'), 20), std::string(17, 'k') + "...");

  const Diagnosis d = diagnose(rmsnorm(), rows(64),
                               transpose_then_gemm("_Z16transpose_scalesPKfPfxi", 2.0, 98.0, 0.200),
                               gpu_calibration());
  // Slowest first, the idle time from the CUPTI span, and in the text a person reads.
  EXPECT_EQ(d.kernels,
            "nvjet x1 98.0 us, transpose_scales x1 2.0 us; idle between them 100 us of 200 us");
  EXPECT_NE(diagnosis_text(d).find("\n  kernels: nvjet x1 98.0 us"), std::string::npos)
      << diagnosis_text(d);
  EXPECT_EQ(Diagnosis::from_json(d.to_json()).kernels, d.kernels);
  OrderedJson stored = d.to_json();
  stored.erase("kernels");  // diagnoses stored before the field existed
  EXPECT_EQ(Diagnosis::from_json(stored).kernels, "");

  // Past `listed` kernels, a count.
  const std::vector<KernelRecord> records(6, KernelRecord{.name = "k"});
  EXPECT_EQ(kernels_summary(records, 4), "k x1, k x1, k x1, k x1, 2 more");
}

TEST(Diagnosis, OccupancyLimitedKernel) {
  const double median = median_ms_at_bandwidth(rmsnorm_bytes(4096), 0.3, 4000);
  const Trace trace =
      gpu_trace(median, {kernel_record("rmsnorm", 4096, 256, 128, 0.25, "registers")});
  const Diagnosis d = diagnose(rmsnorm(), rows(4096), trace, gpu_calibration());
  EXPECT_EQ(d.bottleneck, Bottleneck::Latency);
  EXPECT_EQ(d.cause, "occupancy");
  ASSERT_TRUE(d.lowest_occupancy);
  EXPECT_EQ(d.lowest_occupancy->registers_per_thread, 128);
  EXPECT_TRUE(has_hint(d,
                       "theoretical occupancy 0.25 limited by registers (128/thread, 256 "
                       "threads/block); fewer registers per thread"))
      << all_hints(d);
}

// A MoE call: a router with poor occupancy and a grouped GEMM with most of the time. The
// router's occupancy is not the reason the call is slow; the GEMM's is.
TEST(Diagnosis, OccupancyBlamesTheKernelsThatTakeTheTime) {
  const double median = median_ms_at_bandwidth(rmsnorm_bytes(4096), 0.3, 4000);
  OrderedJson router = kernel_record("route_kernel", 64, 128, 168, 0.19, "registers");
  OrderedJson gemm = kernel_record("grouped_gemm", 4096, 256, 128, 0.25, "shared memory");
  router["busy_us"] = 2.0;
  gemm["busy_us"] = 38.0;
  Diagnosis d =
      diagnose(rmsnorm(), rows(4096), gpu_trace(median, {router, gemm}), gpu_calibration());
  EXPECT_EQ(d.cause, "occupancy");
  ASSERT_TRUE(d.lowest_occupancy);
  EXPECT_EQ(d.lowest_occupancy->kernel, "grouped_gemm");
  ASSERT_TRUE(d.lowest_occupancy->time_share);
  EXPECT_NEAR(*d.lowest_occupancy->time_share, 0.95, 1e-9);
  EXPECT_NE(d.reason.find("0.25 in grouped_gemm (0.95 of the kernels' GPU time), limited by "
                          "shared memory"),
            std::string::npos)
      << d.reason;

  // Without recorded kernel times every kernel is a suspect, and the lowest one is named.
  router.erase("busy_us");
  gemm.erase("busy_us");
  d = diagnose(rmsnorm(), rows(4096), gpu_trace(median, {router, gemm}), gpu_calibration());
  ASSERT_TRUE(d.lowest_occupancy);
  EXPECT_EQ(d.lowest_occupancy->kernel, "route_kernel");
  EXPECT_FALSE(d.lowest_occupancy->time_share);

  // A material second kernel with lower occupancy is still the one named.
  router["busy_us"] = 12.0;
  gemm["busy_us"] = 28.0;
  d = diagnose(rmsnorm(), rows(4096), gpu_trace(median, {router, gemm}), gpu_calibration());
  ASSERT_TRUE(d.lowest_occupancy);
  EXPECT_EQ(d.lowest_occupancy->kernel, "route_kernel");
}

TEST(Diagnosis, TooFewBlocksForTheSms) {
  const double median = median_ms_at_bandwidth(rmsnorm_bytes(2048), 0.45, 4000);
  const Trace trace = gpu_trace(median, {kernel_record("rmsnorm", 64, 256, 32, 1.0)});
  const Diagnosis d = diagnose(rmsnorm(), rows(2048), trace, gpu_calibration(),
                               KnobPoint{{"ROWS_PER_BLOCK", int64_t{32}}});
  EXPECT_EQ(d.bottleneck, Bottleneck::Latency);
  EXPECT_EQ(d.cause, "parallelism");
  EXPECT_TRUE(has_hint(d,
                       "achieved 0.45 of copy bandwidth with 132 SMs and only 64 blocks: more "
                       "parallelism (ROWS_PER_BLOCK=32 smaller / more blocks)"))
      << all_hints(d);
}

TEST(Diagnosis, CpuThreadsBelowCores) {
  const Definition def = load_definition(kProblems / "cpu/rmsnorm_f32/definition.json");
  Trace trace;
  trace.clock = "steady_clock";
  // 8 * 4096 * 4096 + 4 * 4096 bytes at 0.3 of 20 GB/s.
  const double bytes = 8.0 * 4096 * 4096 + 4.0 * 4096;
  trace.latency_ms = TimingSummary{.samples = 20, .median = median_ms_at_bandwidth(bytes, 0.3, 20)};
  const Diagnosis d = diagnose(def, {{"batch_size", 4096}, {"hidden_size", 4096}}, trace,
                               cpu_calibration(), KnobPoint{{"THREADS", int64_t{1}}});
  EXPECT_FALSE(d.gpu);
  EXPECT_EQ(d.bottleneck, Bottleneck::Latency);
  EXPECT_EQ(d.cause, "parallelism");
  EXPECT_FALSE(d.launch_share);
  EXPECT_TRUE(has_hint(d, "THREADS=1 leaves 1 of 2 cores idle")) << all_hints(d);
}

// With every core busy and a large problem, a CPU kernel far from its ceilings stalls: the cause
// and the hint speak of cores, caches and vector loops, not of occupancy or warps.
TEST(Diagnosis, CpuStallsAreToldInCpuTerms) {
  const Definition def = load_definition(kProblems / "cpu/rmsnorm_f32/definition.json");
  Trace trace;
  trace.clock = "steady_clock";
  const double bytes = 8.0 * 4096 * 4096 + 4.0 * 4096;
  trace.latency_ms = TimingSummary{.samples = 20, .median = median_ms_at_bandwidth(bytes, 0.3, 20)};
  const Diagnosis d = diagnose(def, {{"batch_size", 4096}, {"hidden_size", 4096}}, trace,
                               cpu_calibration(), KnobPoint{{"THREADS", int64_t{0}}});
  EXPECT_EQ(d.bottleneck, Bottleneck::Latency);
  EXPECT_EQ(d.cause, "stalls");
  const std::string text = d.reason + "\n" + all_hints(d);
  for (const char* gpu_word : {"occupancy", "warp", "SMs", "Nsight", "BLOCK_THREADS"})
    EXPECT_EQ(text.find(gpu_word), std::string::npos) << gpu_word << " in: " << text;
  EXPECT_TRUE(has_hint(d, "perf stat")) << all_hints(d);
}

TEST(Diagnosis, ComputeBoundGemm) {
  const AxisValues axes{{"M", 4096}, {"N", 4096}, {"K", 4096}};
  const double flops = 2.0 * 4096 * 4096 * 4096;
  const double median_ms = flops / (0.7 * 800e12) * 1e3;
  const Trace trace =
      gpu_trace(median_ms, {kernel_record("sm90_gemm", 264, 384, 168, 0.1875, "registers")});
  const Diagnosis d = diagnose(gemm(), axes, trace, gpu_calibration());
  EXPECT_EQ(d.bottleneck, Bottleneck::Compute);
  EXPECT_NEAR(*d.compute_fraction, 0.7, 1e-9);
  EXPECT_EQ(d.compute_peak, "bfloat16 tensor cores");
  EXPECT_LT(*d.bandwidth_fraction, 0.2);
  // A GEMM runs at one block per SM by design: no occupancy advice when compute is saturated.
  EXPECT_FALSE(has_hint(d, "occupancy")) << all_hints(d);
}

TEST(Diagnosis, UnknownWithoutCalibration) {
  const Trace trace = gpu_trace(0.1, {kernel_record("rmsnorm", 4096, 256, 128, 0.25, "registers")});
  const Diagnosis d = diagnose(rmsnorm(), rows(4096), trace, std::nullopt);
  EXPECT_EQ(d.bottleneck, Bottleneck::Unknown);
  EXPECT_TRUE(d.gpu);
  EXPECT_FALSE(d.bandwidth_fraction);
  EXPECT_NE(d.reason.find("kernelarc calibrate"), std::string::npos) << d.reason;
  // The kernel facts are still read.
  EXPECT_DOUBLE_EQ(d.lowest_occupancy->fraction, 0.25);
}

TEST(Diagnosis, UnknownWithoutTiming) {
  Trace trace;
  trace.status = EvalStatus::IncorrectNumerical;
  const Diagnosis d = diagnose(rmsnorm(), rows(16), trace, gpu_calibration());
  EXPECT_EQ(d.bottleneck, Bottleneck::Unknown);
  EXPECT_NE(d.reason.find("INCORRECT_NUMERICAL"), std::string::npos) << d.reason;
  EXPECT_TRUE(d.hints.empty());
}

TEST(Diagnosis, SpillHintOnlyWithLocalMemory) {
  const double median = median_ms_at_bandwidth(rmsnorm_bytes(16384), 0.7, 4000);
  OrderedJson spilling = kernel_record("rmsnorm", 16384, 256, 255, 1.0);
  spilling["local_bytes_per_thread"] = 96;
  const Diagnosis with =
      diagnose(rmsnorm(), rows(16384), gpu_trace(median, {spilling}), gpu_calibration());
  EXPECT_EQ(with.max_local_bytes_per_thread, 96);
  EXPECT_TRUE(has_hint(with, "96 bytes of local memory per thread")) << all_hints(with);
  const Diagnosis without = diagnose(
      rmsnorm(), rows(16384), gpu_trace(median, {kernel_record("rmsnorm", 16384, 256, 32, 1.0)}),
      gpu_calibration());
  EXPECT_TRUE(without.hints.empty()) << all_hints(without);
}

TEST(Diagnosis, PtxasRemarksOnWgmmaBecomeHints) {
  const AxisValues axes{{"M", 4096}, {"N", 4096}, {"K", 4096}};
  const double median_ms = 2.0 * 4096 * 4096 * 4096 / (0.2 * 800e12) * 1e3;
  Trace trace =
      gpu_trace(median_ms, {kernel_record("wgmma_gemm", 132, 384, 168, 0.1875, "registers")});
  const Diagnosis quiet = diagnose(gemm(), axes, trace, gpu_calibration());
  EXPECT_FALSE(has_hint(quiet, "ptxas")) << all_hints(quiet);
  trace.extra["build"]["notes"] = {
      "(C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized",
      "(C7519) warpgroup.arrive is injected in around line 12"};
  const Diagnosis d = diagnose(gemm(), axes, trace, gpu_calibration());
  EXPECT_TRUE(has_hint(d, "ptxas serialised every wgmma of the kernel ((C7520)")) << all_hints(d);
  EXPECT_TRUE(has_hint(d, "ptxas: (C7519) warpgroup.arrive")) << all_hints(d);
}

TEST(Diagnosis, MalformedKernelRecordIsAnInputError) {
  Trace trace = gpu_trace(0.1, {kernel_record("rmsnorm", 4096, 256, 32, 1.0)});
  trace.extra["kernels"][0]["registers_per_thread"] = "many";
  EXPECT_THROW(diagnose(rmsnorm(), rows(4096), trace, gpu_calibration()), InputError);
}

// The fractions must be of the same ceilings that bound T_SOL in the guard.
TEST(Diagnosis, BoundAgreesWithSpeedOfLight) {
  const Trace trace = gpu_trace(1.0, OrderedJson::array());
  for (int64_t m : {1, 127, 4096}) {
    const AxisValues axes{{"M", m}, {"N", 4096}, {"K", 4096}};
    const Diagnosis d = diagnose(gemm(), axes, trace, gpu_calibration());
    EXPECT_NEAR(*d.sol_us, *speed_of_light(gemm(), axes, gpu_calibration()).ms * 1e3, 1e-9) << m;
  }
  const Diagnosis norm = diagnose(rmsnorm(), rows(1000), trace, gpu_calibration());
  EXPECT_NEAR(*norm.sol_us, *speed_of_light(rmsnorm(), rows(1000), gpu_calibration()).ms * 1e3,
              1e-9);
  const std::filesystem::path cpu_problem = kProblems / "cpu/matmul_f32";
  const Definition cpu_def = load_definition(cpu_problem / "definition.json");
  Trace cpu_trace;
  cpu_trace.latency_ms = TimingSummary{.samples = 5, .median = 1.0};
  for (const Workload& workload : load_workloads(cpu_problem / "workload.jsonl", cpu_def)) {
    const AxisValues axes = resolve_axes(cpu_def, workload);
    const Diagnosis cpu = diagnose(cpu_def, axes, cpu_trace, cpu_calibration());
    EXPECT_NEAR(*cpu.sol_us, *speed_of_light(cpu_def, axes, cpu_calibration()).ms * 1e3, 1e-9)
        << format_axes(axes);
  }
}

}  // namespace
}  // namespace kernelarc
