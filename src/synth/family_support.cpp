#include "synth/family_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace kernelarc {

AxisValues static_axes(const Definition& def) {
  AxisValues known;
  for (const Axis& axis : def.axes)
    if (axis.kind == AxisKind::Const) known[axis.name] = axis.value;
  for (bool progress = true; progress;) {
    progress = false;
    for (const Axis& axis : def.axes) {
      if (axis.kind != AxisKind::Expr || known.contains(axis.name)) continue;
      try {
        const std::set<std::string> uses = expr_variables(axis.expression);
        if (!std::all_of(uses.begin(), uses.end(),
                         [&](const std::string& use) { return known.contains(use); }))
          continue;
        known[axis.name] = evaluate_expr(axis.expression, known);
        progress = true;
      } catch (const ExprError&) {
        // The definition loader reports broken axis expressions; such an axis is not static.
      }
    }
  }
  return known;
}

void mismatch(const Definition& def, std::string_view field, std::string_view problem) {
  std::string message = def.path.empty() ? def.name : def.path.string();
  message += ": ";
  message += field;
  message += ": ";
  message += problem;
  throw TemplateMismatch(message);
}

void require_nvrtc_template(const Definition& def, const KernelTemplate& kernel,
                            std::string_view binder) {
  if (!kernel.serves(def.ext.op_family))
    mismatch(def, "kernelarc.op_family",
             "template " + kernel.name + " does not serve \"" + def.ext.op_family + "\"");
  if (kernel.target != DeviceKind::Cuda || kernel.build != TemplateBuild::Nvrtc)
    mismatch(def, "kernelarc.op_family",
             "the " + std::string(binder) +
                 " binder generates headers for CUDA kernels launched by the backend (nvrtc); "
                 "template " +
                 kernel.name + " is not one");
}

std::string kernel_params_define(const Definition& def,
                                 const std::function<std::string(DType)>& element_type) {
  std::vector<std::string> params, axes;
  for (const TensorSpec& spec : def.inputs)
    params.push_back(fmt::format("const {}* ka_in_{}", element_type(spec.dtype), spec.name));
  for (const TensorSpec& spec : def.outputs)
    params.push_back(fmt::format("{}* ka_out_{}", element_type(spec.dtype), spec.name));
  for (const Axis& axis : def.axes) {
    params.push_back("long long ka_axis_" + axis.name);
    axes.push_back(axis.name);
  }
  return fmt::format(
      "\n// Inputs, outputs (definition order), then one long long per axis ({}).\n"
      "#define KA_KERNEL_PARAMS {}\n",
      fmt::join(axes, ", "), fmt::join(params, ", "));
}

