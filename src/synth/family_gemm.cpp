// The gemm binder: C[M, N] = epilogue(A @ B) with A [M, K] or [K, M] and B [N, K] or [K, N],
// the two matrices found by the reduced axis they share. See docs/TEMPLATES.md ("Family: gemm").
#include <algorithm>
#include <set>

#include "synth/family.h"
#include "synth/family_gemm.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

void check_dtype(const Definition& def, const std::string& field, DType dtype) {
  if (is_packed_float_dtype(dtype)) return;
  mismatch(def, field + ".dtype",
           "expected float32, float16 or bfloat16, got " + std::string(dtype_name(dtype)));
}

GemmTensor gemm_tensor_of(const TensorSpec& spec, int index) {
  return {spec.name, spec.dtype, index, spec.shape.value_or(std::vector<std::string>{})};
}

/// The axis `spec` pairs with `axis` ([axis, X] or [X, axis]), and whether `axis` comes first.
std::optional<std::pair<std::string, bool>> other_axis(const TensorSpec& spec,
                                                       const std::string& axis) {
  if (!is_matrix(spec)) return std::nullopt;
  const auto& shape = *spec.shape;
  if (shape[0] == axis) return std::make_pair(shape[1], true);
  if (shape[1] == axis) return std::make_pair(shape[0], false);
  return std::nullopt;
}

void check_operand_dtypes(const Definition& def, const GemmProblem& gemm) {
  check_dtype(def, "inputs." + gemm.a.name, gemm.a.dtype);
  check_dtype(def, "inputs." + gemm.b.name, gemm.b.dtype);
  if (gemm.a.dtype != gemm.b.dtype)
    mismatch(def, "inputs." + gemm.b.name + ".dtype",
             "expected " + std::string(dtype_name(gemm.a.dtype)) + " (the dtype of " + gemm.a.name +
                 "), got " + std::string(dtype_name(gemm.b.dtype)));
}

constexpr const char* kOperandKeys[] = {"a", "a_layout", "b", "b_layout"};

const std::string& operand_param(const Definition& def, const std::string& key,
                                 std::initializer_list<const char*> allowed = {}) {
  const OrderedJson& params = def.ext.op_params;
  const std::string field = "kernelarc.op_params." + key;
  if (!params.contains(key))
    mismatch(def, field, "missing: a, a_layout, b and b_layout come together");
  if (!params[key].is_string()) mismatch(def, field, "expected a string");
  const std::string& value = params[key].get_ref<const std::string&>();
  if (allowed.size() > 0 &&
      std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return value == a; })) {
    std::string names;
    for (const char* a : allowed)
      names += (names.empty() ? "\"" : " or \"") + std::string(a) + "\"";
    mismatch(def, field, "expected " + names + ", got \"" + value + "\"");
  }
  return value;
}

int input_index(const Definition& def, const std::string& field, const std::string& name) {
  for (int i = 0; i < static_cast<int>(def.inputs.size()); ++i)
    if (def.inputs[i].name == name) {
      if (!is_matrix(def.inputs[i]))
        mismatch(def, "inputs." + name + ".shape",
                 "expected a matrix (it is operand " + field + ")");
      return i;
    }
  mismatch(def, "kernelarc.op_params." + field, "no input is named \"" + name + "\"");
}

