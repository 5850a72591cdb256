// The transpose binder: a 2-D tensor and its transposed output bind to a header that moves raw
// element bits; anything else is rejected naming the field.
#include <gtest/gtest.h>

#include <string>

#include "../core/test_support.h"
#include "binder_test_support.h"
#include "synth/family.h"

namespace kernelarc {
namespace {

using testing::contains;

using testing::input_error_of;

KernelTemplate transpose_template(const std::string& target = "cuda",
                                  TemplateBuild build = TemplateBuild::Nvrtc) {
  return testing::stub_template("transpose_test", {"transpose"}, target, build);
}

Definition make_definition(const OrderedJson& inputs, const OrderedJson& outputs,
                           const OrderedJson& op_params = OrderedJson::object()) {
  OrderedJson json = {
      {"name", "transpose_case"},
      {"op_type", "transpose"},
      {"axes", {{"R", {{"type", "var"}}}, {"C", {{"type", "const"}, {"value", 64}}}}},
      {"inputs", inputs},
      {"outputs", outputs},
      {"reference", "def run(x):\n    pass\n"},
      {"kernelarc", {{"op_family", "transpose"}, {"op_params", op_params}}}};
  return parse_definition(json, "transpose_case.json");
}

OrderedJson tensor(const std::vector<std::string>& shape, const std::string& dtype = "bfloat16") {
  return {{"shape", shape}, {"dtype", dtype}};
}

TEST(TransposeBinder, BindsTheBuiltInProblemAsRawBits) {
  const Definition def = load_definition(std::string(KERNELARC_SOURCE_DIR) +
                                         "/problems/cuda/transpose_bf16_h7168/definition.json");
  const FamilyBinding binding = make_transpose_binder()->bind(def, transpose_template());
  EXPECT_EQ(binding.sizes.at("ROWS"), "num_tokens");
  EXPECT_EQ(binding.sizes.at("COLS"), "hidden_size");
  EXPECT_EQ(binding.constants.at("ELEM_BYTES"), 2);
  EXPECT_TRUE(contains(binding.header, "typedef unsigned short KaElem;  // bfloat16"));
  EXPECT_TRUE(contains(binding.header,
                       "#define KA_ARGS (KaArgs{ka_in_x, ka_out_output, ka_axis_num_tokens, "
                       "ka_axis_hidden_size})"));
  const std::string f64 = make_transpose_binder()
                              ->bind(make_definition({{"x", tensor({"R", "C"}, "float64")}},
                                                     {{"y", tensor({"C", "R"}, "float64")}}),
                                     transpose_template())
                              .header;
  EXPECT_TRUE(contains(f64, "typedef unsigned long long KaElem;  // float64"));
}

TEST(TransposeBinder, RejectsWhatIsNotATwoDimensionalTranspose) {
  const auto error = [](const Definition& def,
                        const KernelTemplate& kernel = transpose_template()) {
    return input_error_of([&] { make_transpose_binder()->bind(def, kernel); });
  };
  const OrderedJson x = {{"x", tensor({"R", "C"})}};
  EXPECT_TRUE(contains(error(make_definition(x, {{"y", tensor({"R", "C"})}})),
                       "outputs.y: expected shape [C, R]"));
  EXPECT_TRUE(contains(error(make_definition(x, {{"y", tensor({"C", "R"}, "float16")}})),
                       "outputs.y.dtype: expected bfloat16, the input's"));
  EXPECT_TRUE(contains(error(make_definition({{"x", tensor({"R"})}}, {{"y", tensor({"R"})}})),
                       "inputs.x: expected a 2-D shape [R, C]"));
  EXPECT_TRUE(contains(error(make_definition(x, {{"y", tensor({"C", "R"})}}, {{"dims", {1, 0}}})),
                       "kernelarc.op_params.dims: unknown field"));
  EXPECT_TRUE(contains(error(make_definition(x, {{"y", tensor({"C", "R"})}}),
                             transpose_template("cpu", TemplateBuild::SharedObject)),
                       "the transpose binder generates headers for CUDA kernels"));
}

}  // namespace
}  // namespace kernelarc
