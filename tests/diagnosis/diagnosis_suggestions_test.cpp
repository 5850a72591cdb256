// The knob suggestions of a diagnosis: each comes from the rule of a hint, with that hint's
// numbers, and only for a knob the candidate's point has.
#include <gtest/gtest.h>

#include "diagnosis/diagnosis.h"
#include "diagnosis_test_support.h"

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

double rmsnorm_bytes(int64_t batch) {
  return 4.0 * batch * 4096 + 2.0 * 4096;
}

KnobSuggestion suggestion(std::string knob, KnobDirection direction, std::string reason,
                          std::optional<KnobValue> value = std::nullopt) {
  return {std::move(knob), direction, std::move(value), std::move(reason)};
}

std::string hints_of(const Diagnosis& d) {
  std::string text;
  for (const std::string& hint : d.hints) text += hint + "\n";
  return text;
}

bool some_hint_starts_with(const Diagnosis& d, const std::string& reason) {
  for (const std::string& hint : d.hints)
    if (hint.starts_with(reason)) return true;
  return false;
}

// A memory-bound rmsnorm at 0.7 of copy bandwidth, one kernel of 16384 blocks.
Diagnosis memory_bound(const std::optional<KnobPoint>& knobs) {
  const double median = median_ms_at_bandwidth(rmsnorm_bytes(16384), 0.7, 4000);
  return diagnose(rmsnorm(), rows(16384),
                  gpu_trace(median, {kernel_record("rmsnorm", 16384, 256, 32, 1.0)}),
                  gpu_calibration(), knobs);
}

// A latency-bound rmsnorm (0.3 of copy bandwidth) whose one kernel is limited as given.
Diagnosis occupancy_limited(const std::string& limited_by, const std::optional<KnobPoint>& knobs,
                            int local_bytes = 0) {
  const double median = median_ms_at_bandwidth(rmsnorm_bytes(4096), 0.3, 4000);
  OrderedJson kernel = kernel_record("rmsnorm", 4096, 256, 128, 0.25, limited_by);
  kernel["dynamic_shared_bytes"] = 48 * 1024;
  kernel["local_bytes_per_thread"] = local_bytes;
  return diagnose(rmsnorm(), rows(4096), gpu_trace(median, {kernel}), gpu_calibration(), knobs);
}

// A latency-bound rmsnorm with 64 blocks for 132 SMs.
Diagnosis few_blocks(const KnobPoint& knobs) {
  const double median = median_ms_at_bandwidth(rmsnorm_bytes(2048), 0.45, 4000);
  return diagnose(rmsnorm(), rows(2048),
                  gpu_trace(median, {kernel_record("rmsnorm", 64, 256, 32, 1.0)}),
                  gpu_calibration(), knobs);
}

TEST(DiagnosisSuggestions, NarrowLoadsRaiseVecWithTheHintsNumbers) {
  const Diagnosis d = memory_bound(KnobPoint{{"VEC", int64_t{2}}, {"BLOCK_THREADS", int64_t{256}}});
  ASSERT_EQ(d.bottleneck, Bottleneck::Memory);
  const KnobSuggestion expected =
      suggestion("VEC", KnobDirection::Raise, "loads are 4 bytes wide (VEC=2 of bfloat16)");
  EXPECT_EQ(d.suggestions, std::vector<KnobSuggestion>{expected});
  EXPECT_TRUE(some_hint_starts_with(d, expected.reason)) << hints_of(d);
  EXPECT_EQ(suggestion_text(expected), "raise VEC (loads are 4 bytes wide (VEC=2 of bfloat16))");
  EXPECT_NE(diagnosis_text(d).find("\n  suggestion: raise VEC (loads are 4 bytes wide"),
            std::string::npos)
      << diagnosis_text(d);
}

