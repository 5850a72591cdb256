// C code of a kernel plan's SIZEs, EXPRs, loads and stores, for both targets.
#include "synth/kernel_plan_code.h"

#include <cmath>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "synth/family.h"
#include "synth/family_elementwise.h"

namespace kernelarc {

namespace {

// The helpers of every plan, written once for both targets: the float type, constants, the
// conversions of 16-bit floats and Python's integer division.
constexpr const char* kPreludeCommon = R"(
KA_HD long long ka_pf_floordiv(long long a, long long b) {
  const long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
KA_HD long long ka_pf_mod(long long a, long long b) {
  const long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
KA_HD ka_pf_float ka_pf_floordiv(ka_pf_float a, ka_pf_float b) { return KA_PF_FN(floor)(a / b); }
KA_HD ka_pf_float ka_pf_mod(ka_pf_float a, ka_pf_float b) {
  const ka_pf_float r = KA_PF_FN(fmod)(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
KA_HD long long ka_pf_fmod(long long a, long long b) { return a % b; }
KA_HD ka_pf_float ka_pf_fmod(ka_pf_float a, ka_pf_float b) { return KA_PF_FN(fmod)(a, b); }
KA_HD long long ka_pf_pow(long long base, long long exponent) {
  long long result = 1;
  for (; exponent > 0; --exponent) result *= base;
  return result;
}
KA_HD ka_pf_float ka_pf_pow(ka_pf_float a, ka_pf_float b) { return KA_PF_FN(pow)(a, b); }
KA_HD long long ka_pf_abs(long long a) { return a < 0 ? -a : a; }
KA_HD ka_pf_float ka_pf_abs(ka_pf_float a) { return KA_PF_FN(fabs)(a); }
// min/max propagate NaN as torch.minimum / torch.maximum do.
KA_HD long long ka_pf_max(long long a, long long b) { return a > b ? a : b; }
KA_HD long long ka_pf_min(long long a, long long b) { return a < b ? a : b; }
KA_HD ka_pf_float ka_pf_max(ka_pf_float a, ka_pf_float b) { return (a != a || a > b) ? a : b; }
KA_HD ka_pf_float ka_pf_min(ka_pf_float a, ka_pf_float b) { return (a != a || a < b) ? a : b; }
KA_HD long long ka_pf_isinf(ka_pf_float a) { return (a == ka_pf_inf() || a == -ka_pf_inf()) ? 1 : 0; }
KA_HD long long ka_pf_isfinite(ka_pf_float a) { return (a == a && ka_pf_isinf(a) == 0) ? 1 : 0; }
KA_HD ka_pf_float ka_pf_exp(ka_pf_float x) { return KA_PF_EXP(x); }
KA_HD ka_pf_float ka_pf_exp2(ka_pf_float x) { return KA_PF_FN(exp2)(x); }
KA_HD ka_pf_float ka_pf_expm1(ka_pf_float x) { return KA_PF_FN(expm1)(x); }
KA_HD ka_pf_float ka_pf_log(ka_pf_float x) { return KA_PF_FN(log)(x); }
KA_HD ka_pf_float ka_pf_log2(ka_pf_float x) { return KA_PF_FN(log2)(x); }
KA_HD ka_pf_float ka_pf_log10(ka_pf_float x) { return KA_PF_FN(log10)(x); }
KA_HD ka_pf_float ka_pf_log1p(ka_pf_float x) { return KA_PF_FN(log1p)(x); }
KA_HD ka_pf_float ka_pf_sqrt(ka_pf_float x) { return KA_PF_FN(sqrt)(x); }
KA_HD ka_pf_float ka_pf_rsqrt(ka_pf_float x) { return ka_pf_float(1) / KA_PF_FN(sqrt)(x); }
KA_HD ka_pf_float ka_pf_reciprocal(ka_pf_float x) { return ka_pf_float(1) / x; }
KA_HD ka_pf_float ka_pf_sin(ka_pf_float x) { return KA_PF_FN(sin)(x); }
KA_HD ka_pf_float ka_pf_cos(ka_pf_float x) { return KA_PF_FN(cos)(x); }
KA_HD ka_pf_float ka_pf_tan(ka_pf_float x) { return KA_PF_FN(tan)(x); }
KA_HD ka_pf_float ka_pf_asin(ka_pf_float x) { return KA_PF_FN(asin)(x); }
KA_HD ka_pf_float ka_pf_acos(ka_pf_float x) { return KA_PF_FN(acos)(x); }
KA_HD ka_pf_float ka_pf_atan(ka_pf_float x) { return KA_PF_FN(atan)(x); }
KA_HD ka_pf_float ka_pf_sinh(ka_pf_float x) { return KA_PF_FN(sinh)(x); }
KA_HD ka_pf_float ka_pf_cosh(ka_pf_float x) { return KA_PF_FN(cosh)(x); }
KA_HD ka_pf_float ka_pf_tanh(ka_pf_float x) { return KA_PF_FN(tanh)(x); }
KA_HD ka_pf_float ka_pf_asinh(ka_pf_float x) { return KA_PF_FN(asinh)(x); }
KA_HD ka_pf_float ka_pf_acosh(ka_pf_float x) { return KA_PF_FN(acosh)(x); }
KA_HD ka_pf_float ka_pf_atanh(ka_pf_float x) { return KA_PF_FN(atanh)(x); }
KA_HD ka_pf_float ka_pf_erf(ka_pf_float x) { return KA_PF_FN(erf)(x); }
KA_HD ka_pf_float ka_pf_erfc(ka_pf_float x) { return KA_PF_FN(erfc)(x); }
KA_HD ka_pf_float ka_pf_atan2(ka_pf_float a, ka_pf_float b) { return KA_PF_FN(atan2)(a, b); }
KA_HD ka_pf_float ka_pf_floor(ka_pf_float x) { return KA_PF_FN(floor)(x); }
KA_HD ka_pf_float ka_pf_ceil(ka_pf_float x) { return KA_PF_FN(ceil)(x); }
// torch.round rounds half to even.
KA_HD ka_pf_float ka_pf_round(ka_pf_float x) { return KA_PF_FN(rint)(x); }
KA_HD ka_pf_float ka_pf_trunc(ka_pf_float x) { return KA_PF_FN(trunc)(x); }
KA_HD ka_pf_float ka_pf_sign(ka_pf_float x) {
  return x != x ? x : ka_pf_float((x > 0) - (x < 0));
}
KA_HD ka_pf_float ka_pf_sigmoid(ka_pf_float x) { return ka_pf_float(1) / (ka_pf_float(1) + ka_pf_exp(-x)); }
KA_HD ka_pf_float ka_pf_relu(ka_pf_float x) { return x != x ? x : (x > 0 ? x : ka_pf_float(0)); }
KA_HD ka_pf_float ka_pf_silu(ka_pf_float x) { return x / (ka_pf_float(1) + ka_pf_exp(-x)); }
KA_HD ka_pf_float ka_pf_gelu(ka_pf_float x) {
  return ka_pf_float(0.5) * x * (ka_pf_float(1) + KA_PF_FN(erf)(x * ka_pf_float(0.70710678118654752440)));
}
KA_HD ka_pf_float ka_pf_gelu_tanh(ka_pf_float x) {
  const ka_pf_float inner = ka_pf_float(0.79788456080286535588) * (x + ka_pf_float(0.044715) * x * x * x);
  return ka_pf_float(0.5) * x * (ka_pf_float(1) + KA_PF_FN(tanh)(inner));
}
// log(exp(a) + exp(b)) as torch.logcumsumexp combines: equal infinities stay, NaN propagates.
KA_HD ka_pf_float ka_pf_logaddexp(ka_pf_float a, ka_pf_float b) {
  if (a != a || b != b) return a + b;
  const ka_pf_float lo = a < b ? a : b, hi = a < b ? b : a;
  if (lo == hi && ka_pf_isinf(lo) != 0) return a;
  return hi + ka_pf_log1p(ka_pf_exp(lo - hi));
}
// torch.nn.functional.softplus with beta 1 and threshold 20.
KA_HD ka_pf_float ka_pf_softplus(ka_pf_float x) {
  return x > ka_pf_float(20) ? x : KA_PF_FN(log1p)(ka_pf_exp(x));
}
)";

std::string prelude_target(bool cuda, bool float64) {
  std::string text = fmt::format("\ntypedef {} ka_pf_float;\n", float64 ? "double" : "float");
  // Float math: the C functions of the float type (builtins on CUDA, <math.h> on the CPU);
  // float exp is ka_math.h's, which vectorises on the CPU.
  text += float64 ? "#define KA_PF_FN(name) name\n#define KA_PF_EXP(x) exp(x)\n"
                  : "#define KA_PF_FN(name) name##f\n#define KA_PF_EXP(x) ka_exp(x)\n";
  if (cuda) {
    text += R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "ka_math.h"
KA_HD ka_pf_float ka_pf_inf() { return (ka_pf_float)__builtin_huge_valf(); }
KA_HD ka_pf_float ka_pf_nan() { return (ka_pf_float)__builtin_nanf(""); }
KA_HD float ka_pf_widen(__half x) { return __half2float(x); }
KA_HD float ka_pf_widen(__nv_bfloat16 x) { return __bfloat162float(x); }
KA_HD __half ka_pf_narrow_f16(float x) { return __float2half_rn(x); }
KA_HD __nv_bfloat16 ka_pf_narrow_bf16(float x) { return __float2bfloat16_rn(x); }
)";
  } else {
    text += R"(#include <math.h>
#include "ka_math.h"
#include "ka_cpu_types.h"
KA_HD ka_pf_float ka_pf_inf() { return (ka_pf_float)__builtin_inff(); }
KA_HD ka_pf_float ka_pf_nan() { return (ka_pf_float)__builtin_nanf(""); }
KA_HD float ka_pf_widen(ka_f16 x) { return ka_to_float(x); }
KA_HD float ka_pf_widen(ka_bf16 x) { return ka_to_float(x); }
KA_HD ka_f16 ka_pf_narrow_f16(float x) { return ka_from_float<ka_f16>(x); }
KA_HD ka_bf16 ka_pf_narrow_bf16(float x) { return ka_from_float<ka_bf16>(x); }
)";
  }
  return text;
}

std::string paren(const std::string& code) {
  return "(" + code + ")";
}

bool is_float_op(const std::string& op) {
  static const std::set<std::string> ops = {
      "exp",        "exp2",      "expm1",    "log",   "log2", "log10", "log1p",   "sqrt", "rsqrt",
      "reciprocal", "sin",       "cos",      "tan",   "asin", "acos",  "atan",    "sinh", "cosh",
      "tanh",       "asinh",     "acosh",    "atanh", "erf",  "erfc",  "sigmoid", "relu", "silu",
      "gelu",       "gelu_tanh", "softplus", "floor", "ceil", "round", "trunc",   "sign"};
  return ops.contains(op);
}

}  // namespace

PlanCodeNames default_plan_code_names(const KernelPlan& plan, const PlanKernel& kernel) {
  PlanCodeNames names;
  names.index = [](int dim) { return fmt::format("ka_i{}", dim); };
  names.pointer = [&plan](const PlanBuffer& buffer) {
    return fmt::format("ka_b{}", &buffer - plan.buffers.data());
  };
  names.stage = [&kernel](const PlanStage& stage) {
    return fmt::format("ka_s{}", &stage - kernel.stages.data());
  };
  return names;
}

std::string plan_element_type(DType dtype, bool cuda) {
  switch (dtype) {
    case DType::Float64:
      return "double";
    case DType::Float32:
      return "float";
    case DType::Float16:
      return cuda ? "__half" : "ka_f16";
    case DType::BFloat16:
      return cuda ? "__nv_bfloat16" : "ka_bf16";
    case DType::Int8:
      return "signed char";
    case DType::Int16:
      return "short";
    case DType::Int32:
      return "int";
    case DType::Int64:
      return "long long";
    case DType::UInt8:
    case DType::Bool:
      return "unsigned char";
    default:
      throw TemplateMismatch(
          fmt::format("the fused family does not support dtype {}", dtype_name(dtype)));
  }
}

std::string plan_code_prelude(bool cuda, bool float64) {
  return prelude_target(cuda, float64) + kPreludeCommon;
}

PlanCodeWriter::PlanCodeWriter(const KernelPlan& plan, const PlanKernel& kernel,
                               std::vector<std::string> axes, PlanCodeNames names, bool cuda)
    : plan_(plan), kernel_(kernel), axes_(std::move(axes)), names_(std::move(names)), cuda_(cuda) {}

std::string PlanCodeWriter::size(const std::string& size) const {
  return paren(axis_expression_code(size, axes_));
}

std::string PlanCodeWriter::float_code(const PlanExpr& expr) const {
  const TypedCode code = this->expr(expr);
  return code.type == ValueType::Float ? code.code : "((ka_pf_float)" + code.code + ")";
}

std::string PlanCodeWriter::int_code(const PlanExpr& expr) const {
  const TypedCode code = this->expr(expr);
  return code.type == ValueType::Int ? code.code : "((long long)" + code.code + ")";
}

TypedCode PlanCodeWriter::expr(const PlanExpr& e) const {
  const std::string& op = e.op;
  auto typed = [&](std::string code) { return TypedCode{std::move(code), e.type}; };
  // Operands converted to the node's type (int operands of a float operation become floats).
  auto operand = [&](std::size_t i) {
    return e.type == ValueType::Float ? float_code(e.args[i]) : int_code(e.args[i]);
  };
  if (op == "f") {
    if (std::isnan(e.number)) return typed("ka_pf_nan()");
    if (std::isinf(e.number)) return typed(e.number > 0 ? "ka_pf_inf()" : "(-ka_pf_inf())");
    return typed(fmt::format("((ka_pf_float){:.17g})", e.number));
  }
  if (op == "i") return typed(fmt::format("({}LL)", e.integer));
  if (op == "size") return typed(size(e.text));
  if (op == "idx") return typed(names_.index(static_cast<int>(e.integer)));
  if (op == "load") return load(*kernel_.find_load(e.text));
  if (op == "stage") return typed(names_.stage(*kernel_.find_stage(e.text)));
  if (op == "acc") return typed(names_.acc);
  if (op == "scan") return typed(names_.scan);
  if (op == "topk_value") return typed(names_.topk_value);
  if (op == "topk_index") return typed(names_.topk_index);
  if (op == "add" || op == "sub" || op == "mul") {
    const char* symbol = op == "add" ? " + " : op == "sub" ? " - " : " * ";
    return typed(paren(operand(0) + symbol + operand(1)));
  }
  if (op == "div") return typed(paren(float_code(e.args[0]) + " / " + float_code(e.args[1])));
  if (op == "neg") return typed(paren("-" + operand(0)));
  if (op == "min" || op == "max" || op == "pow" || op == "fmod" || op == "floordiv" ||
      op == "mod" || op == "abs") {
    std::string args = operand(0);
    if (e.args.size() > 1) args += ", " + operand(1);
    return typed(fmt::format("ka_pf_{}({})", op, args));
  }
  if (op == "atan2")
    return typed(fmt::format("ka_pf_atan2({}, {})", float_code(e.args[0]), float_code(e.args[1])));
  if (is_float_op(op)) return typed(fmt::format("ka_pf_{}({})", op, float_code(e.args[0])));
  if (op == "lt" || op == "le" || op == "gt" || op == "ge" || op == "eq" || op == "ne") {
    static const std::map<std::string, std::string> symbols = {{"lt", " < "},  {"le", " <= "},
                                                               {"gt", " > "},  {"ge", " >= "},
                                                               {"eq", " == "}, {"ne", " != "}};
    const bool floats = e.args[0].type == ValueType::Float || e.args[1].type == ValueType::Float;
    const std::string a = floats ? float_code(e.args[0]) : int_code(e.args[0]);
    const std::string b = floats ? float_code(e.args[1]) : int_code(e.args[1]);
    return typed("((long long)(" + a + symbols.at(op) + b + "))");
  }
  if (op == "and" || op == "or") {
    return typed(fmt::format("((long long)(({}) != 0 {} ({}) != 0))", expr(e.args[0]).code,
                             op == "and" ? "&&" : "||", expr(e.args[1]).code));
  }
  if (op == "not") return typed(fmt::format("((long long)(({}) == 0))", expr(e.args[0]).code));
  if (op == "isnan" || op == "isinf" || op == "isfinite") {
    if (e.args[0].type == ValueType::Int) return typed(op == "isfinite" ? "(1LL)" : "(0LL)");
    const std::string a = expr(e.args[0]).code;
    if (op == "isnan") return typed(fmt::format("((long long)({0} != {0}))", a));
    return typed(fmt::format("ka_pf_{}({})", op, a));
  }
  if (op == "where") {
    return typed(
        fmt::format("((({}) != 0) ? {} : {})", expr(e.args[0]).code, operand(1), operand(2)));
  }
  if (op == "float") return typed(float_code(e.args[0]));
  if (op == "int") return typed(int_code(e.args[0]));
  if (op == "cast") {
    const TypedCode inner = expr(e.args[0]);
    const std::string as_float =
        e.args[0].type == ValueType::Float ? inner.code : "((ka_pf_float)" + inner.code + ")";
    switch (e.dtype) {
      case DType::BFloat16:
        return typed(
            fmt::format("((ka_pf_float)ka_pf_widen(ka_pf_narrow_bf16((float){})))", as_float));
      case DType::Float16:
        return typed(
            fmt::format("((ka_pf_float)ka_pf_widen(ka_pf_narrow_f16((float){})))", as_float));
      case DType::Float32:
        return typed(fmt::format("((ka_pf_float)(float){})", as_float));
      case DType::Float64:
        return typed(fmt::format("((ka_pf_float)(double){})", as_float));
      case DType::Bool:
        return typed(fmt::format("((long long)(({}) != 0))", inner.code));
      default: {
        // Integer casts truncate toward zero, then wrap to the type's width.
        const std::string whole =
            e.args[0].type == ValueType::Int ? inner.code : "((long long)" + inner.code + ")";
        return typed(fmt::format("((long long)({}){})", plan_element_type(e.dtype, cuda_), whole));
      }
    }
  }
  throw TemplateMismatch(fmt::format("the fused code generator does not know operator \"{}\"", op));
}

std::string PlanCodeWriter::address(const PlanAccess& access) const {
  std::string code = size(access.offset);
  for (std::size_t j = 0; j < access.strides.size(); ++j) {
    const PlanExpr& coord = access.coords[j];
    if (access.strides[j] == "0" || (coord.op == "i" && coord.integer == 0)) continue;
    code += " + " + size(access.strides[j]) + " * " + int_code(coord);
  }
  return paren(code);
}

TypedCode PlanCodeWriter::load(const PlanAccess& access) const {
  const PlanBuffer& buffer = *plan_.find_buffer(access.buffer);
  return element_value(buffer, names_.pointer(buffer) + "[" + address(access) + "]");
}

TypedCode PlanCodeWriter::element_value(const PlanBuffer& buffer,
                                        const std::string& element) const {
  switch (buffer.dtype) {
    case DType::Float32:
    case DType::Float64:
      return {"((ka_pf_float)" + element + ")", ValueType::Float};
    case DType::Float16:
    case DType::BFloat16:
      return {"((ka_pf_float)ka_pf_widen(" + element + "))", ValueType::Float};
    default:
      return {"((long long)" + element + ")", ValueType::Int};
  }
}

std::string PlanCodeWriter::to_element(const std::string& value, ValueType type,
                                       DType dtype) const {
  switch (dtype) {
    case DType::Float32:
      return "(float)" + paren(value);
    case DType::Float64:
      return "(double)" + paren(value);
    case DType::Float16:
      return "ka_pf_narrow_f16((float)" + paren(value) + ")";
    case DType::BFloat16:
      return "ka_pf_narrow_bf16((float)" + paren(value) + ")";
    case DType::Bool:
      return "(unsigned char)(" + paren(value) + " != 0)";
    default: {
      const std::string whole =
          type == ValueType::Int ? paren(value) : "(long long)" + paren(value);
      return "(" + plan_element_type(dtype, cuda_) + ")" + whole;
    }
  }
}

std::string PlanCodeWriter::store(const PlanStore& store) const {
  const PlanBuffer& buffer = *plan_.find_buffer(store.access.buffer);
  const TypedCode value = expr(store.value);
  return fmt::format("{}[{}] = {};", names_.pointer(buffer), address(store.access),
                     to_element(value.code, value.type, buffer.dtype));
}

std::string PlanCodeWriter::scatter_update(const PlanStore& store, bool accumulate,
                                           const std::string& at) const {
  const PlanBuffer& buffer = *plan_.find_buffer(store.access.buffer);
  const std::string element = names_.pointer(buffer) + "[" + at + "]";
  const TypedCode value = expr(store.value);
  if (!accumulate)
    return fmt::format("{} = {};", element, to_element(value.code, value.type, buffer.dtype));
  if (cuda_) {
    // The device's atomics add in the element's own type: the value is rounded to it first,
    // and 16-bit float atomics round each sum to that type, as eager's index_add_ does.
    return fmt::format("ka_atomic_add(&{}, {});", element,
                       to_element(value.code, value.type, buffer.dtype));
  }
  // The sum is computed in the plan's arithmetic, then rounded to the element's dtype.
  const TypedCode current = element_value(buffer, element);
  const bool floats = current.type == ValueType::Float || value.type == ValueType::Float;
  const std::string sum = floats ? fmt::format("{} + {}", current.code, float_code(store.value))
                                 : fmt::format("{} + {}", current.code, value.code);
  return fmt::format("{} = {};", element,
                     to_element(sum, floats ? ValueType::Float : ValueType::Int, buffer.dtype));
}

std::string PlanCodeWriter::scatter_store(const PlanStore& store, bool accumulate,
                                          const std::string& elements,
                                          const std::string& on_stray) const {
  // A data-dependent index out of range must not write outside the buffer.
  return fmt::format(
      "{{ const long long ka_at = {}; if (ka_at < 0 || ka_at >= {}) {{ {} }} else {{ {} }} }}",
      address(store.access), size(elements), on_stray, scatter_update(store, accumulate, "ka_at"));
}

}  // namespace kernelarc
