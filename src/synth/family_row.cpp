// The row binder: rmsnorm, layernorm, softmax, logsumexp and per-row (per-token) float8
// quantization over the last axis of [..., C] tensors, with an optional fused element-wise
// prologue (e.g. a residual add) whose value may also be written out. See docs/TEMPLATES.md
// ("Family: row reductions").
#include "synth/family_row.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "synth/family.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

constexpr const char* kRowFamilies[] = {"rmsnorm",   "layernorm", "softmax",
                                        "logsumexp", "quantize",  "reduce"};

RowOp op_of(std::string_view family) {
  if (family == "rmsnorm") return RowOp::RmsNorm;
  if (family == "layernorm") return RowOp::LayerNorm;
  if (family == "softmax") return RowOp::Softmax;
  if (family == "quantize") return RowOp::Quantize;
  if (family == "reduce") return RowOp::Reduce;
  return RowOp::LogSumExp;
}

bool is_norm(RowOp op) {
  return op == RowOp::RmsNorm || op == RowOp::LayerNorm;
}

void check_dtype(const Definition& def, const std::string& field, DType dtype, bool scalar) {
  if (scalar ? is_scalar_operand_dtype(dtype) : is_packed_float_dtype(dtype)) return;
  mismatch(def, field + ".dtype",
           std::string("expected ") +
               (scalar ? "float32, float16, bfloat16, float64, int32 or int64"
                       : "float32, float16 or bfloat16") +
               ", got " + std::string(dtype_name(dtype)));
}

RowTensor row_tensor_of(const TensorSpec& spec, int index) {
  return {spec.name, spec.dtype, index, spec.shape.value_or(std::vector<std::string>{})};
}

/// The row shape: the shape of the first input of the highest rank.
std::vector<std::string> find_row_shape(const Definition& def) {
  const TensorSpec* widest = nullptr;
  for (const TensorSpec& input : def.inputs) {
    if (input.is_scalar()) continue;
    if (!widest || input.shape->size() > widest->shape->size()) widest = &input;
  }
  if (!widest || widest->shape->empty())
    mismatch(def, "inputs", "expected an input of shape [..., C] (the rows to reduce)");
  return *widest->shape;
}

bool is_vector_name(const std::string& name) {
  return name == "weight" || name == "bias";
}

/// Sorts the inputs into row inputs, per-column vectors and scalars.
void classify_inputs(const Definition& def, RowProblem& row) {
  const std::vector<std::string> column_shape = {row.row_shape.back()};
  std::vector<RowTensor> vectors;
  for (std::size_t i = 0; i < def.inputs.size(); ++i) {
    const TensorSpec& spec = def.inputs[i];
    const std::string field = "inputs." + spec.name;
    const RowTensor tensor = row_tensor_of(spec, static_cast<int>(i));
    const bool scalar = spec.is_scalar() || spec.shape->empty();
    check_dtype(def, field, spec.dtype, scalar);
    if (scalar) {
      row.scalars.push_back(tensor);
    } else if (*spec.shape == row.row_shape &&
               !(row.row_shape.size() == 1 && is_vector_name(spec.name))) {
      row.row_inputs.push_back(tensor);
    } else if (*spec.shape == column_shape) {
      vectors.push_back(tensor);
    } else if (is_vector_name(spec.name)) {
      mismatch(def, field,
               "expected shape " + shape_text(column_shape) + ", got " + shape_text(*spec.shape));
    } else {
      mismatch(def, field,
               "expected shape " + shape_text(row.row_shape) + " (rows), " +
                   shape_text(column_shape) + " (per column) or a scalar, got " +
                   shape_text(*spec.shape));
    }
  }
  const std::size_t allowed = row.op == RowOp::RmsNorm ? 1 : row.op == RowOp::LayerNorm ? 2 : 0;
  if (vectors.size() > allowed) {
    mismatch(def, "inputs." + vectors[allowed].name,
             std::string("a ") + row.family + " takes " +
                 (allowed == 0   ? "no per-column input"
                  : allowed == 1 ? "at most one per-column input (weight)"
                                 : "at most two per-column inputs (weight, bias)"));
  }
  const auto named = [&](const char* name) -> std::optional<RowTensor> {
    for (const RowTensor& v : vectors)
      if (v.name == name) return v;
    return std::nullopt;
  };
  if (row.op == RowOp::LayerNorm && (named("weight") || named("bias"))) {
    row.weight = named("weight");
    row.bias = named("bias");
    if (vectors.size() == 2 && !(row.weight && row.bias))
      mismatch(def, "inputs", "with an input named weight or bias, the other must be named too");
  } else {
    if (!vectors.empty()) row.weight = vectors[0];
    if (vectors.size() > 1) row.bias = vectors[1];
  }
  if (row.op == RowOp::RmsNorm && !vectors.empty() && vectors[0].name == "bias")
    mismatch(def, "inputs.bias", "an rmsnorm takes a weight, not a bias");
  if (row.row_inputs.empty())
    mismatch(def, "inputs", "expected an input of shape " + shape_text(row.row_shape));
}