/// A and B as op_params name them ("a", "b" and their layouts "mk"/"km", "kn"/"nk"): axis names
/// cannot tell them apart when they repeat (a square product, a square weight: K is M or N), and
/// the recognizer, which saw the product, writes them. The shapes must agree with C's axes.
void named_operands(const Definition& def, GemmProblem& gemm) {
  const int a = input_index(def, "a", operand_param(def, "a"));
  const int b = input_index(def, "b", operand_param(def, "b"));
  if (a == b) mismatch(def, "kernelarc.op_params.b", "A and B are the same input");
  gemm.a_k_major = operand_param(def, "a_layout", {"mk", "km"}) == "mk";
  gemm.b_k_major = operand_param(def, "b_layout", {"kn", "nk"}) == "nk";
  const std::vector<std::string>& a_shape = *def.inputs[a].shape;
  const std::vector<std::string>& b_shape = *def.inputs[b].shape;
  const std::string& a_m = a_shape[gemm.a_k_major ? 0 : 1];
  const std::string& b_n = b_shape[gemm.b_k_major ? 0 : 1];
  gemm.k_axis = a_shape[gemm.a_k_major ? 1 : 0];
  const std::string& b_k = b_shape[gemm.b_k_major ? 1 : 0];
  if (a_m != gemm.m_axis || gemm.k_axis != b_k || b_n != gemm.n_axis)
    mismatch(def, "inputs",
             "op_params make A " + def.inputs[a].name + " " + shape_text(a_shape) + " and B " +
                 def.inputs[b].name + " " + shape_text(b_shape) +
                 ", which do not multiply into C " + shape_text({gemm.m_axis, gemm.n_axis}));
  gemm.a = gemm_tensor_of(def.inputs[a], a);
  gemm.b = gemm_tensor_of(def.inputs[b], b);
}

/// Picks A and B: named by op_params, or else the one pair of matrix inputs where A holds C's
/// row axis, B C's column axis, and both the same third axis K. When the roles can be swapped
/// (C square in one axis name), the earlier input is A.
void find_operands(const Definition& def, GemmProblem& gemm) {
  if (std::any_of(std::begin(kOperandKeys), std::end(kOperandKeys),
                  [&](const char* key) { return def.ext.op_params.contains(key); })) {
    named_operands(def, gemm);
    return;
  }
  struct Pair {
    int a, b;
    std::string k;
    bool a_first, b_first;
  };
  std::vector<Pair> pairs;
  for (int i = 0; i < static_cast<int>(def.inputs.size()); ++i) {
    const auto a_side = other_axis(def.inputs[i], gemm.m_axis);
    if (!a_side) continue;
    for (int j = 0; j < static_cast<int>(def.inputs.size()); ++j) {
      if (i == j) continue;
      const auto b_side = other_axis(def.inputs[j], gemm.n_axis);
      if (!b_side || b_side->first != a_side->first) continue;
      const std::string& k = a_side->first;
      if (k == gemm.m_axis || k == gemm.n_axis) continue;
      const bool swapped = std::any_of(pairs.begin(), pairs.end(),
                                       [&](const Pair& p) { return p.a == j && p.b == i; });
      if (!swapped) pairs.push_back({i, j, k, a_side->second, b_side->second});
    }
  }
  const std::string expected =
      "expected two matrix inputs sharing a reduced axis K: A " + shape_text({gemm.m_axis, "K"}) +
      " or " + shape_text({"K", gemm.m_axis}) + " and B " + shape_text({gemm.n_axis, "K"}) +
      " or " + shape_text({"K", gemm.n_axis});
  if (pairs.empty()) mismatch(def, "inputs", expected);
  if (pairs.size() > 1) {
    std::string names;
    for (const Pair& p : pairs)
      names += (names.empty() ? "" : ", ") + def.inputs[p.a].name + " @ " + def.inputs[p.b].name;
    mismatch(def, "inputs", expected + "; found several such pairs (" + names + ")");
  }
  const Pair& pair = pairs.front();
  gemm.a = gemm_tensor_of(def.inputs[pair.a], pair.a);
  gemm.b = gemm_tensor_of(def.inputs[pair.b], pair.b);
  gemm.k_axis = pair.k;
  gemm.a_k_major = pair.a_first;  // [M, K]
  gemm.b_k_major = pair.b_first;  // [N, K]
}

