// Data movement and constructors: cat/stack pick their operand by the coord along the joined
// dim, flip/roll/repeat/pad/gather/index_select rewrite coords (a gather's coord is another
// load), tril/triu/diag/eye are where() on idx, full/zeros/arange are expressions of idx.
// Coords that a where() does not select are clamped, so no load leaves its operand.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "lower/index_list.h"
#include "lower/pointwise_node.h"

namespace kernelarc::lowering {
namespace {

using Values = std::vector<Json>;

Json clamp_coord(const Json& coord, const SymSize& size) {
  return op("max", {op("min", {coord, op("sub", {size_expr(size), ilit(1)})}), ilit(0)});
}

struct TensorOperand {
  int id;
  std::vector<SymSize> shape;
  DType dtype;
};

TensorOperand tensor_arg(PointwiseNode& p, std::size_t position, std::string_view name = {}) {
  const GraphArg* arg = p.node().arg(position, name);
  const auto value = arg ? arg->as_value() : std::nullopt;
  if (!value)
    throw Unsupported(fmt::format("{}: argument {} must be a tensor", p.origin(), position));
  const int id = p.lowering().tensor_of(*value, p.origin());
  return {id, p.lowering().tensor(id).shape, p.lowering().tensor(id).dtype};
}

/// The element of `t` converted to the node's result type.
Json typed_element(bool float_result, Ctx& ctx, const TensorOperand& t, const Coords& coords) {
  Json value = ctx.lowering.element(ctx, t.id, coords);
  if (float_result && is_integer_dtype(t.dtype)) return op("float", {value});
  return value;
}

int64_t int_arg(PointwiseNode& p, std::size_t position, std::string_view name, int64_t fallback) {
  const GraphArg* arg = p.node().arg(position, name);
  if (!arg || arg->is_none()) return fallback;
  if (const auto value = arg->as_int()) return *value;
  throw Unsupported(fmt::format("{}: argument {} must be a constant integer", p.origin(), name));
}

std::vector<int64_t> int_list_arg(PointwiseNode& p, std::size_t position, std::string_view name) {
  const GraphArg* arg = p.node().arg(position, name);
  const auto list = arg ? arg->as_int_list() : std::nullopt;
  if (!list)
    throw Unsupported(fmt::format("{}: argument {} must be constant integers", p.origin(), name));
  return *list;
}

bool lower_constructor(PointwiseNode& p, std::string_view name) {
  const bool integer = !p.float_result();
  const auto literal = [integer](double value) {
    return integer ? ilit(static_cast<int64_t>(value)) : flit(value);
  };
  std::optional<std::size_t> fill_position;
  double constant = 0.0;
  if (name == "zeros" || name == "zeros_like" || name == "empty" || name == "empty_like") {
    constant = 0.0;
  } else if (name == "ones" || name == "ones_like") {
    constant = 1.0;
  } else if (name == "full" || name == "full_like" || name == "fill") {
    fill_position = 1;
  } else if (name == "scalar_tensor") {
    fill_position = 0;
  } else if (name == "arange") {
    const auto& args = p.node().args;
    const bool has_start =
        args.size() >= 2 && !args[1].is_none() && args[1].kind != GraphArg::Kind::DType;
    auto start = has_start ? p.operand(&args[0], !integer) : PointwiseNode::Operand{};
    auto end_or_step = p.operand(&args[has_start ? 1 : 0], !integer);
    const GraphArg* step_arg = has_start ? p.node().arg(2, "step") : nullptr;
    const bool has_step =
        step_arg && !step_arg->is_none() && step_arg->kind != GraphArg::Kind::DType;
    std::vector<PointwiseNode::Operand> operands;
    if (has_start) operands.push_back(start);
    if (has_step) operands.push_back(p.operand(step_arg, !integer));
    p.define(std::move(operands), [=](Values& v, Ctx&, const Coords& coords) {
      Json position = integer ? coords[0] : op("float", {coords[0]});
      if (has_step) position = op("mul", {position, v[has_start ? 1 : 0]});
      return has_start ? op("add", {v[0], position}) : position;
    });
    return true;
  } else if (name == "eye") {
    p.define({}, [literal](Values&, Ctx&, const Coords& coords) {
      return op("where", {op("eq", {coords[0], coords[1]}), literal(1), literal(0)});
    });
    return true;
  } else {
    return false;
  }
  if (fill_position) {
    p.define({p.arg(*fill_position, "fill_value")},
             [](Values& v, Ctx&, const Coords&) { return v[0]; });
  } else {
    p.define({}, [=](Values&, Ctx&, const Coords&) { return literal(constant); });
  }
  return true;
}

}  // namespace

/// x[i0, i1, ...] with index tensors (`aten.index.Tensor`, lower/index_list.h); an index out
/// of range is clamped, as every gather here is.
bool lower_advanced_index(PointwiseNode& p) {
  const TensorOperand x = tensor_arg(p, 0, "self");
  const IndexList indices(p.lowering(), p.node().arg(1, "indices"), x.shape, p.origin());
  if (p.shape().size() != indices.result_shape().size())
    throw Unsupported(p.origin() + ": the result's rank does not follow from its indices");
  const bool fl = p.float_result();
  p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
    Coords inner = indices.x_coords(ctx, coords);
    for (std::size_t d = 0; d < inner.size(); ++d)
      if (indices.indexed_dim(d)) inner[d] = clamp_coord(inner[d], x.shape[d]);
    return typed_element(fl, ctx, x, inner);
  });
  return true;
}

