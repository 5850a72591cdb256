// Family "fused": kernel plans (docs/RECOGNITION.md §2) parsed, checked against their
// definitions and generated into CPU headers that compile with the template; malformed plans are
// rejected with the field path of the fault.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "../core/test_support.h"
#include "binder_test_support.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "core/problem.h"
#include "source_dir.h"
#include "synth/bound_template.h"
#include "synth/family.h"
#include "synth/family_fused.h"
#include "synth/kernel_plan.h"

namespace kernelarc {
namespace {

const std::filesystem::path kData = kSource / "tests/data/fused";

KernelTemplate cpu_template() {
  return testing::stub_template("fused_cpu", {"fused"}, "cpu", TemplateBuild::SharedObject);
}

Definition definition_of(const std::string& problem) {
  return load_definition(kData / problem / "definition.json");
}

// The message of the TemplateMismatch binding `def` raises ("" when it binds).
std::string bind_error(const Definition& def) {
  try {
    make_fused_binder()->bind(def, cpu_template());
  } catch (const TemplateMismatch& error) {
    return error.what();
  }
  return "";
}

// The softmax problem with its plan edited by `edit`.
template <typename Edit>
std::string error_after(const Edit& edit) {
  Definition def = definition_of("softmax_two_stage");
  edit(def.ext.op_params);
  return bind_error(def);
}

class FusedPlanCompile : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedPlanCompile, HeaderCompilesWithTheCpuTemplate) {
  const Definition def = definition_of(GetParam());
  const FamilyBinding binding = make_fused_binder()->bind(def, cpu_template());
  EXPECT_TRUE(testing::contains(binding.header, "inline const char* ka_bind("));
  EXPECT_TRUE(
      testing::contains(binding.header, "inline const char* ka_plan_run(const KaArgs& ka)"));
  const testing::TempDir dir;
  dir.write("ka_problem.h", binding.header);
  const std::string command =
      "c++ -std=c++20 -fsyntax-only -Wall -Werror -Wno-unknown-pragmas -fopenmp -I" +
      dir.path().string() + " -I" + (kSource / "templates/cpu/fused").string() + " -I" +
      (kSource / "templates/common").string() + " -I" + (kSource / "include").string() + " " +
      (kSource / "templates/cpu/fused/main.cpp").string() + " 2> " + (dir / "log").string();
  EXPECT_EQ(std::system(command.c_str()), 0)
      << command << "\n"
      << read_text_file(dir / "log") << "\n--- ka_problem.h ---\n"
      << binding.header;
}

INSTANTIATE_TEST_SUITE_P(Problems, FusedPlanCompile,
                         ::testing::Values("pointwise_bcast_bf16", "softmax_two_stage",
                                           "argmax_middle", "mse_scalar",
                                           "cumsum_reverse_exclusive", "bmm_bias_relu",
                                           "cross_entropy_gather", "wrong_stride",
                                           "scatter_index_add", "topk_route"));

TEST(FusedBinder, NamesTheWorkspaceOfItsTemps) {
  const FamilyBinding binding =
      make_fused_binder()->bind(definition_of("cross_entropy_gather"), cpu_template());
  EXPECT_EQ(binding.sizes.at("WORKSPACE_BYTES"), "(((N) * 4 + 255) // 256 * 256)");
  EXPECT_EQ(evaluate_expr(binding.sizes.at("WORKSPACE_BYTES"), {{"N", 65}, {"C", 3}}), 512);
  EXPECT_EQ(make_fused_binder()
                ->bind(definition_of("mse_scalar"), cpu_template())
                .sizes.at("WORKSPACE_BYTES"),
            "0");
}

TEST(FusedBinder, InstantiatedSolutionDeclaresTheWorkspaceOverAxes) {
  const std::vector<KernelTemplate> library = load_template_library(kSource / "templates");
  const Problem problem = load_problem(kData / "cross_entropy_gather");
  const auto matches = match_templates(library, problem, DeviceKind::Cpu);
  ASSERT_EQ(matches.size(), 1u);
  ASSERT_TRUE(matches[0].bound) << matches[0].reason;
  const BoundTemplate& bound = *matches[0].bound;
  const Solution solution = bound.instantiate(bound.space().space().default_point());
  const std::string workspace = solution.ext.at("workspace_bytes").get<std::string>();
  EXPECT_EQ(evaluate_expr(workspace, {{"N", 100}, {"C", 1000}}), 512);
}

TEST(FusedPlan, RejectsCoordsThatDoNotMatchStrides) {
  const std::string error =
      error_after([](OrderedJson& plan) { plan["kernels"][0]["stores"][0]["coords"].erase(1); });
  EXPECT_TRUE(testing::contains(
      error, "kernelarc.op_params.kernels[0].stores[0].coords: expected 2 entries, got 1"))
      << error;
}

TEST(FusedPlan, RejectsAnUnknownOperator) {
  const std::string error =
      error_after([](OrderedJson& plan) { plan["kernels"][0]["stages"][1]["value"][0] = "expo"; });
  EXPECT_TRUE(testing::contains(error, "kernels[0].stages[1].value[0]: unknown operator \"expo\""))
      << error;
}

TEST(FusedPlan, RejectsAStageUsedBeforeItIsComputed) {
  const std::string error = error_after([](OrderedJson& plan) {
    plan["kernels"][0]["stages"][0]["value"] = OrderedJson::parse(R"(["stage", "s"])");
  });
  EXPECT_TRUE(testing::contains(error, "kernels[0].stages[0].value[1]: no stage \"s\"")) << error;
}

TEST(FusedPlan, RejectsAKeepStoreThatUsesAReducedDim) {
  const std::string error =
      error_after([](OrderedJson& plan) { plan["kernels"][0]["stores"][0]["over"] = "keep"; });
  EXPECT_TRUE(testing::contains(error,
                                "kernels[0].stores[0].coords[1]: [\"idx\", 1] is not "
                                "available here"))
      << error;
}

TEST(FusedPlan, RejectsAnUnknownLoadAndAFloatCoord) {
  EXPECT_TRUE(testing::contains(
      error_after([](OrderedJson& plan) { plan["kernels"][0]["stages"][0]["value"][1] = "y"; }),
      "kernels[0].stages[0].value[1]: no load \"y\""));
  EXPECT_TRUE(testing::contains(error_after([](OrderedJson& plan) {
                                  plan["kernels"][0]["loads"]["x"]["coords"][1] =
                                      OrderedJson::parse(R"(["f", 1.5])");
                                }),
                                "kernels[0].loads.x.coords[1]: expected an integer expression"));
}

TEST(FusedPlan, RejectsAnIndexOutsideTheKernel) {
  const std::string error = error_after([](OrderedJson& plan) {
    plan["kernels"][0]["loads"]["x"]["coords"][1] = OrderedJson::parse(R"(["idx", 2])");
  });
  EXPECT_TRUE(testing::contains(error, "kernels[0].loads.x.coords[1][1]: dimension 2 is outside"))
      << error;
}

TEST(FusedBinder, RejectsADtypeOtherThanTheDefinitions) {
  const std::string error =
      error_after([](OrderedJson& plan) { plan["buffers"][1]["dtype"] = "bfloat16"; });
  EXPECT_TRUE(testing::contains(
      error, "kernelarc.op_params.buffers[1].dtype: output y is float32 in the definition"))
      << error;
}

TEST(FusedBinder, RejectsAMissingOutputAndAnUnknownAxis) {
  EXPECT_TRUE(
      testing::contains(error_after([](OrderedJson& plan) { plan["buffers"][1]["kind"] = "temp"; }),
                        "kernelarc.op_params.buffers[1]"));
  EXPECT_TRUE(testing::contains(
      error_after([](OrderedJson& plan) { plan["kernels"][0]["domain"][0] = "rowz"; }),
      "kernelarc.op_params.kernels[0].domain[0]: \"rowz\""));
}

TEST(FusedBinder, RejectsAnAccessBeyondItsBuffer) {
  const std::string error = error_after(
      [](OrderedJson& plan) { plan["kernels"][0]["loads"]["x"]["strides"][0] = "cols + 1"; });
  EXPECT_TRUE(testing::contains(error, "kernels[0].loads.x: reaches element")) << error;
}

// The scatter plan (tests/data/fused/scatter_index_add: a copy, then an accumulating and a
// writing scatter) with its kernels[1] edited by `edit`; "" when it binds.
template <typename Edit>
std::string scatter_error_after(const Edit& edit) {
  Definition def = definition_of("scatter_index_add");
  edit(def.ext.op_params["kernels"][1]);
  return bind_error(def);
}

TEST(FusedPlan, AcceptsAScatterKernelAndGeneratesItsRangeCheck) {
  const Definition def = definition_of("scatter_index_add");
  const KernelPlan plan = parse_kernel_plan(def.ext.op_params, "definition.json");
  ASSERT_EQ(plan.kernels.size(), 3u);
  EXPECT_EQ(plan.kernels[1].kind, PlanKernelKind::Scatter);
  EXPECT_TRUE(plan.kernels[1].accumulate);
  EXPECT_FALSE(plan.kernels[2].accumulate);
  const FamilyBinding binding = make_fused_binder()->bind(def, cpu_template());
  // The destination row comes from idx: its address is checked against the output's size.
  EXPECT_TRUE(
      testing::contains(binding.header, "ka_at >= (((1LL * ka_axis_rows) * ka_axis_hidden))"))
      << binding.header;
  EXPECT_TRUE(testing::contains(binding.header, "if (const char* ka_error = ka_kernel_1(ka))"));
}

TEST(FusedPlan, RejectsAScatterWithoutAccumulateOrWithAStageOrAnIndexOutsideIt) {
  EXPECT_TRUE(testing::contains(
      scatter_error_after([](OrderedJson& kernel) { kernel.erase("accumulate"); }),
      "kernelarc.op_params.kernels[1].accumulate: missing required field"));
  EXPECT_TRUE(testing::contains(
      scatter_error_after([](OrderedJson& kernel) { kernel["accumulate"] = "yes"; }),
      "kernelarc.op_params.kernels[1].accumulate"));
  EXPECT_TRUE(testing::contains(
      scatter_error_after([](OrderedJson& kernel) { kernel["stages"] = OrderedJson::array(); }),
      "kernelarc.op_params.kernels[1]"));
  const std::string error = scatter_error_after([](OrderedJson& kernel) {
    kernel["stores"][0]["coords"][1] = OrderedJson::parse(R"(["idx", 2])");
  });
  EXPECT_TRUE(testing::contains(error, "kernels[1].stores[0].coords[1][1]: dimension 2 is outside"))
      << error;
}

TEST(FusedPlan, RejectsAScatterIntoAnInput) {
  const std::string error =
      scatter_error_after([](OrderedJson& kernel) { kernel["stores"][0]["buffer"] = "x"; });
  EXPECT_TRUE(testing::contains(error, "kernels[1].stores[0].buffer: \"x\" is an input")) << error;
}

TEST(FusedBinder, ASizeOverAVarAxisNoShapeGivesIsRejectedNamingTheField) {
  // rows = batch_size * seq_len sizes the tensors; batch_size alone has no value at run time.
  const std::string error = scatter_error_after(
      [](OrderedJson& kernel) { kernel["domain"][0] = "batch_size * seq_len * top_k"; });
  EXPECT_TRUE(testing::contains(error,
                                "kernelarc.op_params.kernels[1].domain[0]: \"batch_size * seq_len "
                                "* top_k\" names axis batch_size, which no tensor's shape gives"))
      << error;
}

// A topk plan (the 4 largest of rows of 16) with its only kernel edited by `edit`: the message
// of the InputError parsing it raises, "" when it parses.
template <typename Edit>
std::string topk_parse_error_after(const Edit& edit) {
  OrderedJson plan = OrderedJson::parse(R"({"version": 1,
    "buffers": [{"name": "x", "kind": "input", "index": 0, "dtype": "float32"},
                {"name": "at", "kind": "output", "index": 0, "dtype": "int64"}],
    "kernels": [{"kind": "topk", "domain": ["rows"], "extent": "16", "k": "4", "largest": true,
      "loads": {"x": {"buffer": "x", "offset": "0", "strides": ["16", "1"],
                      "coords": [["idx", 0], ["idx", 1]]}},
      "value": ["load", "x"],
      "stores": [{"buffer": "at", "offset": "0", "strides": ["4", "1"],
                  "coords": [["idx", 0], ["idx", 1]], "value": ["topk_index"]}]}]})");
  edit(plan["kernels"][0]);
  try {
    const KernelPlan parsed = parse_kernel_plan(plan, "definition.json");
    EXPECT_EQ(parsed.kernels[0].kind, PlanKernelKind::Topk);
    EXPECT_EQ(parsed.kernels[0].rank(), 2);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(FusedPlan, AcceptsATopkKernelAndTypesItsIndexAsAnInteger) {
  EXPECT_EQ(topk_parse_error_after([](OrderedJson&) {}), "");
  // An int64 buffer takes ["topk_index"]; ["topk_value"] of a float row would be a float.
  EXPECT_EQ(topk_parse_error_after([](OrderedJson& kernel) {
              kernel["stores"][0]["coords"][0] = OrderedJson::parse(R"(["topk_index"])");
            }),
            "");
  EXPECT_TRUE(testing::contains(topk_parse_error_after([](OrderedJson& kernel) {
                                  kernel["stores"][0]["coords"][0] =
                                      OrderedJson::parse(R"(["topk_value"])");
                                }),
                                "kernels[0].stores[0].coords[0]: expected an integer expression"));
}

TEST(FusedPlan, RejectsATopkWithoutLargestOrSelectingMoreThanItsRow) {
  EXPECT_TRUE(testing::contains(
      topk_parse_error_after([](OrderedJson& kernel) { kernel.erase("largest"); }),
      "kernelarc.op_params.kernels[0].largest: missing required field"));
  const std::string error = topk_parse_error_after([](OrderedJson& kernel) { kernel["k"] = "17"; });
  EXPECT_TRUE(testing::contains(error, "kernels[0].k: selects 17 elements of rows of 16")) << error;
}

TEST(FusedPlan, RejectsTheSelectedElementOutsideATopksStores) {
  const std::string error = topk_parse_error_after(
      [](OrderedJson& kernel) { kernel["value"] = OrderedJson::parse(R"(["topk_value"])"); });
  EXPECT_TRUE(testing::contains(
      error, "kernels[0].value: [\"topk_value\"] is only available in the stores of a topk"))
      << error;
}

TEST(FusedPlan, ATopkKernelIsWrittenForTheCpuAndForCuda) {
  const Definition def = definition_of("topk_route");
  const FamilyBinding binding = make_fused_binder()->bind(def, cpu_template());
  EXPECT_TRUE(testing::contains(binding.header, "std::partial_sort(ka_pairs.begin()"))
      << binding.header;
  EXPECT_TRUE(testing::contains(binding.header, "if (const char* ka_error = ka_kernel_1(ka))"));
  const FamilyBinding cuda = make_fused_binder()->bind(
      def, testing::stub_template("fused_cuda", {"fused"}, "cuda", TemplateBuild::SharedObject));
  // The largest of each row, an error from the launch (k beyond the row) named by its kernel.
  EXPECT_TRUE(testing::contains(cuda.header, "static constexpr bool kLargest = true;"))
      << cuda.header;
  EXPECT_TRUE(testing::contains(cuda.header,
                                "if (const char* why = ka_launch_topk<KaKernel1, BLOCK_THREADS>"));
  EXPECT_TRUE(testing::contains(cuda.header, "\"kernels[1] (topk): %s\""));
}

}  // namespace
}  // namespace kernelarc
