// Element-wise ops: each node becomes an expression of its operands' elements at broadcast
// coords, computed in float (int64 for integer results) and inlined into its consumers.
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "lower/pointwise_node.h"

namespace kernelarc::lowering {

namespace {

using Values = std::vector<Json>;

Json literal_like(double value, bool integer) {
  return integer ? ilit(static_cast<int64_t>(value)) : flit(value);
}

double dtype_max(DType dtype) {
  switch (dtype) {
    case DType::BFloat16:
      return 3.3895313892515355e38;
    case DType::Float16:
      return 65504.0;
    case DType::Float64:
      return std::numeric_limits<double>::max();
    default:
      return std::numeric_limits<float>::max();
  }
}

const std::map<std::string, std::string, std::less<>>& direct_unary() {
  static const std::map<std::string, std::string, std::less<>> table = {
      {"abs", "abs"},           {"neg", "neg"},         {"exp", "exp"},
      {"exp2", "exp2"},         {"expm1", "expm1"},     {"log", "log"},
      {"log2", "log2"},         {"log10", "log10"},     {"log1p", "log1p"},
      {"sqrt", "sqrt"},         {"rsqrt", "rsqrt"},     {"reciprocal", "reciprocal"},
      {"sin", "sin"},           {"cos", "cos"},         {"tan", "tan"},
      {"asin", "asin"},         {"acos", "acos"},       {"atan", "atan"},
      {"sinh", "sinh"},         {"cosh", "cosh"},       {"tanh", "tanh"},
      {"sigmoid", "sigmoid"},   {"erf", "erf"},         {"erfc", "erfc"},
      {"relu", "relu"},         {"silu", "silu"},       {"floor", "floor"},
      {"ceil", "ceil"},         {"trunc", "trunc"},     {"sign", "sign"},
      {"sgn", "sign"},          {"isnan", "isnan"},     {"isinf", "isinf"},
      {"isfinite", "isfinite"}, {"asinh", "asinh"},     {"acosh", "acosh"},
      {"atanh", "atanh"},       {"logical_not", "not"}, {"bitwise_not", "not"}};
  return table;
}

const std::map<std::string, std::string, std::less<>>& direct_binary() {
  static const std::map<std::string, std::string, std::less<>> table = {
      {"mul", "mul"},      {"maximum", "max"}, {"minimum", "min"}, {"fmod", "fmod"},
      {"atan2", "atan2"},  {"eq", "eq"},       {"ne", "ne"},       {"lt", "lt"},
      {"le", "le"},        {"gt", "gt"},       {"ge", "ge"},       {"logical_and", "and"},
      {"logical_or", "or"}};
  return table;
}

bool is_comparison(std::string_view name) {
  return name == "eq" || name == "ne" || name == "lt" || name == "le" || name == "gt" ||
         name == "ge";
}

/// A cast of an intermediate to `to`: rounds through low-precision floats and integers so the
/// result matches the reference's rounding; widening casts are free.
Json cast_expr(Json value, DType from, DType to) {
  if (from == to) return value;
  if (is_integer_dtype(from) && !is_integer_dtype(to)) {
    Json as_float = op("float", {std::move(value)});
    return is_value_preserving_cast(DType::Float32, to) || to == DType::Float32
               ? as_float
               : Json::array({"cast", std::string(dtype_name(to)), as_float});
  }
  if (is_value_preserving_cast(from, to)) return value;
  return Json::array({"cast", std::string(dtype_name(to)), std::move(value)});
}

bool lower_elementwise(PointwiseNode& p, std::string_view name) {
  const bool fl = p.float_result();
  if (const auto found = direct_unary().find(name); found != direct_unary().end()) {
    const bool logical = name == "logical_not" || name == "bitwise_not" || name == "isnan" ||
                         name == "isinf" || name == "isfinite";
    // Integer abs / neg / sign stay integer; logic reads its operand as it is.
    const bool keeps_type = name == "abs" || name == "neg" || name == "sign" || name == "sgn";
    p.define_op(found->second, {p.operand(p.node().arg(0), logical      ? false
                                                           : keeps_type ? fl
                                                                        : true)});
    return true;
  }
  // On bools `&`, `|` and `^` are the logical ops (recorded as prims.bitwise_* when the tracer
  // decomposes them).
  if (p.dtype() == DType::Bool && name.starts_with("bitwise_") && name != "bitwise_not") {
    const std::string_view logical = name == "bitwise_and"   ? "logical_and"
                                     : name == "bitwise_or"  ? "logical_or"
                                     : name == "bitwise_xor" ? "logical_xor"
                                                             : name;
    name = logical;
  }
  if (is_comparison(name) || name == "logical_and" || name == "logical_or" ||
      name == "logical_xor") {
    auto a = p.operand(p.node().arg(0), false);
    auto b = p.operand(p.node().arg(1), false);
    const bool mixed = a.integer != b.integer;
    if (mixed) {
      a = p.operand(p.node().arg(0), true);
      b = p.operand(p.node().arg(1), true);
    }
    if (name == "logical_xor") {
      p.define({a, b}, [](Values& v, Ctx&, const Coords&) {
        return op("ne", {op("ne", {v[0], ilit(0)}), op("ne", {v[1], ilit(0)})});
      });
    } else if (name == "logical_and" || name == "logical_or") {
      p.define_op(direct_binary().at(std::string(name)), {a, b});
    } else {
      p.define_op(std::string(name), {a, b});
    }
    return true;
  }
  if (const auto found = direct_binary().find(name); found != direct_binary().end()) {
    p.define_op(found->second, {p.arg(0), p.arg(1)});
    return true;
  }
  if (name == "add" || name == "sub" || name == "rsub") {
    const double alpha = p.float_arg(2, "alpha", 1.0);
    const std::string oper = name == "add" ? "add" : "sub";
    const bool reversed = name == "rsub";
    p.define({p.arg(0), p.arg(1)}, [=](Values& v, Ctx&, const Coords&) {
      Json scaled =
          alpha == 1.0 ? v[reversed ? 0 : 1] : fmul(v[reversed ? 0 : 1], literal_like(alpha, !fl));
      return op(oper, {v[reversed ? 1 : 0], scaled});
    });
    return true;
  }
  if (name == "div" || name == "true_divide" || name == "floor_divide") {
    const GraphArg* mode = p.node().kwarg("rounding_mode");
    std::string rounding = mode && mode->as_string() ? *mode->as_string() : "";
    if (name == "floor_divide") rounding = "floor";
    if (!fl) {
      if (rounding != "floor" && rounding != "trunc") {
        throw Unsupported(p.origin() + ": integer true division");
      }
      p.define({p.arg(0), p.arg(1)}, [rounding](Values& v, Ctx&, const Coords&) {
        if (rounding == "floor") return op("floordiv", v);
        return op("int", {op("div", {op("float", {v[0]}), op("float", {v[1]})})});
      });
      return true;
    }
    p.define({p.arg(0), p.arg(1)}, [rounding](Values& v, Ctx&, const Coords&) {
      Json quotient = op("div", v);
      if (rounding == "floor") return op("floor", {quotient});
      if (rounding == "trunc") return op("trunc", {quotient});
      return quotient;
    });
    return true;
  }
  if (name == "remainder") {
    p.define({p.arg(0), p.arg(1)}, [fl](Values& v, Ctx&, const Coords&) {
      if (!fl) return op("mod", v);
      return fsub(v[0], fmul(op("floor", {op("div", v)}), v[1]));
    });
    return true;
  }
  if (name == "pow") {
    const GraphArg* exponent = p.node().arg(1, "exponent");
    if (exponent && exponent->as_float() && *exponent->as_float() == 2.0) {
      p.define({p.arg(0)}, [](Values& v, Ctx&, const Coords&) { return fmul(v[0], v[0]); });
    } else {
      p.define_op("pow", {p.arg(0, "self"), p.arg(1, "exponent")});
    }
    return true;
  }
  if (name == "square") {
    p.define({p.arg(0)}, [](Values& v, Ctx&, const Coords&) { return fmul(v[0], v[0]); });
    return true;
  }
  if (name == "fmax" || name == "fmin") {
    const std::string pick = name == "fmax" ? "max" : "min";
    p.define({p.arg(0), p.arg(1)}, [pick](Values& v, Ctx&, const Coords&) {
      return op("where",
                {op("isnan", {v[1]}), v[0], op("where", {op("isnan", {v[0]}), v[1], op(pick, v)})});
    });
    return true;
  }
  if (name == "xlogy") {
    p.define({p.arg(0), p.arg(1)}, [](Values& v, Ctx&, const Coords&) {
      return op("where",
                {op("isnan", {v[1]}), flit(NAN),
                 op("where", {op("eq", {v[0], flit(0)}), flit(0), fmul(v[0], op("log", {v[1]}))})});
    });
    return true;
  }
  if (name == "gelu") {
    const GraphArg* approximate = p.node().arg(1, "approximate");
    const bool tanh = approximate && approximate->as_string() == "tanh";
    p.define_op(tanh ? "gelu_tanh" : "gelu", {p.arg(0)});
    return true;
  }
  if (name == "softplus") {
    const double beta = p.float_arg(1, "beta", 1.0);
    const double threshold = p.float_arg(2, "threshold", 20.0);
    p.define({p.arg(0)}, [=](Values& v, Ctx&, const Coords&) {
      Json scaled = fmul(v[0], flit(beta));
      return op("where", {op("gt", {scaled, flit(threshold)}), v[0],
                          op("div", {op("log1p", {op("exp", {scaled})}), flit(beta)})});
    });
    return true;
  }
  if (name == "elu" || name == "selu" || name == "celu") {
    double alpha = p.float_arg(1, "alpha", 1.0), scale = 1.0, input_scale = 1.0;
    if (name == "elu") {
      scale = p.float_arg(2, "scale", 1.0);
      input_scale = p.float_arg(3, "input_scale", 1.0);
    } else if (name == "selu") {
      alpha = 1.6732632423543772848170429916717;
      scale = 1.0507009873554804934193349852946;
    } else {
      input_scale = 1.0 / alpha;
    }
    p.define({p.arg(0)}, [=](Values& v, Ctx&, const Coords&) {
      Json negative = fmul(flit(scale * alpha), op("expm1", {fmul(v[0], flit(input_scale))}));
      return op("where", {op("gt", {v[0], flit(0)}), fmul(v[0], flit(scale)), negative});
    });
    return true;
  }
  if (name == "leaky_relu") {
    p.define({p.arg(0), p.number_arg(1, "negative_slope", 0.01)},
             [](Values& v, Ctx&, const Coords&) {
               return op("where", {op("gt", {v[0], flit(0)}), v[0], fmul(v[0], v[1])});
             });
    return true;
  }
  if (name == "hardtanh") {
    p.define({p.arg(0), p.number_arg(1, "min_val", -1.0), p.number_arg(2, "max_val", 1.0)},
             [](Values& v, Ctx&, const Coords&) {
               return op("min", {op("max", {v[0], v[1]}), v[2]});
             });
    return true;
  }
  if (name == "hardsigmoid" || name == "hardswish") {
    const bool swish = name == "hardswish";
    p.define({p.arg(0)}, [=](Values& v, Ctx&, const Coords&) {
      Json gate =
          op("div", {op("min", {op("max", {fadd(v[0], flit(3)), flit(0)}), flit(6)}), flit(6)});
      return swish ? fmul(v[0], gate) : gate;
    });
    return true;
  }
  if (name == "hardshrink" || name == "softshrink") {
    const double lambda = p.float_arg(1, "lambd", 0.5);
    const bool soft = name == "softshrink";
    p.define({p.arg(0)}, [=](Values& v, Ctx&, const Coords&) {
      if (!soft) {
        return op("where", {op("gt", {op("abs", {v[0]}), flit(lambda)}), v[0], flit(0)});
      }
      return op(
          "where",
          {op("gt", {v[0], flit(lambda)}), fsub(v[0], flit(lambda)),
           op("where", {op("lt", {v[0], flit(-lambda)}), fadd(v[0], flit(lambda)), flit(0)})});
    });
    return true;
  }
  if (name == "threshold") {
    p.define({p.arg(0), p.arg(1), p.arg(2)}, [](Values& v, Ctx&, const Coords&) {
      return op("where", {op("gt", {v[0], v[1]}), v[0], v[2]});
    });
    return true;
  }
  if (name == "mish") {
    p.define({p.arg(0)}, [](Values& v, Ctx&, const Coords&) {
      return fmul(v[0], op("tanh", {op("softplus", {v[0]})}));
    });
    return true;
  }
  if (name == "logit") {
    const GraphArg* eps = p.node().arg(1, "eps");
    const bool clamp = eps && !eps->is_none();
    const double e = clamp ? *eps->as_float() : 0.0;
    p.define({p.arg(0)}, [=](Values& v, Ctx&, const Coords&) {
      Json x = clamp ? op("min", {op("max", {v[0], flit(e)}), flit(1 - e)}) : v[0];
      return op("log", {op("div", {x, fsub(flit(1), x)})});
    });
    return true;
  }
  if (name == "round") {
    const GraphArg* decimals = p.node().kwarg("decimals");
    if (decimals && decimals->as_int().value_or(0) != 0) {
      const double scale = std::pow(10.0, static_cast<double>(*decimals->as_int()));
      p.define({p.arg(0)}, [=](Values& v, Ctx&, const Coords&) {
        return op("div", {op("round", {fmul(v[0], flit(scale))}), flit(scale)});
      });
    } else {
      p.define_op("round", {p.arg(0)});
    }
    return true;
  }
  if (name == "frac") {
    p.define({p.arg(0)},
             [](Values& v, Ctx&, const Coords&) { return fsub(v[0], op("trunc", {v[0]})); });
    return true;
  }
  if (name == "clamp" || name == "clamp_min" || name == "clamp_max") {
    std::vector<PointwiseNode::Operand> operands = {p.arg(0)};
    const GraphArg* low = name == "clamp_max" ? nullptr : p.node().arg(1, "min");
    const GraphArg* high = name == "clamp"       ? p.node().arg(2, "max")
                           : name == "clamp_max" ? p.node().arg(1, "max")
                                                 : nullptr;
    const bool has_low = low && !low->is_none(), has_high = high && !high->is_none();
    if (has_low) operands.push_back(p.operand(low, fl));
    if (has_high) operands.push_back(p.operand(high, fl));
    p.define(std::move(operands), [=](Values& v, Ctx&, const Coords&) {
      Json result = v[0];
      if (has_low) result = op("max", {result, v[1]});
      if (has_high) result = op("min", {result, v[has_low ? 2 : 1]});
      return result;
    });
    return true;
  }
  if (name == "where") {
    p.define({p.operand(p.node().arg(0), false), p.arg(1), p.arg(2)},
             [](Values& v, Ctx&, const Coords&) { return op("where", v); });
    return true;
  }
  if (name == "masked_fill") {
    p.define({p.arg(0), p.operand(p.node().arg(1), false), p.arg(2)},
             [](Values& v, Ctx&, const Coords&) {
               return op("where", {v[1], v[2], v[0]});
             });
    return true;
  }
  if (name == "nan_to_num") {
    const double nan = p.float_arg(1, "nan", 0.0);
    const double posinf = p.float_arg(2, "posinf", dtype_max(p.dtype()));
    const double neginf = p.float_arg(3, "neginf", -dtype_max(p.dtype()));
    p.define({p.arg(0)}, [=](Values& v, Ctx&, const Coords&) {
      return op("where",
                {op("isnan", {v[0]}), flit(nan),
                 op("where",
                    {op("isinf", {v[0]}),
                     op("where", {op("gt", {v[0], flit(0)}), flit(posinf), flit(neginf)}), v[0]})});
    });
    return true;
  }
  if (name == "lerp") {
    p.define({p.arg(0), p.arg(1), p.arg(2)}, [](Values& v, Ctx&, const Coords&) {
      return fadd(v[0], fmul(v[2], fsub(v[1], v[0])));
    });
    return true;
  }
  if (name == "addcmul" || name == "addcdiv") {
    const double value = p.float_arg(3, "value", 1.0);
    const std::string combine = name == "addcmul" ? "mul" : "div";
    p.define({p.arg(0), p.arg(1), p.arg(2)}, [=](Values& v, Ctx&, const Coords&) {
      return fadd(v[0], fmul(flit(value), op(combine, {v[1], v[2]})));
    });
    return true;
  }
  return false;
}

}  // namespace

namespace {

bool is_copy_like(std::string_view name) {
  return name == "_to_copy" || name == "to" || name == "clone" || name == "contiguous" ||
         name == "alias" || name == "lift_fresh" || name == "detach" || name == "copy";
}

/// A cast or copy: the value of its source operand, converted to the node's dtype.
void lower_copy(PointwiseNode& p, std::string_view name) {
  // `copy(self, src)` takes its values from src; the others from their first operand.
  const std::size_t source = name == "copy" ? 1 : 0;
  const auto value = p.node().arg(source) ? p.node().arg(source)->as_value() : std::nullopt;
  if (!value) throw Unsupported(p.origin() + ": expected a tensor operand");
  const int id = p.operand_tensor(*value);
  Lowering& lowering = p.lowering();
  const DType from = lowering.tensor(id).dtype;
  const DType to = p.dtype();
  const auto shape = lowering.tensor(id).shape;
  p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
    return cast_expr(ctx.lowering.element(ctx, id, broadcast_coords(shape, coords)), from, to);
  });
  if (shape == p.shape() && is_value_preserving_cast(from, to)) {
    lowering.tensor(p.computed_tensor()).same_values_as = id;
  }
}