std::string float_literal(double value) {
  std::string text = fmt::format("{:.9g}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + "f";
}

std::string shape_text(const std::vector<std::string>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + shape[i];
  return text + "]";
}

bool is_matrix(const TensorSpec& spec) {
  return !spec.is_scalar() && spec.shape->size() == 2;
}

bool is_packed_float_dtype(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16;
}

bool is_scalar_operand_dtype(DType dtype) {
  return is_packed_float_dtype(dtype) || dtype == DType::Float64 || dtype == DType::Int32 ||
         dtype == DType::Int64;
}

std::string header_element_type(DType dtype, bool cuda) {
  switch (dtype) {
    case DType::Float32:
      return "float";
    case DType::Float16:
      return cuda ? "__half" : "ka_f16";
    case DType::BFloat16:
      return cuda ? "__nv_bfloat16" : "ka_bf16";
    case DType::Float64:
      return "double";
    case DType::Int32:
      return cuda ? "int" : "int32_t";
    case DType::Int64:
      return cuda ? "long long" : "int64_t";
    case DType::Float4E2M1:
    case DType::Float4E2M1FNx2:
      // The bytes, each two E2M1 codes (the first in the low nibble); no C++ type holds one.
      return cuda ? "unsigned char" : "uint8_t";
    default:
      return "void";
  }
}

std::string abi_dtype_name(DType dtype) {
  std::string name = "KA_" + std::string(dtype_name(dtype));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return name;
}

std::string bind_tensor_checks(const TensorSpec& tensor, const std::string& slot) {
  const std::size_t rank = tensor.is_scalar() ? 0 : tensor.shape->size();
  std::string text = fmt::format(
      "  if ({0}.dtype != {1}) return \"{2}: expected dtype {3}\";\n"
      "  if ({0}.ndim != {4}) return \"{2}: expected {4} dimensions\";\n",
      slot, abi_dtype_name(tensor.dtype), tensor.name, dtype_name(tensor.dtype), rank);
  if (rank > 0) {
    text += fmt::format(
        "  if (!ka_contiguous({})) return \"{}: expected a contiguous row-major tensor\";\n", slot,
        tensor.name);
  }
  return text;
}

std::string bind_shape_checks(const TensorSpec& tensor, const std::string& slot) {
  if (tensor.is_scalar() || tensor.shape->empty()) return "";
  std::vector<std::string> conditions;
  for (std::size_t d = 0; d < tensor.shape->size(); ++d)
    conditions.push_back(fmt::format("{}.shape[{}] != ka_axis_{}", slot, d, (*tensor.shape)[d]));
  return fmt::format("  if ({}) return \"{}: expected shape [{}]\";\n",
                     fmt::join(conditions, " || "), tensor.name, fmt::join(*tensor.shape, ", "));
}

std::string bind_every_tensor_check(const Definition& def) {
  std::string body = fmt::format(
      "  if (n_inputs != {0} || n_outputs != {1}) return \"expected {0} inputs and {1} "
      "outputs\";\n",
      def.inputs.size(), def.outputs.size());
  for (std::size_t i = 0; i < def.inputs.size(); ++i)
    body += bind_tensor_checks(def.inputs[i], fmt::format("inputs[{}]", i));
  for (std::size_t i = 0; i < def.outputs.size(); ++i)
    body += bind_tensor_checks(def.outputs[i], fmt::format("outputs[{}]", i));
  return body;
}

std::string bind_axis_locals(const Definition& def) {
  std::string body;
  for (const Axis& a : def.axes) {
    if (a.kind == AxisKind::Const)
      body +=
          fmt::format("  [[maybe_unused]] const long long ka_axis_{} = {}LL;\n", a.name, a.value);
    else if (const auto source = axis_shape_source(def, a.name))
      body += fmt::format("  [[maybe_unused]] const long long ka_axis_{} = {};\n", a.name, *source);
  }
  return body;
}

std::string bind_every_shape_check(const Definition& def) {
  std::string body;
  for (std::size_t i = 0; i < def.inputs.size(); ++i)
    body += bind_shape_checks(def.inputs[i], fmt::format("inputs[{}]", i));
  for (std::size_t i = 0; i < def.outputs.size(); ++i)
    body += bind_shape_checks(def.outputs[i], fmt::format("outputs[{}]", i));
  return body;
}

std::string ka_bind_definition(const std::string& body, std::string_view what) {
  return fmt::format(R"(
inline bool ka_contiguous(const ka_tensor& t) {{
  long long expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {{
    if (t.shape[d] != 1 && t.stride[d] != expected) return false;
    expected *= t.shape[d];
  }}
  return true;
}}

// Checks the tensors against the definition and {}.
inline const char* ka_bind(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs,
                           int n_outputs, KaArgs* args) {{
{}}}
)",
                     what, body);
}

std::string float_conversion_prelude(bool cuda) {
  if (!cuda) {
    return "#define KA_TARGET_CPU 1\n"
           "#define KA_HD inline\n"
           "#include <cstdint>\n"
           "#include <cstdio>\n"
           "#include \"kernelarc/abi.h\"\n"
           "#include \"ka_math.h\"\n"
           "#include \"ka_cpu_types.h\"\n";
  }
  return "#define KA_TARGET_CUDA 1\n"
         "#if defined(__CUDACC__) || defined(__CUDACC_RTC__)\n"
         "#define KA_HD __host__ __device__ __forceinline__\n"
         "#else\n"
         "#define KA_HD inline\n"
         "#endif\n"
         "#include <cuda_bf16.h>\n"
         "#include <cuda_fp16.h>\n"
         "#include \"ka_math.h\"\n"
         "#ifndef __CUDACC_RTC__\n"
         "#include <cstdio>\n"
         "#include \"kernelarc/abi.h\"\n"
         "#endif\n\n"
         "KA_HD float ka_to_float(float x) { return x; }\n"
         "KA_HD float ka_to_float(__half x) { return __half2float(x); }\n"
         "KA_HD float ka_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }\n"
         "template <typename T> KA_HD T ka_from_float(float x);\n"
         "template <> KA_HD float ka_from_float<float>(float x) { return x; }\n"
         "template <> KA_HD __half ka_from_float<__half>(float x) { return __float2half_rn(x); }\n"
         "template <> KA_HD __nv_bfloat16 ka_from_float<__nv_bfloat16>(float x) {\n"
         "  return __float2bfloat16_rn(x);\n"
         "}\n";
}

std::optional<std::string> axis_shape_source(const Definition& def, const std::string& axis) {
  for (const char* kind : {"inputs", "outputs"}) {
    const std::vector<TensorSpec>& tensors = kind[0] == 'i' ? def.inputs : def.outputs;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto& shape = tensors[i].shape;
      for (std::size_t d = 0; shape && d < shape->size(); ++d)
        if ((*shape)[d] == axis) return fmt::format("{}[{}].shape[{}]", kind, i, d);
    }
  }
  return std::nullopt;
}

}  // namespace kernelarc