/// The epilogue's view of an input other than A and B.
GemmEpilogueInput epilogue_input_of(const Definition& def, const GemmProblem& gemm,
                                    const TensorSpec& spec, int index) {
  const std::string field = "inputs." + spec.name;
  check_dtype(def, field, spec.dtype);
  GemmEpilogueInput input{gemm_tensor_of(spec, index), GemmOperandShape::Scalar};
  if (spec.is_scalar() || spec.shape->empty()) return input;
  if (*spec.shape == std::vector<std::string>{gemm.n_axis}) {
    input.shape = GemmOperandShape::PerColumn;
  } else if (*spec.shape == std::vector<std::string>{gemm.m_axis, gemm.n_axis}) {
    input.shape = GemmOperandShape::Full;
  } else {
    mismatch(def, field + ".shape",
             "expected " + shape_text({gemm.n_axis}) + " (per column), " +
                 shape_text({gemm.m_axis, gemm.n_axis}) +
                 " or a scalar for an epilogue input, got " + shape_text(*spec.shape));
  }
  return input;
}

/// Whether `epilogue` is `pattern` with "bias" standing for `bias_name`: compared on the code
/// both generate, so spacing, parentheses and operand order written the same way do not matter.
bool epilogue_is(const ElementwiseExpr& epilogue, const std::string& pattern,
                 const std::string& bias_name) {
  const ElementwiseExpr expected = ElementwiseExpr::parse(pattern, "pattern", {"acc", "bias"});
  const auto code = [&](const std::string& name) { return name == bias_name ? "bias" : name; };
  return epilogue.to_code(code) == expected.to_code([](const std::string& n) { return n; });
}

void classify_epilogue(GemmProblem& gemm) {
  gemm.kind = GemmEpilogueKind::Custom;  // unless one of the library forms matches
  const ElementwiseExpr& epilogue = *gemm.epilogue;
  const std::set<std::string>& used = epilogue.variables();
  if (used == std::set<std::string>{"acc"}) {
    const std::pair<const char*, GemmEpilogueKind> forms[] = {
        {"acc", GemmEpilogueKind::None},
        {"relu(acc)", GemmEpilogueKind::Relu},
        // Libraries' GELU epilogues (cuBLASLt's) use the tanh approximation, so only the tanh
        // form maps onto them; the erf form (torch's default) is a custom epilogue.
        {"gelu_tanh(acc)", GemmEpilogueKind::Gelu}};
    for (const auto& [pattern, kind] : forms)
      if (epilogue_is(epilogue, pattern, "")) gemm.kind = kind;
    return;
  }
  if (used.size() != 2 || !used.count("acc") || gemm.epilogue_inputs.size() != 1) return;
  const GemmEpilogueInput& input = gemm.epilogue_inputs.front();
  if (input.shape != GemmOperandShape::PerColumn) return;
  const std::pair<const char*, GemmEpilogueKind> forms[] = {
      {"acc + bias", GemmEpilogueKind::Bias},
      {"bias + acc", GemmEpilogueKind::Bias},
      {"relu(acc + bias)", GemmEpilogueKind::BiasRelu},
      {"relu(bias + acc)", GemmEpilogueKind::BiasRelu},
      {"gelu_tanh(acc + bias)", GemmEpilogueKind::BiasGelu},
      {"gelu_tanh(bias + acc)", GemmEpilogueKind::BiasGelu}};
  for (const auto& [pattern, kind] : forms) {
    if (!epilogue_is(epilogue, pattern, input.tensor.name)) continue;
    gemm.kind = kind;
    gemm.bias = input.tensor;
  }
}