/// Quantize's format and granularity: {"format": "float8_e4m3fn"|"float8_e5m2",
/// "granularity": "per_token"}.
void read_quantize_params(const Definition& def, RowProblem& row) {
  const OrderedJson& params = def.ext.op_params;
  const std::string base = "kernelarc.op_params";
  const auto format = params.find("format");
  if (format == params.end() || !format->is_string())
    mismatch(def, base + ".format", "expected \"float8_e4m3fn\" or \"float8_e5m2\"");
  if (*format == "float8_e4m3fn") {
    row.fp8_max = 448.0;
  } else if (*format == "float8_e5m2") {
    row.fp8_max = 57344.0;
  } else {
    mismatch(def, base + ".format",
             "expected \"float8_e4m3fn\" or \"float8_e5m2\", got " + format->dump());
  }
  const auto granularity = params.find("granularity");
  if (granularity != params.end() && *granularity != "per_token")
    mismatch(
        def, base + ".granularity",
        "the row templates quantize per token (one scale per row), got " + granularity->dump());
}

/// Reduce's operation and axis: {"op": "sum"|"mean"|"max"|"min", "dim": -1 or the last axis}.
void read_reduce_params(const Definition& def, RowProblem& row) {
  const OrderedJson& params = def.ext.op_params;
  const std::string base = "kernelarc.op_params";
  const auto op = params.find("op");
  const std::map<std::string, RowReduction> known = {{"sum", RowReduction::Sum},
                                                     {"mean", RowReduction::Mean},
                                                     {"max", RowReduction::Max},
                                                     {"min", RowReduction::Min}};
  if (op == params.end() || !op->is_string() || !known.count(op->get<std::string>()))
    mismatch(def, base + ".op",
             "expected \"sum\", \"mean\", \"max\" or \"min\"" +
                 (op == params.end() ? std::string() : ", got " + op->dump()));
  row.reduction = known.at(op->get<std::string>());
  const auto dim = params.find("dim");
  const auto last = static_cast<int64_t>(row.row_shape.size()) - 1;
  if (dim != params.end() &&
      !(dim->is_number_integer() && (dim->get<int64_t>() == -1 || dim->get<int64_t>() == last)))
    mismatch(def, base + ".dim",
             "the row templates reduce the last axis (-1 or " + std::to_string(last) + "), got " +
                 dim->dump());
}

