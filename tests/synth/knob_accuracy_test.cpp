// Knob values that trade accuracy the reference keeps: marked in the spec (never the default),
// named for a point, left out by keeping_accuracy(), carried by the instantiated solution; the
// shipped library marks exactly the FP8 GEMMs' unpromoted accumulation.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "../core/test_support.h"
#include "synth/bound_template.h"
#include "synth/constrained_space.h"
#include "synth/kernel_template.h"

namespace kernelarc {
namespace {

using testing::input_error_of;

const std::filesystem::path kSource = KERNELARC_SOURCE_DIR;

KnobSpace space_with_fast_math() {
  return parse_knob_space(R"({"knobs": {
      "TILE": {"type": "int_set", "values": [16, 32, 64]},
      "FAST": {"type": "bool", "default": false,
               "trades_accuracy": {"values": [true], "note": "approximate exp"}},
      "MODE": {"type": "enum", "values": ["exact", "half", "quarter"],
               "trades_accuracy": {"values": ["quarter", "half"], "note": "narrow sums"}}},
    "constraints": ["TILE * (1 + FAST) <= 64"]})",
                          "k.json");
}

TEST(KnobAccuracy, SpecMarksValuesOfEveryType) {
  const KnobSpace space = space_with_fast_math();
  const Knob& tile = space.knobs()[0];
  const Knob& fast = space.knobs()[1];
  const Knob& mode = space.knobs()[2];
  EXPECT_TRUE(tile.accuracy_trades().empty());
  EXPECT_EQ(fast.accuracy_trades(), (std::vector<uint64_t>{1}));
  EXPECT_FALSE(fast.trades_accuracy_at(0));
  EXPECT_TRUE(fast.trades_accuracy_at(1));
  EXPECT_EQ(fast.accuracy_note(), "approximate exp");
  // Indices ascending whatever the order written.
  EXPECT_EQ(mode.accuracy_trades(), (std::vector<uint64_t>{1, 2}));
}

TEST(KnobAccuracy, SpecErrorsNameTheField) {
  const auto error_of = [](const std::string& knob) {
    return input_error_of([&] { parse_knob_space(R"({"knobs": {"F": )" + knob + "}}", "k.json"); });
  };
  EXPECT_EQ(error_of(R"({"type": "bool", "trades_accuracy": {"values": [1], "note": "n"}})"),
            "k.json: knobs.F.trades_accuracy.values[0]: expected boolean, got integer 1");
  EXPECT_EQ(error_of(R"({"type": "bool", "trades_accuracy": {"values": [false], "note": "n"}})"),
            "k.json: knobs.F.trades_accuracy.values: the default 0 cannot trade accuracy: the "
            "default point is the like-for-like one");
  EXPECT_EQ(error_of(R"({"type": "int_set", "values": [1, 2],
                         "trades_accuracy": {"values": [2, 3], "note": "n"}})"),
            "k.json: knobs.F.trades_accuracy.values[1]: expected one of 1, 2, got 3");
  EXPECT_EQ(error_of(R"({"type": "int_set", "values": [1, 2, 3],
                         "trades_accuracy": {"values": [2, 2], "note": "n"}})"),
            "k.json: knobs.F.trades_accuracy.values[1]: duplicate value 2");
  EXPECT_EQ(error_of(R"({"type": "enum", "values": ["a", "b"],
                         "trades_accuracy": {"values": ["b"]}})"),
            "k.json: knobs.F.trades_accuracy.note: missing required field");
  EXPECT_EQ(error_of(R"({"type": "bool", "trades_accuracy": {"values": [], "note": "n"}})"),
            "k.json: knobs.F.trades_accuracy.values: expected at least one value");
  EXPECT_EQ(error_of(R"({"type": "bool", "trades_accuracy": true})"),
            "k.json: knobs.F.trades_accuracy: expected object, got boolean true");
  EXPECT_EQ(
      error_of(R"({"type": "bool", "trades_accuracy": {"values": [true], "note": "n", "x": 1}})"),
      "k.json: knobs.F.trades_accuracy.x: unknown field (expected one of values, note)");
}