TEST(DiagnosisSuggestions, NoneWhenTheNumbersOrTheKnobAreMissing) {
  // 16-byte loads already: nothing to raise.
  EXPECT_TRUE(memory_bound(KnobPoint{{"VEC", int64_t{8}}}).suggestions.empty());
  // No knob point, or one without the knob the rule moves.
  EXPECT_TRUE(memory_bound(std::nullopt).suggestions.empty());
  EXPECT_TRUE(memory_bound(KnobPoint{{"BLOCK_THREADS", int64_t{256}}}).suggestions.empty());
  // Registers limit occupancy, but the point has no per-thread cache knob: the hint alone.
  const Diagnosis registers = occupancy_limited("registers", KnobPoint{{"VEC", int64_t{8}}});
  EXPECT_EQ(registers.cause, "occupancy");
  EXPECT_FALSE(registers.hints.empty());
  EXPECT_TRUE(registers.suggestions.empty());
  // Enough occupancy and blocks: the same knobs draw no suggestion.
  const Diagnosis saturated = memory_bound(
      KnobPoint{{"VEC", int64_t{8}}, {"MAX_VECS_PER_THREAD", int64_t{4}}, {"STAGES", int64_t{3}}});
  EXPECT_TRUE(saturated.suggestions.empty());
}

TEST(DiagnosisSuggestions, OccupancyLimitsMoveTheKnobThatSetsThem) {
  const KnobPoint knobs{{"VEC", int64_t{8}},
                        {"MAX_VECS_PER_THREAD", int64_t{4}},
                        {"STAGES", int64_t{4}},
                        {"BLOCK_THREADS", int64_t{128}}};
  const Diagnosis registers = occupancy_limited("registers", knobs);
  EXPECT_EQ(
      registers.suggestions,
      std::vector<KnobSuggestion>{suggestion(
          "MAX_VECS_PER_THREAD", KnobDirection::Lower,
          "theoretical occupancy 0.25 limited by registers (128/thread, 256 threads/block)")});
  EXPECT_TRUE(some_hint_starts_with(registers, registers.suggestions[0].reason))
      << hints_of(registers);

  const Diagnosis shared = occupancy_limited("shared memory", knobs);
  EXPECT_EQ(shared.suggestions,
            std::vector<KnobSuggestion>{suggestion(
                "STAGES", KnobDirection::Lower,
                "theoretical occupancy 0.25 limited by shared memory (48.0 KiB/block)")});
  EXPECT_TRUE(some_hint_starts_with(shared, shared.suggestions[0].reason)) << hints_of(shared);

  const Diagnosis blocks = occupancy_limited("blocks", knobs);
  EXPECT_EQ(blocks.suggestions,
            std::vector<KnobSuggestion>{suggestion("BLOCK_THREADS", KnobDirection::Raise,
                                                   "theoretical occupancy 0.25 limited by the "
                                                   "number of blocks per SM (256 threads/block)")});

  EXPECT_TRUE(occupancy_limited("warps", knobs).suggestions.empty());

  // Two resources that allow no more blocks alike: lowering either alone gains nothing, so the
  // hint says so and no knob is moved.
  const Diagnosis both = occupancy_limited("registers and shared memory", knobs);
  EXPECT_TRUE(both.suggestions.empty());
  EXPECT_TRUE(some_hint_starts_with(
      both,
      "theoretical occupancy 0.25 limited by registers and shared memory alike (128/thread, "
      "48.0 KiB/block, 256 threads/block): lowering one alone gains no block per SM"))
      << hints_of(both);
}