void read_op_params(const Definition& def, RowProblem& row) {
  const OrderedJson& params = def.ext.op_params;
  const std::string base = "kernelarc.op_params";
  if (!params.is_object()) mismatch(def, base, "expected an object");
  const bool quantize = row.op == RowOp::Quantize;
  const bool reduce = row.op == RowOp::Reduce;
  for (const auto& [key, value] : params.items()) {
    const bool known = key == "eps" || key == "prologue" || key == "prologue_output" ||
                       (quantize && (key == "format" || key == "granularity")) ||
                       (reduce && (key == "op" || key == "dim"));
    if (!known)
      mismatch(def, base + "." + key,
               quantize ? "unknown field (expected format, granularity, prologue)"
               : reduce ? "unknown field (expected op, dim, prologue)"
                        : "unknown field (expected eps, prologue, prologue_output)");
  }
  if (quantize) read_quantize_params(def, row);
  if (reduce) read_reduce_params(def, row);
  if ((quantize || reduce) && params.contains("prologue_output"))
    mismatch(def, base + ".prologue_output", "a " + row.family + " writes no prologue output");
  if (params.contains("eps")) {
    if (!is_norm(row.op)) mismatch(def, base + ".eps", "a " + row.family + " takes no eps");
    const OrderedJson& eps = params["eps"];
    if (!eps.is_number() || !std::isfinite(eps.get<double>()) || eps.get<double>() < 0)
      mismatch(def, base + ".eps", "expected a finite number >= 0, got " + eps.dump());
    row.eps = eps.get<double>();
  }

  std::set<std::string> variables;
  for (const RowTensor& t : row.row_inputs) variables.insert(t.name);
  for (const RowTensor& t : row.scalars) variables.insert(t.name);
  if (params.contains("prologue")) {
    if (!params["prologue"].is_string())
      mismatch(def, base + ".prologue", "expected a string, got " + params["prologue"].dump());
    row.prologue = ElementwiseExpr::parse(params["prologue"].get<std::string>(), base + ".prologue",
                                          variables);
  } else if (row.row_inputs.size() == 1) {
    row.prologue = ElementwiseExpr::parse(row.row_inputs[0].name, base + ".prologue", variables);
  } else {
    mismatch(def, base + ".prologue",
             "required with several row inputs (" + std::to_string(row.row_inputs.size()) +
                 "): an element-wise expression combining them, e.g. \"" + row.row_inputs[0].name +
                 " + " + row.row_inputs[1].name + "\"");
  }

  if (params.contains("prologue_output")) {
    const OrderedJson& value = params["prologue_output"];
    const std::string field = base + ".prologue_output";
    if (!value.is_string()) mismatch(def, field, "expected a string, got " + value.dump());
    const std::string name = value.get<std::string>();
    const auto it = std::find_if(def.outputs.begin(), def.outputs.end(),
                                 [&](const TensorSpec& t) { return t.name == name; });
    if (it == def.outputs.end()) mismatch(def, field, "no output named \"" + name + "\"");
    if (it->is_scalar() || *it->shape != row.row_shape)
      mismatch(def, field,
               "output \"" + name + "\" must have the row shape " + shape_text(row.row_shape));
    row.prologue_output = row_tensor_of(*it, static_cast<int>(it - def.outputs.begin()));
  }
}

/// Quantize's two outputs: the row in the float8 format and the float32 scale of each row.
void find_quantize_outputs(const Definition& def, RowProblem& row) {
  if (def.outputs.size() != 2)
    mismatch(def, "outputs",
             "expected 2 outputs (the quantized rows and the scale of each row), got " +
                 std::to_string(def.outputs.size()));
  std::vector<std::string> per_row = row.row_shape;
  per_row.pop_back();
  const DType format = row.fp8_max == 448.0 ? DType::Float8E4M3FN : DType::Float8E5M2;
  for (std::size_t i = 0; i < def.outputs.size(); ++i) {
    const TensorSpec& spec = def.outputs[i];
    const std::string field = "outputs." + spec.name;
    if (!spec.is_scalar() && *spec.shape == row.row_shape) {
      if (spec.dtype != format)
        mismatch(def, field + ".dtype",
                 "expected " + std::string(dtype_name(format)) +
                     " (kernelarc.op_params.format), got " + std::string(dtype_name(spec.dtype)));
      row.output = row_tensor_of(spec, static_cast<int>(i));
    } else if (!spec.is_scalar() && *spec.shape == per_row) {
      if (spec.dtype != DType::Float32)
        mismatch(def, field + ".dtype",
                 "expected float32 (the scale), got " + std::string(dtype_name(spec.dtype)));
      row.scale_output = row_tensor_of(spec, static_cast<int>(i));
    } else {
      mismatch(def, field,
               "expected shape " + shape_text(row.row_shape) + " (the quantized rows) or " +
                   shape_text(per_row) + " (the scales)");
    }
  }
  if (!row.scale_output || row.output.name.empty())
    mismatch(def, "outputs", "expected one output of each shape (the quantized rows, the scales)");
}

