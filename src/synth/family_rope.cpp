// The rope binder: rotary position embedding in the NeoX layout (the two halves of each head
// rotate against each other) of one or more [T, H, D] tensors by per-token angles given as cos
// and sin of shape [T, D / 2]. See docs/TEMPLATES.md ("Family: rope").
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "synth/family.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

struct RotatedTensor {
  const TensorSpec* input = nullptr;
  const TensorSpec* output = nullptr;
  std::size_t input_index = 0;
  std::size_t output_index = 0;
};

struct RopeProblem {
  std::string tokens_axis;  ///< T
  int64_t head_dim = 0;     ///< D, static
  const TensorSpec* cos = nullptr;
  const TensorSpec* sin = nullptr;
  std::size_t cos_index = 0, sin_index = 0;
  std::vector<RotatedTensor> rotated;  ///< in input order
};

void check_float(const Definition& def, const std::string& field, DType dtype) {
  if (!is_packed_float_dtype(dtype))
    mismatch(def, field + ".dtype",
             "expected float32, float16 or bfloat16, got " + std::string(dtype_name(dtype)));
}

RopeProblem read_problem(const Definition& def) {
  const OrderedJson& params = def.ext.op_params;
  for (const auto& [key, value] : params.items())
    if (key != "style")
      mismatch(def, "kernelarc.op_params." + key, "unknown field (expected style)");
  if (const auto style = params.find("style"); style != params.end() && *style != "neox")
    mismatch(def, "kernelarc.op_params.style",
             "the rope templates rotate the NeoX layout (\"neox\": the halves of each head), got " +
                 style->dump());

  RopeProblem rope;
  for (std::size_t i = 0; i < def.inputs.size(); ++i) {
    const TensorSpec& spec = def.inputs[i];
    if (spec.name == "cos") rope.cos = &spec, rope.cos_index = i;
    if (spec.name == "sin") rope.sin = &spec, rope.sin_index = i;
  }
  if (!rope.cos || !rope.sin)
    mismatch(def, "inputs", "expected inputs named cos and sin, of shape [tokens, head_dim / 2]");
  for (const TensorSpec* angle : {rope.cos, rope.sin}) {
    const std::string field = "inputs." + angle->name;
    if (angle->is_scalar() || angle->shape->size() != 2)
      mismatch(def, field, "expected shape [tokens, head_dim / 2]");
    check_float(def, field, angle->dtype);
  }
  if (*rope.cos->shape != *rope.sin->shape)
    mismatch(def, "inputs.sin",
             "expected the shape of cos, " + shape_text(*rope.cos->shape) + ", got " +
                 shape_text(*rope.sin->shape));
  rope.tokens_axis = rope.cos->shape->front();

  std::string head_dim_axis;
  for (std::size_t i = 0; i < def.inputs.size(); ++i) {
    const TensorSpec& spec = def.inputs[i];
    if (&spec == rope.cos || &spec == rope.sin) continue;
    const std::string field = "inputs." + spec.name;
    if (spec.is_scalar() || spec.shape->size() != 3 || spec.shape->front() != rope.tokens_axis)
      mismatch(def, field,
               "expected shape [" + rope.tokens_axis + ", heads, head_dim] (a tensor to rotate)");
    if (!head_dim_axis.empty() && spec.shape->back() != head_dim_axis)
      mismatch(def, field, "expected the head dimension " + head_dim_axis + " of every tensor");
    head_dim_axis = spec.shape->back();
    check_float(def, field, spec.dtype);
    rope.rotated.push_back({&spec, nullptr, i, 0});
  }
  if (rope.rotated.empty())
    mismatch(def, "inputs", "expected a tensor to rotate besides cos and sin");

  const AxisValues known = static_axes(def);
  const auto dim = known.find(head_dim_axis);
  const auto half = known.find(rope.cos->shape->back());
  if (dim == known.end() || half == known.end())
    mismatch(def, "axes",
             "the head dimension (" + head_dim_axis + ") and the width of cos (" +
                 rope.cos->shape->back() + ") must be const or expr axes");
  if (dim->second <= 0 || dim->second != 2 * half->second)
    mismatch(def, "inputs.cos",
             fmt::format("expected half the head dimension ({}) as its width, got {}: the "
                         "templates rotate whole heads",
                         dim->second, half->second));
  rope.head_dim = dim->second;

  if (def.outputs.size() != rope.rotated.size())
    mismatch(def, "outputs",
             fmt::format("expected {} outputs, one per rotated input, in the same order, got {}",
                         rope.rotated.size(), def.outputs.size()));
  for (std::size_t i = 0; i < def.outputs.size(); ++i) {
    const TensorSpec& spec = def.outputs[i];
    RotatedTensor& rotated = rope.rotated[i];
    if (spec.is_scalar() || *spec.shape != *rotated.input->shape)
      mismatch(def, "outputs." + spec.name,
               "expected the shape of " + rotated.input->name + ", " +
                   shape_text(*rotated.input->shape));
    check_float(def, "outputs." + spec.name, spec.dtype);
    rotated.output = &spec;
    rotated.output_index = i;
  }
  return rope;
}

class RopeHeader {
 public:
  RopeHeader(const RopeProblem& rope, const Definition& def, const KernelTemplate& kernel)
      : rope_(rope), def_(def), kernel_(kernel) {}

