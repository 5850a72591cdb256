// The scaled_gemm binder: C[M, N] = sum_k A[m, k] * B[n, k] * scale_a(m, k) * scale_b(n, k) with A
// and B float8_e4m3fn, the scales float32 per tensor, per row / column, or per block of 128 K
// elements (1x128) or 128x128 elements (DeepSeek-V3), and C bfloat16, float16 or float32. See
// docs/TEMPLATES.md ("Family: scaled_gemm").
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "synth/family.h"
#include "synth/family_support.h"

namespace kernelarc {

// A named namespace around the anonymous one: unity batches put several binders in one unit.
namespace scaled_gemm_binder {
namespace {

/// KA_SCALE_*: how a scale tensor maps onto its operand. The numbers are the header's macros.
enum class ScaleKind { Tensor = 0, Row = 1, Block1x128 = 2, Block128x128 = 3 };

constexpr int kScaleBlock = 128;

struct ScaledOperand {
  int index = -1;  ///< in inputs[]
  const TensorSpec* spec = nullptr;
  int scale_index = -1;  ///< of its scale tensor in inputs[]
  const TensorSpec* scale = nullptr;
  ScaleKind kind = ScaleKind::Tensor;
  std::string row_axis;  ///< M for A, N for B
};

struct ScaledGemmProblem {
  ScaledOperand a, b;
  const TensorSpec* c = nullptr;
  std::string m_axis, n_axis, k_axis;
};

const char* kind_text(ScaleKind kind, bool a_side) {
  switch (kind) {
    case ScaleKind::Tensor:
      return "per_tensor";
    case ScaleKind::Row:
      return a_side ? "per_row" : "per_column";
    case ScaleKind::Block1x128:
      return "block_1x128";
    case ScaleKind::Block128x128:
      return "block_128x128";
  }
  return "";
}

/// op_params {"scale_a": kind, "scale_b": kind}, both required.
void read_params(const Definition& def, ScaledGemmProblem& p) {
  bool seen_a = false, seen_b = false;
  for (const auto& [key, value] : def.ext.op_params.items()) {
    const std::string field = "kernelarc.op_params." + key;
    if (key != "scale_a" && key != "scale_b")
      mismatch(def, field,
               "unknown parameter for the scaled_gemm family (known: scale_a, scale_b)");
    const bool a_side = key == "scale_a";
    const std::string expected = std::string("expected one of \"per_tensor\", \"") +
                                 (a_side ? "per_row" : "per_column") +
                                 "\", \"block_1x128\", \"block_128x128\"";
    if (!value.is_string()) mismatch(def, field, expected);
    const std::string text = value.get<std::string>();
    bool found = false;
    for (ScaleKind kind :
         {ScaleKind::Tensor, ScaleKind::Row, ScaleKind::Block1x128, ScaleKind::Block128x128}) {
      if (text != kind_text(kind, a_side)) continue;
      (a_side ? p.a : p.b).kind = kind;
      found = true;
    }
    if (!found) mismatch(def, field, expected + ", got \"" + text + "\"");
    (a_side ? seen_a : seen_b) = true;
  }
  if (!seen_a) mismatch(def, "kernelarc.op_params.scale_a", "required (e.g. \"per_row\")");
  if (!seen_b) mismatch(def, "kernelarc.op_params.scale_b", "required (e.g. \"per_column\")");
}

/// A and B: the two float8_e4m3fn inputs, A [M, K] and B [N, K] over one K; the scales: the
/// other two inputs, A's first in definition order.
void find_operands(const Definition& def, ScaledGemmProblem& p) {
  if (def.inputs.size() != 4)
    mismatch(def, "inputs",
             "expected four inputs: A [M, K] and B [N, K] (float8_e4m3fn), then the scale of A "
             "and the scale of B (float32), got " +
                 std::to_string(def.inputs.size()));
  std::vector<int> fp8, others;
  for (int i = 0; i < 4; ++i) {
    const TensorSpec& spec = def.inputs[i];
    if (spec.dtype == DType::Float8E4M3FN)
      fp8.push_back(i);
    else if (spec.dtype == DType::Float8E5M2)
      mismatch(def, "inputs." + spec.name + ".dtype",
               "expected float8_e4m3fn (float8_e5m2 operands are not served)");
    else
      others.push_back(i);
  }
  if (fp8.size() != 2)
    mismatch(
        def, "inputs",
        "expected exactly two float8_e4m3fn inputs (A and B), got " + std::to_string(fp8.size()));
  for (int i : fp8) {
    const TensorSpec& spec = def.inputs[i];
    if (!is_matrix(spec))
      mismatch(def, "inputs." + spec.name + ".shape",
               "expected " + shape_text({p.m_axis, "K"}) + " or " + shape_text({p.n_axis, "K"}));
    const std::string& first = (*spec.shape)[0];
    if (first == p.m_axis && p.a.index < 0) {
      p.a.index = i;
    } else if (first == p.n_axis && p.b.index < 0) {
      p.b.index = i;
    } else {
      mismatch(def, "inputs." + spec.name + ".shape",
               "expected A " + shape_text({p.m_axis, "K"}) + " and B " +
                   shape_text({p.n_axis, "K"}) + " (K-major, the nn.Linear layout), got " +
                   shape_text(*spec.shape));
    }
  }
  p.a.spec = &def.inputs[p.a.index];
  p.b.spec = &def.inputs[p.b.index];
  p.k_axis = (*p.a.spec->shape)[1];
  if ((*p.b.spec->shape)[1] != p.k_axis)
    mismatch(def, "inputs." + p.b.spec->name + ".shape",
             "expected " + shape_text({p.n_axis, p.k_axis}) + " (the K axis of " + p.a.spec->name +
                 "), got " + shape_text(*p.b.spec->shape));
  if (p.k_axis == p.m_axis || p.k_axis == p.n_axis)
    mismatch(def, "inputs." + p.a.spec->name + ".shape",
             "the reduced axis K must be an axis of its own, not M or N");
  p.a.scale_index = others[0];
  p.b.scale_index = others[1];
  p.a.scale = &def.inputs[others[0]];
  p.b.scale = &def.inputs[others[1]];
  p.a.row_axis = p.m_axis;
  p.b.row_axis = p.n_axis;
}

/// `blocks` must be ceil(`axis` / 128): checked where the definition fixes both (const or static
/// expr axes), or where `blocks` is an expression of `axis` alone (tried at a few sizes). ka_bind
/// checks it again on every call.
void check_block_axis(const Definition& def, const std::string& field, const std::string& blocks,
                      const std::string& axis) {
  const std::string expected = "expected an axis equal to ceil(" + axis + " / 128), e.g. " +
                               "{\"type\": \"expr\", \"expression\": \"(" + axis +
                               " + 127) // 128\"}";
  if (blocks == axis) mismatch(def, field, expected + ", got " + axis + " itself");
  const AxisValues known = static_axes(def);
  const auto ceil_blocks = [](int64_t n) { return (n + kScaleBlock - 1) / kScaleBlock; };
  if (known.contains(axis) && known.contains(blocks)) {
    if (known.at(blocks) != ceil_blocks(known.at(axis)))
      mismatch(def, field,
               fmt::format("{}: {} is {}, but ceil({} / 128) is {}", expected, blocks,
                           known.at(blocks), axis, ceil_blocks(known.at(axis))));
    return;
  }
  const auto found = std::find_if(def.axes.begin(), def.axes.end(),
                                  [&](const Axis& a) { return a.name == blocks; });
  if (found == def.axes.end() || found->kind != AxisKind::Expr) mismatch(def, field, expected);
  for (const int64_t size : std::array<int64_t, 6>{1, 127, 128, 129, 2048, 7000}) {
    AxisValues values = known;
    values[axis] = size;
    int64_t value = 0;
    try {
      value = evaluate_expr(found->expression, values);
    } catch (const ExprError&) {
      mismatch(def, field, expected + ", got \"" + found->expression + "\"");
    }
    if (value != ceil_blocks(size))
      mismatch(def, field,
               fmt::format("{}: at {} = {}, {} is {} instead of {}", expected, axis, size, blocks,
                           value, ceil_blocks(size)));
  }
}

/// The scale tensor of `op` against its kind: float32 and the shape the kind implies.
void check_scale(const Definition& def, const ScaledGemmProblem& p, const ScaledOperand& op,
                 bool a_side) {
  const TensorSpec& scale = *op.scale;
  const std::string field = "inputs." + scale.name;
  const std::string kind = kind_text(op.kind, a_side);
  if (scale.dtype != DType::Float32)
    mismatch(def, field + ".dtype",
             "expected float32 (the " + kind + " scale of " + op.spec->name + "), got " +
                 std::string(dtype_name(scale.dtype)));
  const std::vector<std::string> shape = scale.shape.value_or(std::vector<std::string>{});
  const std::string got = scale.is_scalar() ? "null" : shape_text(shape);
  const std::string shape_field = field + ".shape";
  switch (op.kind) {
    case ScaleKind::Tensor: {
      if (shape.empty()) return;
      const AxisValues known = static_axes(def);
      const bool one = shape.size() == 1 && known.contains(shape[0]) && known.at(shape[0]) == 1;
      if (!one)
        mismatch(def, shape_field,
                 "expected null, [] or [one] (an axis of value 1) for a per_tensor scale of " +
                     op.spec->name + ", got " + got);
      return;
    }
    case ScaleKind::Row:
      if (shape != std::vector<std::string>{op.row_axis})
        mismatch(def, shape_field,
                 "expected " + shape_text({op.row_axis}) + " for a " + kind + " scale of " +
                     op.spec->name + ", got " + got);
      return;
    case ScaleKind::Block1x128:
      if (shape.size() != 2 || shape[0] != op.row_axis)
        mismatch(def, shape_field,
                 "expected " + shape_text({op.row_axis, "ceil(" + p.k_axis + " / 128)"}) +
                     " for a block_1x128 scale of " + op.spec->name + ", got " + got);
      check_block_axis(def, shape_field, shape[1], p.k_axis);
      return;
    case ScaleKind::Block128x128:
      if (shape.size() != 2)
        mismatch(
            def, shape_field,
            "expected " +
                shape_text({"ceil(" + op.row_axis + " / 128)", "ceil(" + p.k_axis + " / 128)"}) +
                " for a block_128x128 scale of " + op.spec->name + ", got " + got);
      check_block_axis(def, shape_field, shape[0], op.row_axis);
      check_block_axis(def, shape_field, shape[1], p.k_axis);
      return;
  }
}

ScaledGemmProblem analyse(const Definition& def, const KernelTemplate& kernel) {
  if (kernel.target != DeviceKind::Cuda || kernel.build != TemplateBuild::SharedObject)
    mismatch(def, "kernelarc.op_family",
             "the scaled_gemm binder generates headers for CUDA shared objects; template " +
                 kernel.name + " is not one");
  ScaledGemmProblem p;
  if (def.outputs.size() != 1)
    mismatch(def, "outputs",
             "expected one output C [M, N], got " + std::to_string(def.outputs.size()));
  p.c = &def.outputs.front();
  if (!is_matrix(*p.c)) mismatch(def, "outputs." + p.c->name + ".shape", "expected [M, N]");
  if (!is_packed_float_dtype(p.c->dtype))
    mismatch(def, "outputs." + p.c->name + ".dtype",
             "expected bfloat16, float16 or float32, got " + std::string(dtype_name(p.c->dtype)));
  p.m_axis = (*p.c->shape)[0];
  p.n_axis = (*p.c->shape)[1];
  if (p.m_axis == p.n_axis)
    mismatch(def, "outputs." + p.c->name + ".shape",
             "M and N must be different axes (they tell A from B)");
  read_params(def, p);
  find_operands(def, p);
  check_scale(def, p, p.a, true);
  check_scale(def, p, p.b, false);
  return p;
}

std::string cuda_type(DType dtype) {
  if (dtype == DType::BFloat16) return "CUDA_R_16BF";
  if (dtype == DType::Float16) return "CUDA_R_16F";
  return "CUDA_R_32F";
}

/// The body of KaArgs::a_scale / b_scale: the scale of operand row `row` in K block `kb`.
std::string scale_lookup(const ScaledOperand& op, const char* pointer) {
  switch (op.kind) {
    case ScaleKind::Tensor:
      return fmt::format("(void)row;\n    (void)kb;\n    return {}[0];", pointer);
    case ScaleKind::Row:
      return fmt::format("(void)kb;\n    return {}[row];", pointer);
    case ScaleKind::Block1x128:
      return fmt::format("return {}[row * k_blocks + kb];", pointer);
    case ScaleKind::Block128x128:
      return fmt::format("return {}[(row / 128) * k_blocks + kb];", pointer);
  }
  return "";
}

std::string generate_header(const ScaledGemmProblem& p, const Definition& def,
                            const KernelTemplate& kernel) {
  const bool blocked = p.a.kind >= ScaleKind::Block1x128 || p.b.kind >= ScaleKind::Block1x128;
  std::string text = fmt::format(
      "// ka_problem.h: generated by kernelarc's scaled_gemm binder for {} (cuda template {}).\n"
      "#pragma once\n",
      def.name, kernel.name);
  text += float_conversion_prelude(true);
  text += fmt::format(
      "\n// The raw bits of a float8_e4m3fn element.\n"
      "typedef unsigned char ka_e4m3_t;\n"
      "typedef {} ka_c_t;\n"
      "#define KA_CUDA_TYPE_C {}\n\n"
      "// How a scale tensor maps onto its operand (A's rows are M, B's rows are N).\n"
      "#define KA_SCALE_TENSOR 0         // one float\n"
      "#define KA_SCALE_ROW 1            // one float per row: [M] or [N]\n"
      "#define KA_SCALE_BLOCK_1X128 2    // [rows, ceil(K / 128)], row-major\n"
      "#define KA_SCALE_BLOCK_128X128 3  // [ceil(rows / 128), ceil(K / 128)], row-major\n"
      "#define KA_SCALE_A_KIND {}  // {}\n"
      "#define KA_SCALE_B_KIND {}  // {}\n"
      "// 1 when a scale changes along K: partial sums are scaled per block of 128 K elements.\n"
      "#define KA_SCALE_BLOCKED {}\n"
      "#define KA_SCALE_BLOCK_K 128\n"
      "#define KA_INPUT_A {}\n#define KA_INPUT_B {}\n"
      "#define KA_INPUT_SCALE_A {}\n#define KA_INPUT_SCALE_B {}\n\n",
      header_element_type(p.c->dtype, true), cuda_type(p.c->dtype), static_cast<int>(p.a.kind),
      kind_text(p.a.kind, true), static_cast<int>(p.b.kind), kind_text(p.b.kind, false),
      blocked ? 1 : 0, p.a.index, p.b.index, p.a.scale_index, p.b.scale_index);
  text += fmt::format(
      "// C[m, n] = sum_k a[m * k + k'] * b[n * k + k'] * a_scale(m, k' / 128) * b_scale(n, k' / "
      "128).\n"
      "struct KaArgs {{\n"
      "  const ka_e4m3_t* a;  // {} [M, K], row-major\n"
      "  const ka_e4m3_t* b;  // {} [N, K], row-major\n"
      "  const float* scale_a;  // {}\n"
      "  const float* scale_b;  // {}\n"
      "  ka_c_t* c;  // {} [M, N], row-major\n"
      "  long long m, n, k;\n"
      "  long long k_blocks;  // ceil(K / 128)\n\n"
      "  // The scale of A's row `row` (< m) in K block `kb` (< k_blocks).\n"
      "  KA_HD float a_scale(long long row, long long kb) const {{\n    {}\n  }}\n"
      "  // The scale of B's row `row` (the output column, < n) in K block `kb`.\n"
      "  KA_HD float b_scale(long long row, long long kb) const {{\n    {}\n  }}\n"
      "}};\n",
      p.a.spec->name, p.b.spec->name, p.a.scale->name, p.b.scale->name, p.c->name,
      scale_lookup(p.a, "scale_a"), scale_lookup(p.b, "scale_b"));

  // ka_bind: the tensors' dtypes and ranks, the block counts (before the shapes, whose block
  // axes take their values from the first scale tensor), the shapes, then KaArgs.
  std::string body = bind_every_tensor_check(def);
  body += bind_axis_locals(def);
  body += fmt::format(
      "  const long long m = ka_axis_{}, n = ka_axis_{}, k = ka_axis_{};\n"
      "  const long long k_blocks = (k + 127) / 128;\n",
      p.m_axis, p.n_axis, p.k_axis);
  for (const ScaledOperand* op : {&p.a, &p.b}) {
    const std::string slot = fmt::format("inputs[{}]", op->scale_index);
    const std::string rows = op == &p.a ? "m" : "n";
    if (op->kind == ScaleKind::Block1x128) {
      body += fmt::format(
          "  if ({0}.shape[1] != k_blocks) return \"{1}: expected ceil(K / 128) columns\";\n", slot,
          op->scale->name);
    } else if (op->kind == ScaleKind::Block128x128) {
      body += fmt::format(
          "  if ({0}.shape[0] != ({2} + 127) / 128 || {0}.shape[1] != k_blocks)\n"
          "    return \"{1}: expected shape [ceil(rows / 128), ceil(K / 128)]\";\n",
          slot, op->scale->name, rows);
    }
  }
  body += bind_every_shape_check(def);
  body += fmt::format(
      "  args->a = static_cast<const ka_e4m3_t*>(inputs[{}].data);\n"
      "  args->b = static_cast<const ka_e4m3_t*>(inputs[{}].data);\n"
      "  args->scale_a = static_cast<const float*>(inputs[{}].data);\n"
      "  args->scale_b = static_cast<const float*>(inputs[{}].data);\n"
      "  args->c = static_cast<ka_c_t*>(outputs[0].data);\n"
      "  args->m = m;\n  args->n = n;\n  args->k = k;\n  args->k_blocks = k_blocks;\n"
      "  return nullptr;\n",
      p.a.index, p.b.index, p.a.scale_index, p.b.scale_index);
  return text + ka_bind_definition(body, "fills *args; nullptr or what is wrong");
}

class ScaledGemmBinder : public FamilyBinder {
 public:
  std::vector<std::string> families() const override { return {"scaled_gemm"}; }

  FamilyBinding bind(const Definition& definition, const KernelTemplate& kernel) const override {
    const ScaledGemmProblem p = analyse(definition, kernel);
    FamilyBinding binding;
    binding.header = generate_header(p, definition, kernel);
    binding.sizes = {{"M", p.m_axis}, {"N", p.n_axis}, {"K", p.k_axis}};
    const bool blocked = p.a.kind >= ScaleKind::Block1x128 || p.b.kind >= ScaleKind::Block1x128;
    binding.constants = {
        {"C_BYTES", static_cast<int64_t>(dtype_size(p.c->dtype))},
        {"SCALE_A_KIND", static_cast<int64_t>(p.a.kind)},
        {"SCALE_B_KIND", static_cast<int64_t>(p.b.kind)},
        {"SCALE_BLOCKED", blocked ? 1 : 0},
    };
    return binding;
  }
};

}  // namespace
}  // namespace scaled_gemm_binder

std::unique_ptr<FamilyBinder> make_scaled_gemm_binder() {
  return std::make_unique<scaled_gemm_binder::ScaledGemmBinder>();
}

}  // namespace kernelarc
