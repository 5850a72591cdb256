// The CPU element-wise template with a generated header, compiled and run: mixed input types, a
// per-column vector, a scalar, a column offset and a rank-3 output; and where() selects with
// ka_math's log1p and expm1; against the same float formulas evaluated here.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../templates/common/ka_math.h"
#include "../core/test_support.h"
#include "core/dtype.h"
#include "kernelarc/abi.h"
#include "source_dir.h"
#include "synth/family.h"

namespace kernelarc {
namespace {

Definition gated_definition() {
  const OrderedJson json = OrderedJson::parse(R"json({
    "name": "gated",
    "axes": {"batch": {"type": "var"}, "seq": {"type": "var"}, "hidden": {"type": "var"},
             "wide": {"type": "var"}},
    "inputs": {"x": {"shape": ["batch", "seq", "wide"], "dtype": "float16"},
               "bias": {"shape": ["hidden"], "dtype": "bfloat16"},
               "scale": {"shape": null, "dtype": "float32"}},
    "outputs": {"y": {"shape": ["batch", "seq", "hidden"], "dtype": "bfloat16"}},
    "reference": "def run(x, bias, scale):\n    return None\n",
    "kernelarc": {"op_family": "elementwise", "op_params": {
      "expression": "gelu_tanh(x * scale + bias) - min(x, 0.5)",
      "operands": {"x": {"tensor": "x", "column_offset": "wide - hidden"}}}}})json");
  return parse_definition(json, "gated.json");
}

// torch's softplus (its threshold branch a where) plus a where over expm1.
Definition select_definition() {
  const OrderedJson json = OrderedJson::parse(R"json({
    "name": "select",
    "axes": {"rows": {"type": "var"}, "cols": {"type": "var"}},
    "inputs": {"x": {"shape": ["rows", "cols"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["rows", "cols"], "dtype": "float32"}},
    "reference": "def run(x):\n    return None\n",
    "kernelarc": {"op_family": "elementwise", "op_params": {
      "expression": "where(x > 20, x, log1p(exp(x))) + where(x <= -50, expm1(x), 0)"}}})json");
  return parse_definition(json, "select.json");
}

ka_tensor tensor(void* data, ka_dtype dtype, const std::vector<int64_t>& shape) {
  ka_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.ndim = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = shape[d];
    t.stride[d] = stride;
    stride *= shape[d];
  }
  return t;
}

/// The template built for the problem `Definition()` returns, once per suite, and never closed:
/// unloading libgomp under its idle worker threads crashes them.
template <Definition (*Problem)()>
class CpuElementwiseBuild : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const KernelTemplate kernel{.name = "elementwise_cpu",
                                .target = DeviceKind::Cpu,
                                .families = {"elementwise"},
                                .build = TemplateBuild::SharedObject,
                                .knobs = KnobSpace({}, {})};
    static const testing::TempDir dir;
    dir.write("ka_problem.h", make_elementwise_binder()->bind(Problem(), kernel).header);
    const std::filesystem::path library = dir / "libelementwise.so";
    const std::string command =
        "c++ -std=c++20 -O1 -fopenmp -shared -fPIC -DCHUNK=64 -I" + dir.path().string() + " -I" +
        (kSource / "templates/common").string() + " -I" + (kSource / "include").string() + " " +
        (kSource / "templates/cpu/elementwise/main.cpp").string() + " -o " + library.string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    run_ = reinterpret_cast<ka_run_fn>(dlsym(handle, "ka_run"));
    last_error_ = reinterpret_cast<ka_last_error_fn>(dlsym(handle, "ka_last_error"));
  }

  void SetUp() override {
    ASSERT_NE(run_, nullptr) << "the template did not build";
    ASSERT_NE(last_error_, nullptr);
  }

  static inline ka_run_fn run_ = nullptr;
  static inline ka_last_error_fn last_error_ = nullptr;
};

using CpuElementwiseTemplate = CpuElementwiseBuild<gated_definition>;
using CpuElementwiseSelect = CpuElementwiseBuild<select_definition>;