TEST(KnobAccuracy, PointsAreNamedAndKeepingAccuracyLeavesThemOut) {
  const KnobSpace space = space_with_fast_math();
  const KnobPoint exact{{"TILE", int64_t{16}}, {"FAST", int64_t{0}}, {"MODE", "exact"}};
  KnobPoint traded = exact;
  traded["FAST"] = int64_t{1};
  traded["MODE"] = "half";
  EXPECT_TRUE(space.accuracy_trades(exact).empty());
  EXPECT_EQ(space.accuracy_trades(traded),
            (std::vector<std::string>{"FAST=1: approximate exp", "MODE=half: narrow sums"}));

  const KnobSpace kept = space.keeping_accuracy();
  EXPECT_EQ(kept.constraints(), (std::vector<std::string>{"TILE * (1 + FAST) <= 64", "FAST != 1",
                                                          "MODE != 1", "MODE != 2"}));
  const ConstrainedSpace all(space, {});
  const ConstrainedSpace like_for_like(kept, {});
  EXPECT_TRUE(like_for_like.satisfies(exact));
  EXPECT_FALSE(like_for_like.satisfies(traded));
  std::size_t count = 0;
  like_for_like.for_each_valid([&](const KnobPoint& point) {
    EXPECT_TRUE(space.accuracy_trades(point).empty()) << format_knob_point(point);
    ++count;
    return true;
  });
  EXPECT_EQ(count, 3u);  // TILE 16, 32, 64 at FAST=0, MODE=exact
  // The marks survive: a report of a kept space's point still reads them.
  EXPECT_EQ(kept.knobs()[1].accuracy_trades(), (std::vector<uint64_t>{1}));
}

TEST(KnobAccuracy, ShippedLibraryMarksTheUnpromotedFp8Accumulation) {
  std::map<std::string, std::set<std::string>> marked;
  for (const KernelTemplate& kernel : load_template_library(kSource / "templates"))
    for (const Knob& knob : kernel.knobs.knobs())
      for (const uint64_t index : knob.accuracy_trades())
        marked[kernel.name].insert(knob.name() + "=" + knob_value_text(knob.value_at(index)));
  // A new accuracy-trading knob is a deliberate change: add it here.
  EXPECT_EQ(marked,
            (std::map<std::string, std::set<std::string>>{
                {"scaled_gemm_cublaslt", {"FAST_ACCUM=1"}}, {"scaled_gemm_wgmma", {"PROMOTE=0"}}}));
}

TEST(KnobAccuracy, TheSolutionCarriesTheTradeAndKeepAccuracyRefusesIt) {
  std::vector<KernelTemplate> library = load_template_library(kSource / "templates");
  const KernelTemplate* cublaslt = nullptr;
  for (const KernelTemplate& kernel : library)
    if (kernel.name == "scaled_gemm_cublaslt") cublaslt = &kernel;
  ASSERT_NE(cublaslt, nullptr);
  const Problem problem = load_problem(kSource / "problems/cuda/fp8_gemm_rowwise_bf16_n7168_k2048");
  const BoundTemplate bound(*cublaslt, problem);
  const KnobPoint fast = cublaslt->knobs.default_with({{"FAST_ACCUM", int64_t{1}}});
  const Solution traded = bound.instantiate(fast, {});
  ASSERT_EQ(solution_accuracy_trades(traded).size(), 1u);
  EXPECT_EQ(solution_accuracy_trades(traded)[0].rfind("FAST_ACCUM=1: fast accumulation", 0), 0u)
      << solution_accuracy_trades(traded)[0];
  EXPECT_TRUE(
      solution_accuracy_trades(bound.instantiate(cublaslt->knobs.default_point(), {})).empty());
  // Written and read back with the solution.
  const Solution read = parse_solution(solution_to_json(traded), "s.json", {});
  EXPECT_EQ(solution_accuracy_trades(read), solution_accuracy_trades(traded));
  OrderedJson malformed = solution_to_json(traded);
  malformed["kernelarc"]["trades_accuracy"] = 1;
  EXPECT_EQ(input_error_of([&] { parse_solution(malformed, "s.json", {}); }),
            "s.json: kernelarc.trades_accuracy: expected array of strings, got integer 1");

  keep_accuracy(library);
  for (const KernelTemplate& kernel : library) {
    if (kernel.name != "scaled_gemm_cublaslt") continue;
    const BoundTemplate kept(kernel, problem);
    EXPECT_NE(input_error_of([&] {
                kept.instantiate(fast, {});
              }).find("fails the constraint \"FAST_ACCUM != 1\""),
              std::string::npos);
    EXPECT_TRUE(kept.space().satisfies(kernel.knobs.default_point()));
  }
}

}  // namespace
}  // namespace kernelarc