/// Element-wise nodes and casts, whose formulas do not read coords.
bool lower_copy_or_elementwise(PointwiseNode& p, std::string_view name) {
  if (!is_copy_like(name)) return lower_elementwise(p, name);
  lower_copy(p, name);
  return true;
}

}  // namespace

bool lower_view_or_pointwise(Lowering& lowering, const GraphNode& node) {
  const std::string_view name = node.base_name();
  if (node.output() < 0) return false;
  PointwiseNode p(lowering, node);
  if (name == "_unsafe_view" || name == "view" || name == "reshape") {
    const auto value = node.arg(0) ? node.arg(0)->as_value() : std::nullopt;
    if (!value) throw Unsupported(p.origin() + ": expected a tensor operand");
    const int id = lowering.tensor_of(*value, p.origin());
    // A reshape that copies: the result row-major over the source's row-major order.
    const auto source_shape = lowering.tensor(id).shape;
    const auto out_shape = p.shape();
    p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
      return ctx.lowering.element(
          ctx, id,
          view_to_base_coords(ctx.lowering, out_shape, contiguous_strides(out_shape),
                              SymSize::constant(0), source_shape, contiguous_strides(source_shape),
                              coords));
    });
    // Over a row-major source it is a view of the same storage: element-wise consumers of a
    // reshaped matrix product can then be computed over the product's shape.
    const auto& source_layout = lowering.tensor(id).layout_strides;
    if (source_layout.empty() || is_contiguous(source_layout, source_shape)) {
      Tensor& reshaped = lowering.tensor(lowering.value_tensor.at(node.output()));
      reshaped.view_base = id;
      reshaped.view_offset = SymSize::constant(0);
      reshaped.view_strides = contiguous_strides(out_shape);
    }
    return true;
  }
  PointwiseNode in_product_shape(lowering, node);
  if (in_product_shape.compute_in_product_shape() &&
      lower_copy_or_elementwise(in_product_shape, name)) {
    return true;
  }
  return lower_copy_or_elementwise(p, name) || lower_data_movement(p, name);
}

}  // namespace kernelarc::lowering