void find_output(const Definition& def, RowProblem& row) {
  if (row.op == RowOp::Quantize) return find_quantize_outputs(def, row);
  const std::size_t expected = row.prologue_output ? 2 : 1;
  if (def.outputs.size() != expected) {
    mismatch(def, "outputs",
             "expected " + std::to_string(expected) + " output" + (expected == 2 ? "s" : "") +
                 (row.prologue_output ? " (the result and the prologue_output)" : "") + ", got " +
                 std::to_string(def.outputs.size()));
  }
  for (std::size_t i = 0; i < def.outputs.size(); ++i) {
    const TensorSpec& spec = def.outputs[i];
    const std::string field = "outputs." + spec.name;
    check_dtype(def, field, spec.dtype, false);
    if (row.prologue_output && row.prologue_output->index == static_cast<int>(i)) continue;
    std::vector<std::string> shape = row.row_shape;
    if (writes_row_values(row.op)) shape.pop_back();
    if (spec.is_scalar() || *spec.shape != shape)
      mismatch(def, field, "expected shape " + shape_text(shape));
    row.output = row_tensor_of(spec, static_cast<int>(i));
  }
}

std::string product(const std::vector<std::string>& axes, std::size_t count) {
  if (count == 0) return "1";
  std::string text;
  for (std::size_t i = 0; i < count; ++i) text += (i ? " * " : "") + axes[i];
  return text;
}

class RowBinder : public FamilyBinder {
 public:
  std::vector<std::string> families() const override {
    return {std::begin(kRowFamilies), std::end(kRowFamilies)};
  }

  FamilyBinding bind(const Definition& def, const KernelTemplate& kernel) const override {
    const std::string& family = def.ext.op_family;
    const auto families = this->families();
    if (std::find(families.begin(), families.end(), family) == families.end())
      mismatch(
          def, "kernelarc.op_family",
          "expected rmsnorm, layernorm, softmax, logsumexp or quantize, got \"" + family + "\"");
    if (!kernel.serves(family))
      mismatch(def, "kernelarc.op_family",
               "template " + kernel.name + " does not serve \"" + family + "\"");

    RowProblem row;
    row.op = op_of(family);
    row.family = family;
    row.row_shape = find_row_shape(def);
    classify_inputs(def, row);
    read_op_params(def, row);
    find_output(def, row);
    row.n_inputs = static_cast<int>(def.inputs.size());
    row.n_outputs = static_cast<int>(def.outputs.size());

    FamilyBinding binding;
    binding.header = generate_row_header(row, def, kernel);
    binding.sizes["ROWS"] = product(row.row_shape, row.row_shape.size() - 1);
    binding.sizes["COLS"] = row.row_shape.back();
    int64_t max_bytes = 0;
    for (const RowTensor& t : row.row_inputs)
      max_bytes = std::max<int64_t>(max_bytes, static_cast<int64_t>(dtype_size(t.dtype)));
    binding.constants["MAX_ELEM_BYTES"] = max_bytes;
    binding.constants["NUM_ROW_INPUTS"] = static_cast<int64_t>(row.row_inputs.size());
    binding.constants["NUM_VECTORS"] = int64_t{row.weight.has_value()} + row.bias.has_value();
    return binding;
  }
};

}  // namespace

std::unique_ptr<FamilyBinder> make_row_binder() {
  return std::make_unique<RowBinder>();
}

}  // namespace kernelarc