bool lower_data_movement(PointwiseNode& p, std::string_view name) {
  if (lower_constructor(p, name)) return true;
  if (name == "index") return lower_advanced_index(p);
  const bool fl = p.float_result();
  const std::size_t rank = p.shape().size();
  if (name == "cat" || name == "stack") {
    const GraphArg* list = p.node().arg(0, "tensors");
    const auto values = list ? list->as_value_list() : std::nullopt;
    if (!values || values->empty()) throw Unsupported(p.origin() + ": expected a list of tensors");
    const int dim = normalize_dim(int_arg(p, 1, "dim", 0), rank, p.origin());
    std::vector<TensorOperand> parts;
    for (const int64_t value : *values) {
      const int id = p.lowering().tensor_of(value, p.origin());
      const auto& shape = p.lowering().tensor(id).shape;
      // Legacy cat skips 1-D empty tensors.
      if (name == "cat" && shape.size() == 1 && shape[0].is_zero()) continue;
      parts.push_back({id, shape, p.lowering().tensor(id).dtype});
    }
    const bool stack = name == "stack";
    p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
      Json result;
      Json start = ilit(0);
      // Built back to front: where(c < end_0, part_0, where(c < end_1, part_1, ...)).
      std::vector<Json> starts;
      for (const auto& part : parts) {
        starts.push_back(start);
        start = iadd(start, stack ? ilit(1) : size_expr(part.shape[static_cast<std::size_t>(dim)]));
      }
      for (std::size_t i = parts.size(); i-- > 0;) {
        Coords inner;
        for (std::size_t d = 0; d < coords.size(); ++d) {
          if (static_cast<int>(d) != dim) {
            inner.push_back(coords[d]);
          } else if (!stack) {
            inner.push_back(clamp_coord(op("sub", {coords[d], starts[i]}),
                                        parts[i].shape[static_cast<std::size_t>(dim)]));
          }
        }
        Json value = typed_element(fl, ctx, parts[i], broadcast_coords(parts[i].shape, inner));
        if (i + 1 == parts.size()) {
          result = value;
        } else {
          const Json end = stack ? ilit(static_cast<int64_t>(i) + 1) : starts[i + 1];
          result =
              op("where", {op("lt", {coords[static_cast<std::size_t>(dim)], end}), value, result});
        }
      }
      return result;
    });
    return true;
  }
  if (name == "flip" || name == "roll" || name == "repeat" || name == "tril" || name == "triu" ||
      name == "constant_pad_nd" || name == "index_select" || name == "gather" || name == "diag" ||
      name == "diag_embed") {
    const TensorOperand x = tensor_arg(p, 0, "self");
    if (name == "flip") {
      std::vector<int> dims;
      for (const int64_t d : int_list_arg(p, 1, "dims"))
        dims.push_back(normalize_dim(d, rank, p.origin()));
      p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
        Coords inner = coords;
        for (const int d : dims) {
          inner[static_cast<std::size_t>(d)] =
              op("sub", {op("sub", {size_expr(x.shape[static_cast<std::size_t>(d)]), ilit(1)}),
                         coords[static_cast<std::size_t>(d)]});
        }
        return typed_element(fl, ctx, x, inner);
      });
      return true;
    }
    if (name == "roll") {
      const auto shifts = int_list_arg(p, 1, "shifts");
      const GraphArg* dims_arg = p.node().arg(2, "dims");
      const bool flattened = !dims_arg || dims_arg->is_none() ||
                             (dims_arg->kind == GraphArg::Kind::List && dims_arg->items.empty());
      if (flattened && shifts.size() == 1) {
        // Over the flattened tensor: the row-major position moves, then splits into coords.
        const auto strides = contiguous_strides(x.shape);
        const SymSize elements = product(x.shape);
        p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
          Json flat = ilit(0);
          for (std::size_t d = 0; d < rank; ++d) {
            flat = iadd(flat, imul(size_expr(strides[d]), coords[d]));
          }
          const Json source = op("mod", {op("sub", {flat, ilit(shifts[0])}), size_expr(elements)});
          Coords inner;
          for (std::size_t d = 0; d < rank; ++d) {
            inner.push_back(op(
                "mod", {op("floordiv", {source, size_expr(strides[d])}), size_expr(x.shape[d])}));
          }
          return typed_element(fl, ctx, x, inner);
        });
        return true;
      }
      const auto dims_raw = int_list_arg(p, 2, "dims");
      if (dims_raw.size() != shifts.size()) {
        throw Unsupported(p.origin() + ": roll needs one dim per shift");
      }
      std::vector<int> dims;
      for (const int64_t d : dims_raw) dims.push_back(normalize_dim(d, rank, p.origin()));
      p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
        Coords inner = coords;
        for (std::size_t i = 0; i < dims.size(); ++i) {
          auto& coord = inner[static_cast<std::size_t>(dims[i])];
          coord = op("mod", {op("sub", {coord, ilit(shifts[i])}),
                             size_expr(x.shape[static_cast<std::size_t>(dims[i])])});
        }
        return typed_element(fl, ctx, x, inner);
      });
      return true;
    }
    if (name == "repeat") {
      p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
        Coords inner;
        const std::size_t lead = coords.size() - x.shape.size();
        for (std::size_t d = 0; d < x.shape.size(); ++d) {
          inner.push_back(
              x.shape[d].is_one() ? ilit(0) : op("mod", {coords[lead + d], size_expr(x.shape[d])}));
        }
        return typed_element(fl, ctx, x, inner);
      });
      return true;
    }
    if (name == "tril" || name == "triu") {
      const int64_t diagonal = int_arg(p, 1, "diagonal", 0);
      const bool lower = name == "tril";
      p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
        const Json offset = op("sub", {coords[rank - 1], coords[rank - 2]});
        const Json keep = op(lower ? "le" : "ge", {offset, ilit(diagonal)});
        const Json zero = fl ? flit(0) : ilit(0);
        return op("where", {keep, typed_element(fl, ctx, x, coords), zero});
      });
      return true;
    }
    if (name == "constant_pad_nd") {
      const auto pad = int_list_arg(p, 1, "pad");
      const GraphArg* value_arg = p.node().arg(2, "value");
      PointwiseNode::Operand fill;
      if (value_arg && !value_arg->is_none()) {
        fill = p.arg(2, "value");
      } else {
        fill.get = [fl](Ctx&, const Coords&) { return fl ? flit(0) : ilit(0); };
      }
      p.define({fill}, [=](Values& v, Ctx& ctx, const Coords& coords) {
        Coords inner = coords;
        Json inside = ilit(1);
        for (std::size_t i = 0; i * 2 < pad.size(); ++i) {
          const std::size_t d = rank - 1 - i;
          const Json shifted = op("sub", {coords[d], ilit(pad[2 * i])});
          inside = op("and", {inside, op("and", {op("ge", {shifted, ilit(0)}),
                                                 op("lt", {shifted, size_expr(x.shape[d])})})});
          inner[d] = clamp_coord(shifted, x.shape[d]);
        }
        return op("where", {inside, typed_element(fl, ctx, x, inner), v[0]});
      });
      return true;
    }
    if (name == "index_select" || name == "gather") {
      const int dim = normalize_dim(int_arg(p, 1, "dim", 0), x.shape.size(), p.origin());
      const TensorOperand index = tensor_arg(p, 2, "index");
      const bool gather = name == "gather";
      p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
        Coords inner = coords;
        const Coords index_coords = gather ? coords : Coords{coords[static_cast<std::size_t>(dim)]};
        Json selected =
            ctx.lowering.element(ctx, index.id, broadcast_coords(index.shape, index_coords));
        // A negative index counts from the end, as torch's indexing does.
        selected = wrap_negative_index(selected, x.shape[static_cast<std::size_t>(dim)]);
        inner[static_cast<std::size_t>(dim)] =
            clamp_coord(selected, x.shape[static_cast<std::size_t>(dim)]);
        return typed_element(fl, ctx, x, inner);
      });
      return true;
    }
    if (name == "diag_embed") {
      // out[..., i, ..., j, ...] = x[..., k] on the diagonal j - i == offset (k = i, or j when
      // offset < 0), dims i and j of the output being dim1 and dim2.
      const int64_t offset = int_arg(p, 1, "offset", 0);
      const auto dim1 =
          static_cast<std::size_t>(normalize_dim(int_arg(p, 2, "dim1", -2), rank, p.origin()));
      const auto dim2 =
          static_cast<std::size_t>(normalize_dim(int_arg(p, 3, "dim2", -1), rank, p.origin()));
      p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
        Coords inner;
        for (std::size_t d = 0; d < rank; ++d) {
          if (d != dim1 && d != dim2) inner.push_back(coords[d]);
        }
        const Json position = offset >= 0 ? coords[dim1] : coords[dim2];
        inner.push_back(clamp_coord(position, x.shape.back()));
        const Json on = op("eq", {op("sub", {coords[dim2], coords[dim1]}), ilit(offset)});
        return op("where", {on, typed_element(fl, ctx, x, inner), fl ? flit(0) : ilit(0)});
      });
      return true;
    }
    // diag
    const int64_t diagonal = int_arg(p, 1, "diagonal", 0);
    if (x.shape.size() == 1) {
      p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
        const Json on = op("eq", {op("sub", {coords[1], coords[0]}), ilit(diagonal)});
        const Json position = diagonal >= 0 ? coords[0] : coords[1];
        const Json zero = fl ? flit(0) : ilit(0);
        return op("where",
                  {on, typed_element(fl, ctx, x, {clamp_coord(position, x.shape[0])}), zero});
      });
    } else {
      p.define({}, [=](Values&, Ctx& ctx, const Coords& coords) {
        const Json row = diagonal >= 0 ? coords[0] : op("sub", {coords[0], ilit(diagonal)});
        const Json col = diagonal >= 0 ? op("add", {coords[0], ilit(diagonal)}) : coords[0];
        return typed_element(fl, ctx, x, {row, col});
      });
    }
    return true;
  }
  return false;
}

}  // namespace kernelarc::lowering