TEST_F(CpuElementwiseTemplate, MatchesTheFloatFormulaBitForBit) {
  struct Shape {
    int64_t batch, seq, hidden, wide;
  };
  uint32_t state = 7;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f * 8.0f - 4.0f;
  };
  for (const Shape s : {Shape{2, 3, 40, 64}, Shape{2, 3, 37, 50}, Shape{1, 1, 1, 1},
                        Shape{0, 3, 8, 8}, Shape{3, 7, 100, 130}}) {
    std::vector<uint16_t> x(s.batch * s.seq * s.wide), bias(s.hidden),
        y(s.batch * s.seq * s.hidden, 0xFFFF);
    for (uint16_t& v : x) v = float_to_fp16(next());
    for (uint16_t& v : bias) v = float_to_bf16(next());
    float scale = 0.75f;
    const ka_tensor inputs[] = {tensor(x.data(), KA_FLOAT16, {s.batch, s.seq, s.wide}),
                                tensor(bias.data(), KA_BFLOAT16, {s.hidden}),
                                tensor(&scale, KA_FLOAT32, {})};
    ka_tensor output = tensor(y.data(), KA_BFLOAT16, {s.batch, s.seq, s.hidden});
    ASSERT_EQ(run_(inputs, 3, &output, 1, nullptr, nullptr, 0), 0) << last_error_();
    for (int64_t r = 0; r < s.batch * s.seq; ++r) {
      for (int64_t c = 0; c < s.hidden; ++c) {
        const float xv = fp16_to_float(x[r * s.wide + s.wide - s.hidden + c]);
        const float expected = ka_gelu_tanh(xv * scale + bf16_to_float(bias[c])) - ka_min(xv, 0.5f);
        ASSERT_EQ(y[r * s.hidden + c], float_to_bf16(expected)) << "row " << r << " col " << c;
      }
    }
  }
}

TEST_F(CpuElementwiseTemplate, KaBindRejectsAnOffsetBeyondTheRow) {
  // wide - hidden = -1: the offset is negative.
  const ka_tensor inputs[] = {tensor(nullptr, KA_FLOAT16, {2, 3, 10}),
                              tensor(nullptr, KA_BFLOAT16, {11}), tensor(nullptr, KA_FLOAT32, {})};
  ka_tensor output = tensor(nullptr, KA_BFLOAT16, {2, 3, 11});
  EXPECT_NE(run_(inputs, 3, &output, 1, nullptr, nullptr, 0), 0);
  EXPECT_STREQ(last_error_(),
               "x: column_offset wide - hidden must be >= 0 and leave hidden columns within x's "
               "width wide");
}

TEST_F(CpuElementwiseTemplate, KaBindRejectsMismatchedTensors) {
  const ka_tensor inputs[] = {tensor(nullptr, KA_FLOAT16, {2, 3, 12}),
                              tensor(nullptr, KA_BFLOAT16, {11}), tensor(nullptr, KA_FLOAT32, {})};
  ka_tensor output = tensor(nullptr, KA_BFLOAT16, {2, 4, 11});
  EXPECT_NE(run_(inputs, 3, &output, 1, nullptr, nullptr, 0), 0);
  EXPECT_STREQ(last_error_(), "y: expected shape [batch, seq, hidden]");
  ka_tensor float_output = tensor(nullptr, KA_FLOAT32, {2, 3, 11});
  EXPECT_NE(run_(inputs, 3, &float_output, 1, nullptr, nullptr, 0), 0);
  EXPECT_STREQ(last_error_(), "y: expected dtype bfloat16");
  EXPECT_NE(run_(inputs, 2, &output, 1, nullptr, nullptr, 0), 0);
  EXPECT_STREQ(last_error_(), "expected 3 inputs and 1 output");
}

TEST_F(CpuElementwiseSelect, TakesTorchsSoftplusThresholdBranch) {
  const std::vector<float> x = {-100.0f, -50.0f, -20.0f, -1e-3f,    0.0f,    1e-3f,
                                1.0f,    19.5f,  20.0f,  20.5f,     88.0f,   89.0f,
                                100.0f,  1e30f,  NAN,    -INFINITY, INFINITY};
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> y(x.size(), -7.0f);
  const ka_tensor input = tensor(const_cast<float*>(x.data()), KA_FLOAT32, {1, n});
  ka_tensor output = tensor(y.data(), KA_FLOAT32, {1, n});
  ASSERT_EQ(run_(&input, 1, &output, 1, nullptr, nullptr, 0), 0) << last_error_();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float v = x[i];
    const float expected = (v > 20 ? v : ka_log1p(ka_exp(v))) + (v <= -50 ? ka_expm1(v) : 0.0f);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(y[i])) << "x " << v;
    } else {
      EXPECT_EQ(y[i], expected) << "x " << v;
    }
  }
  // Past exp's range log1p(exp(x)) is inf: the select gives x, as torch does.
  EXPECT_EQ(y[12], 100.0f);
  EXPECT_EQ(y[13], 1e30f);
  // log1p keeps what log(1 + exp(x)) rounds to 0.
  EXPECT_NEAR(y[2], 2.0611537e-9f, 1e-15f);
  EXPECT_EQ(y[0], -1.0f);  // expm1(-100) + a denormal
}

}  // namespace
}  // namespace kernelarc