TEST(DiagnosisSuggestions, TooFewBlocksShrinkWhatEachBlockDoes) {
  const std::string reason = "achieved 0.45 of copy bandwidth with 132 SMs and only 64 blocks";
  // Rows per block first; block threads only when a block takes one row.
  EXPECT_EQ(
      few_blocks({{"ROWS_PER_BLOCK", int64_t{4}}, {"BLOCK_THREADS", int64_t{256}}}).suggestions,
      std::vector<KnobSuggestion>{suggestion("ROWS_PER_BLOCK", KnobDirection::Lower, reason)});
  const Diagnosis one_row =
      few_blocks({{"ROWS_PER_BLOCK", int64_t{1}}, {"BLOCK_THREADS", int64_t{256}}});
  EXPECT_EQ(one_row.suggestions,
            std::vector<KnobSuggestion>{suggestion("BLOCK_THREADS", KnobDirection::Lower, reason)});
  EXPECT_TRUE(some_hint_starts_with(one_row, reason + ": more parallelism (BLOCK_THREADS=256"))
      << hints_of(one_row);
  EXPECT_EQ(few_blocks({{"BM", int64_t{128}}, {"BN", int64_t{128}}}).suggestions,
            (std::vector<KnobSuggestion>{suggestion("BM", KnobDirection::Lower, reason),
                                         suggestion("BN", KnobDirection::Lower, reason)}));
  EXPECT_TRUE(few_blocks({{"VEC", int64_t{8}}}).suggestions.empty());
}

TEST(DiagnosisSuggestions, IdleCoresSetThreadsToEveryCore) {
  const Definition def = load_definition(kProblems / "cpu/rmsnorm_f32/definition.json");
  Trace trace;
  trace.clock = "steady_clock";
  const double bytes = 8.0 * 4096 * 4096 + 4.0 * 4096;
  trace.latency_ms = TimingSummary{.samples = 20, .median = median_ms_at_bandwidth(bytes, 0.3, 20)};
  const AxisValues axes{{"batch_size", 4096}, {"hidden_size", 4096}};
  const Diagnosis d =
      diagnose(def, axes, trace, cpu_calibration(), KnobPoint{{"THREADS", int64_t{1}}});
  ASSERT_EQ(d.cause, "parallelism");
  const KnobSuggestion expected =
      suggestion("THREADS", KnobDirection::Set, "THREADS=1 leaves 1 of 2 cores idle", int64_t{0});
  EXPECT_EQ(d.suggestions, std::vector<KnobSuggestion>{expected});
  EXPECT_EQ(suggestion_text(expected), "set THREADS=0 (THREADS=1 leaves 1 of 2 cores idle)");
  // Every core already: not the parallelism cause, so nothing to set.
  EXPECT_TRUE(diagnose(def, axes, trace, cpu_calibration(), KnobPoint{{"THREADS", int64_t{0}}})
                  .suggestions.empty());
}

TEST(DiagnosisSuggestions, SpillsLowerTheRowCacheOncePerKnob) {
  const KnobPoint knobs{{"VEC", int64_t{8}}, {"MAX_VECS_PER_THREAD", int64_t{8}}};
  const Diagnosis spilling = memory_bound(knobs);
  EXPECT_TRUE(spilling.suggestions.empty());  // no local memory yet

  const double median = median_ms_at_bandwidth(rmsnorm_bytes(16384), 0.7, 4000);
  OrderedJson kernel = kernel_record("rmsnorm", 16384, 256, 255, 1.0);
  kernel["local_bytes_per_thread"] = 96;
  const Diagnosis spills =
      diagnose(rmsnorm(), rows(16384), gpu_trace(median, {kernel}), gpu_calibration(), knobs);
  EXPECT_EQ(spills.suggestions,
            std::vector<KnobSuggestion>{suggestion("MAX_VECS_PER_THREAD", KnobDirection::Lower,
                                                   "96 bytes of local memory per thread")});

  // Registers and spills both back lowering the cache: one suggestion, the first rule's.
  const Diagnosis both = occupancy_limited("registers", knobs, 64);
  ASSERT_EQ(both.suggestions.size(), 1u);
  EXPECT_EQ(both.suggestions[0].reason,
            "theoretical occupancy 0.25 limited by registers (128/thread, 256 threads/block)");
  EXPECT_EQ(both.hints.size(), 2u) << hints_of(both);
}

}  // namespace
}  // namespace kernelarc