/// Reads op_params: {"epilogue"?: string}. Every input that is not A and B must be read by it.
void bind_epilogue(const Definition& def, GemmProblem& gemm) {
  const OrderedJson& params = def.ext.op_params;
  std::optional<std::string> text;
  for (const auto& [key, value] : params.items()) {
    const std::string field = "kernelarc.op_params." + key;
    if (std::any_of(std::begin(kOperandKeys), std::end(kOperandKeys),
                    [&](const char* k) { return key == k; }))
      continue;
    if (key != "epilogue")
      mismatch(def, field,
               "unknown parameter for the gemm family (known: epilogue, a, a_layout, b, b_layout)");
    if (!value.is_string()) mismatch(def, field, "expected a string, e.g. \"gelu(acc + bias)\"");
    text = value.get<std::string>();
  }
  std::set<std::string> variables{"acc"};
  for (int i = 0; i < static_cast<int>(def.inputs.size()); ++i) {
    if (i == gemm.a.index || i == gemm.b.index) continue;
    const TensorSpec& spec = def.inputs[i];
    if (spec.name == "acc")
      mismatch(def, "inputs.acc", "the name acc is the accumulator in a gemm epilogue");
    gemm.epilogue_inputs.push_back(epilogue_input_of(def, gemm, spec, i));
    variables.insert(spec.name);
  }
  if (text) {
    const std::string where =
        (def.path.empty() ? def.name : def.path.string()) + ": kernelarc.op_params.epilogue";
    gemm.epilogue = ElementwiseExpr::parse(*text, where, variables);
  }
  for (const GemmEpilogueInput& input : gemm.epilogue_inputs) {
    if (gemm.epilogue && gemm.epilogue->variables().count(input.tensor.name)) continue;
    mismatch(def, "inputs." + input.tensor.name,
             "a gemm input other than A and B must be used by kernelarc.op_params.epilogue");
  }
  if (gemm.epilogue) classify_epilogue(gemm);
}

class GemmBinder : public FamilyBinder {
 public:
  std::vector<std::string> families() const override { return {"gemm"}; }

  FamilyBinding bind(const Definition& definition, const KernelTemplate& kernel) const override {
    const GemmProblem gemm = analyse_gemm(definition);
    FamilyBinding binding;
    binding.header = generate_gemm_header(gemm, definition, kernel);
    binding.sizes = {{"M", gemm.m_axis}, {"N", gemm.n_axis}, {"K", gemm.k_axis}};
    binding.constants = {
        {"A_BYTES", static_cast<int64_t>(dtype_size(gemm.a.dtype))},
        {"B_BYTES", static_cast<int64_t>(dtype_size(gemm.b.dtype))},
        {"C_BYTES", static_cast<int64_t>(dtype_size(gemm.c.dtype))},
        {"A_K_MAJOR", gemm.a_k_major ? 1 : 0},
        {"B_K_MAJOR", gemm.b_k_major ? 1 : 0},
        {"EPILOGUE_KIND", static_cast<int64_t>(gemm.kind)},
        // cuBLASLt wants the bias in the output's type; 0 when the epilogue has no bias.
        {"BIAS_BYTES", gemm.bias ? static_cast<int64_t>(dtype_size(gemm.bias->dtype)) : 0},
    };
    return binding;
  }
};

}  // namespace

GemmProblem analyse_gemm(const Definition& def) {
  GemmProblem gemm;
  if (def.outputs.size() != 1)
    mismatch(
        def, "outputs",
        "expected one output C [M, N], got " + std::to_string(def.outputs.size()) + " outputs");
  const TensorSpec& out = def.outputs.front();
  if (!is_matrix(out)) mismatch(def, "outputs." + out.name + ".shape", "expected a matrix [M, N]");
  check_dtype(def, "outputs." + out.name, out.dtype);
  gemm.c = gemm_tensor_of(out, 0);
  gemm.m_axis = gemm.c.shape[0];
  gemm.n_axis = gemm.c.shape[1];
  find_operands(def, gemm);
  check_operand_dtypes(def, gemm);
  bind_epilogue(def, gemm);
  gemm.n_inputs = static_cast<int>(def.inputs.size());
  for (const Axis& axis : def.axes) gemm.axes.push_back(axis.name);
  return gemm;
}

std::unique_ptr<FamilyBinder> make_gemm_binder() {
  return std::make_unique<GemmBinder>();
}

}  // namespace kernelarc
