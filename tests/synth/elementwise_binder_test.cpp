#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "../core/test_support.h"
#include "binder_test_support.h"
#include "synth/family.h"

namespace kernelarc {
namespace {

using testing::contains;

using testing::input_error_of;

const std::string kProblems = std::string(KERNELARC_SOURCE_DIR) + "/problems/";

KernelTemplate elementwise_template(const std::string& target, TemplateBuild build) {
  return testing::stub_template("elementwise_test", {"elementwise", "activation"}, target, build);
}

const KernelTemplate& cuda_template() {
  static const KernelTemplate kernel = elementwise_template("cuda", TemplateBuild::Nvrtc);
  return kernel;
}

const KernelTemplate& cpu_template() {
  static const KernelTemplate kernel = elementwise_template("cpu", TemplateBuild::SharedObject);
  return kernel;
}

FamilyBinding bind(const Definition& def, const KernelTemplate& kernel = cuda_template()) {
  return make_elementwise_binder()->bind(def, kernel);
}

std::string reference(const OrderedJson& inputs) {
  std::string parameters;
  for (const auto& [name, spec] : inputs.items())
    parameters += (parameters.empty() ? "" : ", ") + name;
  return "def run(" + parameters + "):\n    return None\n";
}

/// A definition over axes batch (var), seq (var), hidden (const 64) and wide (2 * hidden).
Definition make_definition(const OrderedJson& inputs, const OrderedJson& outputs,
                           const OrderedJson& op_params) {
  OrderedJson json = {{"name", "elementwise_case"},
                      {"axes",
                       {{"batch", {{"type", "var"}}},
                        {"seq", {{"type", "var"}}},
                        {"hidden", {{"type", "const"}, {"value", 64}}},
                        {"wide", {{"type", "expr"}, {"expression", "2 * hidden"}}}}},
                      {"inputs", inputs},
                      {"outputs", outputs},
                      {"reference", reference(inputs)},
                      {"kernelarc", {{"op_family", "elementwise"}, {"op_params", op_params}}}};
  return parse_definition(json, "case.json");
}

OrderedJson tensor(const OrderedJson& shape, const std::string& dtype = "float32") {
  return {{"shape", shape}, {"dtype", dtype}};
}

const OrderedJson kRowShape = {"batch", "hidden"};

OrderedJson one_output(const std::string& dtype = "float32") {
  return {{"y", tensor(kRowShape, dtype)}};
}

std::string mismatch_of(const Definition& def, const KernelTemplate& kernel = cuda_template()) {
  try {
    bind(def, kernel);
  } catch (const TemplateMismatch& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a TemplateMismatch";
  return "";
}

TEST(ElementwiseBinder, ServesElementwiseAndActivation) {
  const std::vector<std::string> expected = {"elementwise", "activation"};
  EXPECT_EQ(make_elementwise_binder()->families(), expected);
}

TEST(ElementwiseBinder, BindsSiluAndMulForNvrtc) {
  const Definition def = load_definition(kProblems + "cuda/silu_and_mul_bf16/definition.json");
  const FamilyBinding binding = bind(def);
  EXPECT_EQ(binding.sizes.at("ROWS"), "num_tokens");
  EXPECT_EQ(binding.sizes.at("COLS"), "intermediate_size");
  EXPECT_EQ(binding.constants.at("OUT_BYTES"), 2);
  EXPECT_EQ(binding.constants.at("MAX_ELEM_BYTES"), 2);
  const std::string& h = binding.header;
  EXPECT_TRUE(contains(h, "#define KA_TARGET_CUDA 1"));
  EXPECT_TRUE(contains(h, "#include \"ka_math.h\""));
  EXPECT_TRUE(contains(h, "#include <cuda_bf16.h>"));
  EXPECT_FALSE(contains(h, "cuda_fp16.h"));
  EXPECT_FALSE(contains(h, "ka_bind"));
  EXPECT_TRUE(contains(h, "result[i] = (ka_silu((v_gate[i])) * (v_up[i]));"));
  EXPECT_TRUE(contains(h, "ka_load<N>(in_x + row * w_up + o_up + col, v_up);"));
  EXPECT_TRUE(contains(h,
                       "#define KA_KERNEL_PARAMS const __nv_bfloat16* ka_in_x, ka_out_t* "
                       "ka_out_output, long long ka_axis_num_tokens, long long "
                       "ka_axis_intermediate_size, long long ka_axis_gate_up_size\n"));
  // Members: out, in_x, n_rows, n_cols, then width and offset of gate, then of up.
  EXPECT_TRUE(contains(h,
                       "#define KA_ARGS (KaArgs{ka_out_output, ka_in_x, (ka_axis_num_tokens), "
                       "ka_axis_intermediate_size, ka_axis_gate_up_size, 0LL, "
                       "ka_axis_gate_up_size, ka_axis_intermediate_size})"));
}

TEST(ElementwiseBinder, BindsSiluAndMulForTheCpu) {
  const Definition def = load_definition(kProblems + "cuda/silu_and_mul_bf16/definition.json");
  const std::string h = bind(def, cpu_template()).header;
  EXPECT_TRUE(contains(h, "#define KA_TARGET_CPU 1"));
  EXPECT_TRUE(contains(h, "#include \"ka_cpu_types.h\""));
  EXPECT_TRUE(contains(h, "#include \"kernelarc/abi.h\""));
  EXPECT_TRUE(contains(h, "typedef ka_bf16 ka_out_t;"));
  EXPECT_FALSE(contains(h, "KA_KERNEL_PARAMS"));
  EXPECT_TRUE(contains(h, "inline const char* ka_bind(const ka_tensor* inputs, int n_inputs,"));
  EXPECT_TRUE(contains(h, "const long long ka_axis_num_tokens = inputs[0].shape[0];"));
  EXPECT_TRUE(contains(h, "const long long ka_axis_intermediate_size = 14336LL;"));
  EXPECT_TRUE(contains(h, "const long long ka_axis_gate_up_size = inputs[0].shape[1];"));
  EXPECT_TRUE(contains(h,
                       "if (ka_axis_intermediate_size < 0 || ka_axis_intermediate_size + "
                       "ka_axis_intermediate_size > ka_axis_gate_up_size)"));
}

TEST(ElementwiseBinder, InputsAreVariablesByDefault) {
  // A row input, a per-column vector in half precision and a float64 scalar.
  const Definition def = make_definition({{"x", tensor(kRowShape, "bfloat16")},
                                          {"bias", tensor({"hidden"}, "float16")},
                                          {"scale", tensor(nullptr, "float64")}},
                                         one_output(), {{"expression", "gelu(x + bias) * scale"}});
  const FamilyBinding binding = bind(def);
  EXPECT_EQ(binding.constants.at("OUT_BYTES"), 4);
  EXPECT_EQ(binding.constants.at("MAX_ELEM_BYTES"), 4);
  const std::string& h = binding.header;
  EXPECT_TRUE(contains(h, "#include <cuda_fp16.h>"));
  EXPECT_TRUE(contains(h, "ka_load<N>(in_bias + o_bias + col, v_bias);"));
  EXPECT_TRUE(contains(h, "const float s_scale = ka_to_float(in_scale[0]);"));
  EXPECT_TRUE(contains(h, "KA_HD float ka_to_float(double x)"));
  EXPECT_TRUE(contains(h, "result[i] = (ka_gelu(((v_x[i]) + (v_bias[i]))) * (s_scale));"));
  EXPECT_TRUE(contains(h,
                       "n_cols % n == 0 && ka_aligned(out, n) && o_bias % n == 0 && w_x % n "
                       "== 0 && o_x % n == 0 && ka_aligned(in_x, n) && ka_aligned(in_bias, n);"));
}

TEST(ElementwiseBinder, UnusedInputsStayUntyped) {
  const Definition def = make_definition({{"x", tensor(kRowShape)}, {"unused", tensor(kRowShape)}},
                                         one_output(), {{"expression", "relu(x)"}});
  EXPECT_TRUE(contains(bind(def).header, "const void* ka_in_unused"));
}

TEST(ElementwiseBinder, RowsAreTheProductOfTheLeadingAxes) {
  const OrderedJson shape = {"batch", "seq", "hidden"};
  const Definition def =
      make_definition({{"x", tensor(shape, "float16")}}, {{"y", tensor(shape, "bfloat16")}},
                      {{"expression", "sigmoid(x)"}});
  const FamilyBinding binding = bind(def);
  EXPECT_EQ(binding.sizes.at("ROWS"), "batch * seq");
  EXPECT_EQ(binding.sizes.at("COLS"), "hidden");
  EXPECT_TRUE(contains(binding.header, "(ka_axis_batch * ka_axis_seq)"));
}

TEST(ElementwiseBinder, AVectorOutputHasOneRow) {
  const Definition def = make_definition({{"x", tensor({"hidden"})}}, {{"y", tensor({"hidden"})}},
                                         {{"expression", "x * x"}});
  const FamilyBinding binding = bind(def);
  EXPECT_EQ(binding.sizes.at("ROWS"), "1");
  EXPECT_TRUE(contains(binding.header, "KaArgs{ka_out_y, ka_in_x, 1LL, ka_axis_hidden"));
}

TEST(ElementwiseBinder, ColumnOffsetsMayUseFloorDivision) {
  const Definition def =
      make_definition({{"x", tensor({"batch", "wide"})}}, one_output(),
                      {{"expression", "a - b"},
                       {"operands",
                        {{"a", {{"tensor", "x"}, {"column_offset", 0}}},
                         {"b", {{"tensor", "x"}, {"column_offset", "wide // 2"}}}}}});
  EXPECT_TRUE(contains(bind(def).header, "ka_floordiv(ka_axis_wide, 2LL)"));
}

TEST(ElementwiseBinder, WritesAHeaderThatTheCudaTemplateIncludes) {
  const Definition def = load_definition(kProblems + "cuda/silu_and_mul_bf16/definition.json");
  const testing::TempDir dir;
  const std::filesystem::path path = dir.write("ka_problem.h", bind(def).header);
  std::ifstream in(path);
  std::string first_line;
  std::getline(in, first_line);
  EXPECT_EQ(first_line,
            "// ka_problem.h for \"silu_and_mul_bf16_i14336\" (elementwise family), generated by "
            "kernelarc's element-wise binder.");
}

TEST(ElementwiseBinder, RejectsMalformedOpParams) {
  const OrderedJson inputs = {{"x", tensor({"batch", "wide"})}};
  EXPECT_EQ(
      mismatch_of(make_definition(inputs, one_output(), OrderedJson::object())),
      "elementwise_case: kernelarc.op_params.expression: missing (an element-wise expression such "
      "as \"silu(gate) * up\")");
  EXPECT_EQ(mismatch_of(make_definition(inputs, one_output(), {{"expression", 3}})),
            "elementwise_case: kernelarc.op_params.expression: expected a string");
  EXPECT_EQ(mismatch_of(make_definition(inputs, one_output(), {{"expresion", "x"}})),
            "elementwise_case: kernelarc.op_params.expresion: unknown field (expected expression, "
            "operands)");
  EXPECT_EQ(
      mismatch_of(make_definition(inputs, one_output(),
                                  {{"expression", "a"}, {"operands", {{"a", {{"tensor", "z"}}}}}})),
      "elementwise_case: kernelarc.op_params.operands.a.tensor: expected the name of an input (x), "
      "got \"z\"");
  EXPECT_EQ(mismatch_of(make_definition(
                inputs, one_output(),
                {{"expression", "a"}, {"operands", {{"a", {{"column_offset", 1}}}}}})),
            "elementwise_case: kernelarc.op_params.operands.a.tensor: missing");
  EXPECT_EQ(
      mismatch_of(make_definition(
          inputs, one_output(),
          {{"expression", "a"}, {"operands", {{"a", {{"tensor", "x"}, {"offset", 1}}}}}})),
      "elementwise_case: kernelarc.op_params.operands.a.offset: unknown field (expected tensor, "
      "column_offset)");
  EXPECT_EQ(
      mismatch_of(make_definition(
          inputs, one_output(),
          {{"expression", "a"}, {"operands", {{"a", {{"tensor", "x"}, {"column_offset", -1}}}}}})),
      "elementwise_case: kernelarc.op_params.operands.a.column_offset: expected an integer >= 0 "
      "or an axis expression string, got -1");
  EXPECT_EQ(mismatch_of(
                make_definition(inputs, one_output(), {{"expression", "x"}, {"operands", {1, 2}}})),
            "elementwise_case: kernelarc.op_params.operands: expected an object {name: {tensor, "
            "column_offset}}");
}

TEST(ElementwiseBinder, RejectsColumnOffsetsThatCannotWork) {
  const OrderedJson inputs = {{"x", tensor({"batch", "wide"})}, {"s", tensor(nullptr)}};
  auto with_offset = [&](const OrderedJson& offset, const std::string& tensor_name = "x") {
    return make_definition(
        inputs, one_output(),
        {{"expression", "a"},
         {"operands", {{"a", {{"tensor", tensor_name}, {"column_offset", offset}}}}}});
  };
  EXPECT_EQ(
      mismatch_of(with_offset("hidden + 1")),
      "elementwise_case: kernelarc.op_params.operands.a.column_offset: 65 + 64 columns exceed "
      "the width 128 of x (wide = 128)");
  EXPECT_EQ(
      mismatch_of(with_offset("hidden ** 2")),
      "elementwise_case: kernelarc.op_params.operands.a.column_offset: \"hidden ** 2\": at column "
      "8: unexpected '*' (only + - * // % and parentheses are supported here)");
  EXPECT_EQ(
      mismatch_of(with_offset("hiden")),
      "elementwise_case: kernelarc.op_params.operands.a.column_offset: \"hiden\": at column 1: "
      "unknown axis 'hiden'");
  EXPECT_EQ(mismatch_of(with_offset("0 - hidden")),
            "elementwise_case: kernelarc.op_params.operands.a.column_offset: must be >= 0, is -64");
  EXPECT_EQ(
      mismatch_of(with_offset("hidden", "s")),
      "elementwise_case: kernelarc.op_params.operands.a.column_offset: a scalar operand takes no "
      "column offset");
  // A var offset cannot be checked until a workload is known.
  EXPECT_NO_THROW(bind(with_offset("batch")));
}

TEST(ElementwiseBinder, RejectsTensorsOfTheWrongShapeOrType) {
  EXPECT_EQ(mismatch_of(make_definition({{"x", tensor({"seq", "hidden"})}}, one_output(),
                                        {{"expression", "x"}})),
            "elementwise_case: inputs.x.shape: expected [batch, W] (rows of the output), [W] (per "
            "column) or a scalar, got [seq, hidden]");
  EXPECT_EQ(mismatch_of(make_definition({{"x", tensor({"batch", "wide"})}}, one_output(),
                                        {{"expression", "x"}})),
            "elementwise_case: inputs.x.shape: its last axis wide is not the output's hidden; give "
            "kernelarc.op_params.operands.x.column_offset to read a slice of it");
  EXPECT_EQ(mismatch_of(make_definition({{"x", tensor(kRowShape, "int32")}}, one_output(),
                                        {{"expression", "x"}})),
            "elementwise_case: inputs.x.dtype: expected float32, float16 or bfloat16, got int32");
  EXPECT_EQ(
      mismatch_of(make_definition({{"x", tensor(kRowShape)}}, one_output("float64"),
                                  {{"expression", "x"}})),
      "elementwise_case: outputs.y.dtype: expected float32, float16 or bfloat16, got float64");
  EXPECT_EQ(
      mismatch_of(make_definition({{"x", tensor(kRowShape)}}, {{"y", tensor(nullptr)}},
                                  {{"expression", "x"}})),
      "elementwise_case: outputs.y.shape: expected [..., C] with at least one axis, got null");
  EXPECT_EQ(mismatch_of(make_definition({{"x", tensor(kRowShape)}},
                                        {{"y", tensor(kRowShape)}, {"z", tensor(kRowShape)}},
                                        {{"expression", "x"}})),
            "elementwise_case: outputs: expected one output, got 2");
}

TEST(ElementwiseBinder, ExpressionErrorsNameTheColumn) {
  const Definition def =
      make_definition({{"x", tensor(kRowShape)}}, one_output(), {{"expression", "x * gate"}});
  EXPECT_EQ(input_error_of([&] { bind(def); }),
            "elementwise_case: kernelarc.op_params.expression: \"x * gate\": at column 5: unknown "
            "variable 'gate' (known: x)");
}

TEST(ElementwiseBinder, KaBindNeedsEveryVarAxisInAShape) {
  // No tensor names the var axis "seq": a kernel gets it as a parameter, ka_bind cannot read it.
  const Definition def =
      make_definition({{"x", tensor(kRowShape)}}, one_output(), {{"expression", "x"}});
  EXPECT_NO_THROW(bind(def, cuda_template()));
  EXPECT_EQ(
      mismatch_of(def, cpu_template()),
      "elementwise_case: axes.seq: a var axis that no tensor's shape names cannot be read from the "
      "tensors by ka_bind");
}

}  // namespace
}  // namespace kernelarc