  std::string write() {
    out_ = fmt::format(
        "// ka_problem.h: generated by kernelarc's rope binder for \"{}\" (template {}).\n"
        "#pragma once\n#define KA_TARGET_CUDA 1\n#define KA_TARGET_CPU 0\n",
        def_.name, kernel_.name);
    out_ += cuda_pack_prelude();
    out_ += fmt::format("\n#define KA_HEAD_DIM {}\n#define KA_ROTARY_HALF {}\n", rope_.head_dim,
                        rope_.head_dim / 2);
    write_args();
    write_kernel_params();
    return out_;
  }

 private:
  static std::string type(const TensorSpec& spec) { return header_element_type(spec.dtype, true); }

  void write_args() {
    out_ += "\nstruct KaArgs {\n";
    for (const RotatedTensor& r : rope_.rotated)
      out_ +=
          fmt::format("  const {}* in_{};\n  {}* out_{};\n  long long heads_{};\n", type(*r.input),
                      r.input->name, type(*r.output), r.output->name, r.input->name);
    out_ += fmt::format("  const {}* cos_;\n  const {}* sin_;\n  long long tokens_;\n\n",
                        type(*rope_.cos), type(*rope_.sin));
    std::vector<std::string> heads;
    for (const RotatedTensor& r : rope_.rotated) heads.push_back("heads_" + r.input->name);
    out_ += "  KA_HD long long tokens() const { return tokens_; }\n";
    out_ += fmt::format(
        "  // Heads of every rotated tensor, one after the other.\n"
        "  KA_HD long long heads() const {{ return {}; }}\n",
        fmt::join(heads, " + "));
    out_ +=
        "  // Packs of n columns: a whole number per half head, every pointer aligned for them.\n"
        "  KA_HD bool vector_ok(int n) const {\n    return KA_ROTARY_HALF % n == 0";
    for (const RotatedTensor& r : rope_.rotated)
      out_ += fmt::format(" &&\n           ka_row_aligned(in_{0}, n) && ka_row_aligned(out_{1}, n)",
                          r.input->name, r.output->name);
    out_ += " &&\n           ka_row_aligned(cos_, n) && ka_row_aligned(sin_, n);\n  }\n";

    out_ += "  // cos / sin of the token's angles at columns [col, col + N) of the half head.\n";
    for (const char* angle : {"cos", "sin"})
      out_ += fmt::format(
          "  template <int N>\n"
          "  KA_HD void load_{0}(long long token, int col, float (&v)[N]) const {{\n"
          "    ka_row_load<N>({0}_ + token * KA_ROTARY_HALF + col, v);\n  }}\n",
          angle);
    write_head_access("load_head", "float", "ka_row_load<N>(in_{} + at, v);");
    write_head_access("store_head", "const float", "ka_row_store<N>(out_{} + at, v);");
    out_ += "};\n";
  }

  /// A function of (token, head over all rotated tensors, column of the head, N values) that
  /// finds the head's tensor and runs `action` on its element offset `at`.
  void write_head_access(const char* function, const char* value_type, const char* action) {
    out_ += fmt::format(
        "  template <int N>\n"
        "  KA_HD void {}(long long token, long long head, int col, {} (&v)[N]) const {{\n",
        function, value_type);
    for (std::size_t i = 0; i < rope_.rotated.size(); ++i) {
      const RotatedTensor& r = rope_.rotated[i];
      const std::string name = function[0] == 'l' ? r.input->name : r.output->name;
      const bool last = i + 1 == rope_.rotated.size();
      out_ += fmt::format(
          "    {{\n"
          "      const long long at = (token * heads_{0} + head) * KA_HEAD_DIM + col;\n"
          "      {1}\n",
          r.input->name,
          last ? fmt::format(fmt::runtime(action), name)
               : fmt::format("if (head < heads_{}) {{ {} return; }}", r.input->name,
                             fmt::format(fmt::runtime(action), name)));
      out_ += last ? "    }\n" : fmt::format("    }}\n    head -= heads_{};\n", r.input->name);
    }
    out_ += "  }\n";
  }

  void write_kernel_params() {
    out_ +=
        kernel_params_define(def_, [](DType dtype) { return header_element_type(dtype, true); });
    std::vector<std::string> init;
    for (const RotatedTensor& r : rope_.rotated)
      init.insert(init.end(), {"ka_in_" + r.input->name, "ka_out_" + r.output->name,
                               "ka_axis_" + r.input->shape->at(1)});
    init.insert(init.end(), {"ka_in_cos", "ka_in_sin", "ka_axis_" + rope_.tokens_axis});
    out_ += fmt::format("#define KA_ARGS (KaArgs{{{}}})\n", fmt::join(init, ", "));
  }

  const RopeProblem& rope_;
  const Definition& def_;
  const KernelTemplate& kernel_;
  std::string out_;
};

class RopeBinder : public FamilyBinder {
 public:
  std::vector<std::string> families() const override { return {"rope"}; }

  FamilyBinding bind(const Definition& def, const KernelTemplate& kernel) const override {
    require_nvrtc_template(def, kernel, "rope");
    const RopeProblem rope = read_problem(def);
    FamilyBinding binding;
    binding.header = RopeHeader(rope, def, kernel).write();
    binding.sizes["TOKENS"] = rope.tokens_axis;
    binding.constants["HEAD_DIM"] = rope.head_dim;
    binding.constants["ROTARY_HALF"] = rope.head_dim / 2;
    return binding;
  }
};

}  // namespace

std::unique_ptr<FamilyBinder> make_rope_binder() {
  return std::make_unique<RopeBinder>();
}

}  // namespace kernelarc
