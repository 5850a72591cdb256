// Which matmuls of a fused plan may take cuBLASLt's route (synth/library_matmul.h), in which
// form, and the epilogue kernel added for the others: on the plans of tests/data/fused_cuda and
// on variants that must keep the generated kernel only.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/problem.h"
#include "synth/kernel_plan.h"
#include "synth/library_matmul.h"

namespace kernelarc {
namespace {

const std::filesystem::path kData = std::filesystem::path(KERNELARC_SOURCE_DIR) / "tests/data";

OrderedJson plan_json(const std::string& problem) {
  return load_definition(kData / problem / "definition.json").ext.op_params;
}

LibraryPlan routes_of(const OrderedJson& json) {
  return with_library_matmuls(parse_kernel_plan(json, "test"));
}

bool mentions(const PlanExpr& e, const std::string& op, const std::string& text = "") {
  if (e.op == op && (text.empty() || e.text == text)) return true;
  for (const PlanExpr& arg : e.args)
    if (mentions(arg, op, text)) return true;
  return false;
}

TEST(LibraryMatmul, WritesAPlainProductDirectly) {
  const LibraryPlan library = routes_of(plan_json("fused_cuda/mm_f32"));
  ASSERT_EQ(library.matmuls.size(), 1u);
  const LibraryMatmul& route = library.matmuls[0];
  EXPECT_EQ(route.d.buffer, "c");
  EXPECT_FALSE(route.c);
  EXPECT_FALSE(route.epilogue);
  EXPECT_EQ(route.alpha, 1.0);
  EXPECT_EQ(library.plan.kernels.size(), 1u);
  EXPECT_EQ(library.own_kernels, 1u);
}

TEST(LibraryMatmul, TakesAResidualAsCAndALiteralAsAlpha) {
  const LibraryPlan residual = routes_of(plan_json("fused_cuda/mm_residual_kn_bf16"));
  ASSERT_EQ(residual.matmuls.size(), 1u);
  ASSERT_TRUE(residual.matmuls[0].c);
  EXPECT_EQ(residual.matmuls[0].c->buffer, "r");
  EXPECT_EQ(residual.matmuls[0].d.buffer, "out");
  EXPECT_FALSE(residual.matmuls[0].epilogue);

  const LibraryPlan scaled = routes_of(plan_json("fused_cuda/bmm_scaled_transposed_f16"));
  ASSERT_EQ(scaled.matmuls.size(), 1u);
  EXPECT_EQ(scaled.matmuls[0].alpha, 0.125);
  EXPECT_FALSE(scaled.matmuls[0].c);
  EXPECT_FALSE(scaled.matmuls[0].epilogue);
}

// A bias broadcast over the rows (a linear layer's) is no C for cuBLASLt, which reads C with D's
// layout: as C it was refused at run time, and the plan's own kernel ran instead of the library.
TEST(LibraryMatmul, ABiasBroadcastOverRowsGoesThroughTheEpilogueNotAsC) {
  OrderedJson json = plan_json("fused_cuda/mm_residual_kn_bf16");
  json["kernels"][0]["loads"]["r"]["strides"] = OrderedJson::parse(R"(["n", "1"])");
  json["kernels"][0]["loads"]["r"]["coords"] = OrderedJson::parse(R"([["idx", 0], ["idx", 2]])");
  const LibraryPlan library = routes_of(json);
  ASSERT_EQ(library.matmuls.size(), 1u);
  const LibraryMatmul& route = library.matmuls[0];
  EXPECT_FALSE(route.c);
  EXPECT_NE(route.d.buffer, "out");  // the float32 product temp
  ASSERT_TRUE(route.epilogue);
  EXPECT_NE(library.plan.kernels.at(*route.epilogue).find_load("r"), nullptr);
}

TEST(LibraryMatmul, AStoreThatDoesNotReadTheProductLeavesTheProductDirect) {
  // A decoder block's residual sum, fused into the down projection's kernel because its shape
  // fits there: the product still goes straight to its output, and the sum to a kernel of its
  // own, with no float32 product temp.
  OrderedJson json = plan_json("fused_cuda/mm_residual_kn_bf16");
  json["buffers"].push_back(
      {{"name", "copy"}, {"kind", "output"}, {"index", 1}, {"dtype", "bfloat16"}});
  OrderedJson copy = json["kernels"][0]["stores"][0];
  copy["buffer"] = "copy";
  copy["value"] = OrderedJson::parse(R"(["load", "r"])");
  json["kernels"][0]["stores"].push_back(copy);
  const LibraryPlan library = routes_of(json);
  ASSERT_EQ(library.matmuls.size(), 1u);
  const LibraryMatmul& route = library.matmuls[0];
  EXPECT_EQ(route.d.buffer, "out");
  ASSERT_TRUE(route.c);
  EXPECT_EQ(route.c->buffer, "r");
  EXPECT_EQ(library.plan.buffers.size(), json["buffers"].size());  // no product temp
  ASSERT_TRUE(route.epilogue);
  const PlanKernel& others = library.plan.kernels.at(*route.epilogue);
  EXPECT_EQ(others.kind, PlanKernelKind::Pointwise);
  ASSERT_EQ(others.stores.size(), 1u);
  EXPECT_EQ(others.stores[0].access.buffer, "copy");
  EXPECT_EQ(others.find_load("ka_product"), nullptr);
  // The generated kernel, for shapes cuBLASLt does not take, still writes both.
  EXPECT_EQ(library.plan.kernels[0].stores.size(), 2u);
}

TEST(LibraryMatmul, MovesOtherEpiloguesIntoAPointwiseKernelOverTheProduct) {
  const KernelPlan original = parse_kernel_plan(plan_json("fused_cuda/bmm_bias_gelu_bf16"), "t");
  const LibraryPlan library = with_library_matmuls(original);
  ASSERT_EQ(library.matmuls.size(), 1u);
  const LibraryMatmul& route = library.matmuls[0];
  ASSERT_TRUE(route.epilogue);
  EXPECT_EQ(*route.epilogue, 1u);
  EXPECT_EQ(library.own_kernels, 1u);
  ASSERT_EQ(library.plan.buffers.size(), original.buffers.size() + 1);
  const PlanBuffer& product = library.plan.buffers.back();
  EXPECT_EQ(product.kind, PlanBufferKind::Temp);
  EXPECT_EQ(product.dtype, DType::Float32);
  EXPECT_EQ(route.d.buffer, product.name);
  EXPECT_EQ(route.d.strides, (std::vector<std::string>{"(n) * (m)", "(n)", "1"}));

  const PlanKernel& epilogue = library.plan.kernels[1];
  EXPECT_EQ(epilogue.kind, PlanKernelKind::Pointwise);
  EXPECT_EQ(epilogue.domain, (std::vector<std::string>{"batch", "m", "n"}));
  ASSERT_EQ(epilogue.stores.size(), 1u);
  EXPECT_FALSE(mentions(epilogue.stores[0].value, "acc"));
  EXPECT_TRUE(mentions(epilogue.stores[0].value, "load", "ka_product"));
  EXPECT_TRUE(mentions(epilogue.stores[0].value, "gelu"));
  EXPECT_NE(epilogue.find_load("bias"), nullptr);
  // The matmul itself is untouched: the generated kernel still computes the whole epilogue.
  EXPECT_TRUE(mentions(library.plan.kernels[0].stores[0].value, "acc"));
}

TEST(LibraryMatmul, AnIm2colConvolutionReadsPlainOperandsAndWritesThroughTheEpilogue) {
  // conv2d as the lowering writes it: a pointwise kernel stores col, the matmul reads the
  // weight as [C_out, K] and col as [K, P] (plain strides: the route takes it), and stores the
  // output [n, C_out, P] as plain strides too (the plan's simplification put the positions'
  // floordiv/mod back together); the bias, broadcast over P, is no C for cuBLASLt, so the product
  // and its bias go through the epilogue kernel.
  const KernelPlan original =
      parse_kernel_plan(plan_json("fused_cuda/conv2d_strided_bias_f32"), "t");
  ASSERT_EQ(original.kernels.size(), 2u);
  const PlanKernel& matmul = original.kernels[1];
  ASSERT_EQ(matmul.kind, PlanKernelKind::Matmul);
  EXPECT_TRUE(is_affine_access(matmul.a));
  EXPECT_TRUE(is_affine_access(matmul.b));
  EXPECT_EQ(matmul.b.buffer, original.kernels[0].stores[0].access.buffer);
  EXPECT_TRUE(is_affine_access(matmul.stores[0].access));
  const LibraryPlan library = with_library_matmuls(original);
  ASSERT_EQ(library.matmuls.size(), 1u);
  const LibraryMatmul& route = library.matmuls[0];
  EXPECT_EQ(route.kernel, 1u);
  ASSERT_TRUE(route.epilogue);
  EXPECT_EQ(library.plan.buffers.back().name, route.d.buffer);
  EXPECT_EQ(library.plan.buffers.back().dtype, DType::Float32);
  const PlanKernel& epilogue = library.plan.kernels.at(*route.epilogue);
  EXPECT_TRUE(mentions(epilogue.stores[0].value, "load", "ka_product"));
  EXPECT_NE(epilogue.find_load("bias_0"), nullptr);
}

TEST(LibraryMatmul, KeepsTheGeneratedKernelForGathersAndFloat64) {
  OrderedJson gather = plan_json("fused_cuda/mm_f32");
  gather["kernels"][0]["a"]["coords"][0] = OrderedJson::parse(R"(["mod", ["idx", 0], ["i", 7]])");
  EXPECT_TRUE(routes_of(gather).matmuls.empty());

  OrderedJson wide = plan_json("fused_cuda/mm_f32");
  for (auto& buffer : wide["buffers"]) buffer["dtype"] = "float64";
  const LibraryPlan f64 = routes_of(wide);
  EXPECT_TRUE(f64.matmuls.empty());
  EXPECT_EQ(f64.plan.kernels.size(), 1u);
}

TEST(LibraryMatmul, AFloat32ProductIntoBFloat16GoesThroughTheEpilogue) {
  // cuBLASLt multiplies float32 into float32 only: a bfloat16 destination needs the pass.
  OrderedJson narrowing = plan_json("fused_cuda/mm_f32");
  narrowing["buffers"][2]["dtype"] = "bfloat16";
  const LibraryPlan library = routes_of(narrowing);
  ASSERT_EQ(library.matmuls.size(), 1u);
  EXPECT_TRUE(library.matmuls[0].epilogue);
}

}  // namespace
}  // namespace kernelarc
