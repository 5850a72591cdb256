#include "lower/lowering.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kernelarc::lowering {
namespace {

/// Equal coords, ignoring dims of size 1 (any coord there addresses the one element).
bool coords_match(const Coords& expected, const Coords& given, const std::vector<SymSize>& shape) {
  if (expected.size() != given.size()) return false;
  for (std::size_t d = 0; d < given.size(); ++d) {
    if (shape[d].is_one()) continue;
    if (expected[d] != given[d]) return false;
  }
  return true;
}

std::vector<SymSize> without_ones(const std::vector<SymSize>& shape) {
  std::vector<SymSize> result;
  for (const auto& size : shape) {
    if (!size.is_one()) result.push_back(size);
  }
  return result;
}

}  // namespace

Json idx(int d) {
  return Json::array({"idx", d});
}
Json ilit(int64_t value) {
  return Json::array({"i", value});
}
Json flit(double value) {
  if (std::isnan(value)) return Json::array({"f", "nan"});
  if (std::isinf(value)) return Json::array({"f", value > 0 ? "inf" : "-inf"});
  return Json::array({"f", value});
}
Json size_expr(const SymSize& size) {
  if (size.is_constant()) return ilit(size.coefficient());
  return Json::array({"size", size.text()});
}
Json iadd(const Json& a, const Json& b) {
  if (a == ilit(0)) return b;
  if (b == ilit(0)) return a;
  return Json::array({"add", a, b});
}
Json imul(const Json& a, const Json& b) {
  if (a == ilit(1)) return b;
  if (b == ilit(1)) return a;
  if (a == ilit(0) || b == ilit(0)) return ilit(0);
  return Json::array({"mul", a, b});
}
int expression_nodes(const Json& e) {
  if (!e.is_array()) return 0;
  int nodes = 1;
  for (const auto& operand : e) nodes += expression_nodes(operand);
  return nodes;
}
Json op(std::string name, std::vector<Json> operands) {
  Json result = Json::array({std::move(name)});
  for (auto& operand : operands) result.push_back(std::move(operand));
  return result;
}

Json fmul(Json a, Json b) {
  return op("mul", {std::move(a), std::move(b)});
}
Json fadd(Json a, Json b) {
  return op("add", {std::move(a), std::move(b)});
}
Json fsub(Json a, Json b) {
  return op("sub", {std::move(a), std::move(b)});
}
bool is_integer_dtype(DType dtype) {
  return !dtype_is_floating(dtype);
}

std::vector<SymSize> contiguous_strides(const std::vector<SymSize>& shape) {
  std::vector<SymSize> strides(shape.size());
  SymSize running = SymSize::constant(1);
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = running;
    running = running * shape[d];
  }
  return strides;
}

SymSize product(const std::vector<SymSize>& sizes) {
  SymSize result = SymSize::constant(1);
  for (const auto& size : sizes) result = result * size;
  return result;
}

Coords broadcast_coords(const std::vector<SymSize>& operand_shape, const Coords& coords) {
  Coords result(operand_shape.size());
  const std::size_t lead = coords.size() - operand_shape.size();
  for (std::size_t d = 0; d < operand_shape.size(); ++d) {
    result[d] = operand_shape[d].is_one() ? ilit(0) : coords[lead + d];
  }
  return result;
}

int normalize_dim(int64_t dim, std::size_t rank, std::string_view origin) {
  const int64_t extent = std::max<int64_t>(static_cast<int64_t>(rank), 1);
  if (dim < -extent || dim >= extent) {
    throw Unsupported(fmt::format("{}: dim {} is out of range for rank {}", origin, dim, rank));
  }
  return static_cast<int>(dim < 0 ? dim + extent : dim);
}

Lowering::Lowering(const OpGraph& graph_in, const Definition& definition_in)
    : graph(graph_in), definition(definition_in) {
  for (std::size_t trace = 0; trace < 2; ++trace) {
    AxisValues values;
    for (const auto& axis : graph.axes) {
      if (axis.kind == "const") values[axis.name] = axis.value;
      if (axis.kind == "var" && !axis.traced.empty()) {
        values[axis.name] = axis.traced[std::min(trace, axis.traced.size() - 1)];
      }
    }
    for (const auto& axis : definition.axes) {
      if (values.count(axis.name)) continue;
      if (axis.kind == AxisKind::Const) values[axis.name] = axis.value;
      if (axis.kind == AxisKind::Var) values[axis.name] = trace == 0 ? 17 : 41;
    }
    for (const auto& axis : definition.axes) {
      if (axis.kind == AxisKind::Expr && !values.count(axis.name)) {
        values[axis.name] = evaluate_expr(axis.expression, values);
      }
    }
    traced_axes.push_back(std::move(values));
  }
}

int64_t Lowering::max_traced(const SymSize& size) const {
  int64_t result = 0;
  for (const auto& axes : traced_axes) result = std::max(result, size.evaluate(axes));
  return result;
}

int Lowering::add_tensor(Tensor tensor) {
  tensors.push_back(std::move(tensor));
  return static_cast<int>(tensors.size()) - 1;
}

DType Lowering::temp_dtype(const Tensor& t, StoredFor use) const {
  if (is_integer_dtype(t.dtype)) return DType::Int64;
  // PyTorch rounds a product to its dtype before anything reads it, and a matmul reads its
  // operands in theirs: such a bfloat16 temp holds what eager reads next, in half the bytes of
  // a float32 one, and leaves the operand to tensor cores or cuBLASLt.
  if (t.kind == Tensor::Kind::Matmul || use == StoredFor::Operand) return t.dtype;
  return compute_dtype;
}

std::string Lowering::new_temp(const SymSize& elements, DType dtype) {
  std::string name = fmt::format("t{}", temp_count_++);
  buffers.push_back({{"name", name},
                     {"kind", "temp"},
                     {"dtype", std::string(dtype_name(dtype))},
                     {"elements", elements.text()}});
  return name;
}

int Lowering::new_kernel(Json json, std::string kind) {
  Kernel kernel;
  kernel.json = std::move(json);
  kernel.kind = std::move(kind);
  kernels.push_back(std::move(kernel));
  return static_cast<int>(kernels.size()) - 1;
}

Json Lowering::load(Ctx& ctx, const std::string& buffer, const SymSize& offset,
                    const std::vector<SymSize>& strides, const Coords& coords) {
  Json strides_json = Json::array();
  Json coords_json = Json::array();
  for (std::size_t d = 0; d < strides.size(); ++d) {
    if (strides[d].is_zero()) continue;  // broadcast: the coord does not move the element
    strides_json.push_back(strides[d].text());
    coords_json.push_back(coords[d]);
  }
  Json spec = {{"buffer", buffer},
               {"offset", offset.text()},
               {"strides", strides_json},
               {"coords", coords_json}};
  for (const auto& [name, existing] : ctx.loads.items()) {
    if (existing == spec) return Json::array({"load", name});
  }
  std::string name = fmt::format("{}_{}", buffer, ctx.loads.size());
  ctx.loads[name] = std::move(spec);
  return Json::array({"load", name});
}

Json Lowering::float_element(Ctx& ctx, int id, const Coords& coords) {
  Json value = element(ctx, id, coords);
  if (is_integer_dtype(tensor(id).dtype)) return op("float", {value});
  return value;
}

Json Lowering::element(Ctx& ctx, int id, const Coords& coords) {
  const Tensor& t = tensor(id);
  if (t.stored && t.stored->kernel < ctx.kernel) {
    return load(ctx, t.stored->buffer, t.stored->offset, t.stored->strides, coords);
  }
  switch (t.kind) {
    case Tensor::Kind::Stored:
      // A kernel's result (a scatter's) is there only after that kernel.
      if (t.stored->kernel >= ctx.kernel) throw NotHere{};
      return load(ctx, t.stored->buffer, t.stored->offset, t.stored->strides, coords);
    case Tensor::Kind::Pointwise:
      if (t.view_base >= 0) {
        const Tensor& base = tensor(t.view_base);
        if (base.stored && base.stored->kernel < ctx.kernel && base.stored->offset.is_zero() &&
            base.stored->strides == base.layout_strides) {
          return load(ctx, base.stored->buffer, t.view_offset, t.view_strides, coords);
        }
      }
      if (ctx.inlines_left == 0) throw NotHere{};
      if (ctx.inlines_left > 0) --ctx.inlines_left;
      return t.fn(ctx, coords);
    case Tensor::Kind::Reduction:
    case Tensor::Kind::Scan:
    case Tensor::Kind::Matmul:
    case Tensor::Kind::Topk: {
      if (t.kernel == ctx.kernel) {
        if (coords_match(t.at, coords, t.shape)) return t.ref;
        throw NotHere{};
      }
      if (t.kernel > ctx.kernel) throw NotHere{};
      const StoredAt stored = materialize(id, ctx.kernel, ctx.dry);
      return load(ctx, stored.buffer, stored.offset, stored.strides, coords);
    }
  }
  throw Unsupported("internal: unknown tensor kind");
}

const StoredAt& Lowering::materialize(int id, int before_kernel, bool dry, StoredFor use) {
  Tensor& t = tensor(id);
  if (t.stored && t.stored->kernel < before_kernel) return *t.stored;
  if (t.kind == Tensor::Kind::Pointwise || t.kind == Tensor::Kind::Stored ||
      t.kernel >= before_kernel) {
    throw NotHere{};
  }
  static const StoredAt placeholder;
  if (dry) return placeholder;
  StoredAt stored;
  stored.buffer = new_temp(product(t.shape), temp_dtype(t, use));
  stored.strides = t.layout_strides.empty() ? contiguous_strides(t.shape) : t.layout_strides;
  stored.kernel = t.kernel;
  Kernel& kernel = kernels.at(static_cast<std::size_t>(t.kernel));
  Json store_strides = Json::array();
  for (const auto& stride : stored.strides) store_strides.push_back(stride.text());
  Json store = {{"buffer", stored.buffer},
                {"offset", "0"},
                {"strides", store_strides},
                {"coords", t.at},
                {"value", t.ref}};
  if (kernel.kind == "reduce") store["over"] = "keep";
  kernel.stores.push_back(std::move(store));
  notes.push_back(
      fmt::format("{} is stored to temp {} by kernel {}", t.origin, stored.buffer, t.kernel));
  t.stored = std::move(stored);
  return *t.stored;
}

const StoredAt& Lowering::materialize_now(int id, StoredFor use) {
  Tensor& t = tensor(id);
  if (t.stored) return *t.stored;
  if (t.kind != Tensor::Kind::Pointwise) {
    return materialize(id, static_cast<int>(kernels.size()), false, use);
  }
  Json domain = Json::array();
  Coords coords;
  for (std::size_t d = 0; d < t.shape.size(); ++d) {
    domain.push_back(t.shape[d].text());
    coords.push_back(idx(static_cast<int>(d)));
  }
  const int k = new_kernel({{"kind", "pointwise"}, {"domain", domain}}, "pointwise");
  kernels[static_cast<std::size_t>(k)].spaces.push_back({"", t.shape, coords});
  StoredAt stored;
  stored.buffer = new_temp(product(t.shape), temp_dtype(t, use));
  stored.strides = contiguous_strides(t.shape);
  stored.kernel = k;
  if (!try_store(k, id, stored.buffer, stored.strides)) {
    throw Unsupported(fmt::format("{}: cannot be computed by a pointwise kernel", t.origin));
  }
  notes.push_back(
      fmt::format("{} is materialised to temp {} by kernel {}", t.origin, stored.buffer, k));
  tensor(id).stored = std::move(stored);
  return *tensor(id).stored;
}

bool Lowering::try_store(int k, int id, const std::string& buffer,
                         const std::vector<SymSize>& strides, int max_nodes) {
  const std::vector<SymSize> shape = tensor(id).shape;
  const std::vector<SymSize> squeezed = without_ones(shape);
  for (const auto& space : kernels.at(static_cast<std::size_t>(k)).spaces) {
    Coords coords;
    if (space.shape == shape) {
      coords = space.coords;
    } else if (without_ones(space.shape) == squeezed) {
      std::size_t next = 0;
      for (const auto& size : shape) {
        while (next < space.shape.size() && space.shape[next].is_one()) ++next;
        if (size.is_one()) {
          coords.push_back(ilit(0));
        } else {
          coords.push_back(space.coords[next++]);
        }
      }
    } else {
      continue;
    }
    Ctx dry{*this, k, kernels[static_cast<std::size_t>(k)].loads, true,
            max_nodes == INT_MAX ? -1 : max_nodes};
    try {
      if (expression_nodes(element(dry, id, coords)) > max_nodes) continue;
    } catch (const NotHere&) {
      continue;
    }
    Ctx ctx{*this, k, kernels[static_cast<std::size_t>(k)].loads, false};
    Json value = element(ctx, id, coords);
    Kernel& kernel = kernels[static_cast<std::size_t>(k)];
    kernel.loads = std::move(ctx.loads);
    Json strides_json = Json::array();
    for (const auto& stride : strides) strides_json.push_back(stride.text());
    Json store = {{"buffer", buffer},
                  {"offset", "0"},
                  {"strides", strides_json},
                  {"coords", coords},
                  {"value", std::move(value)}};
    if (!space.over.empty()) store["over"] = space.over;
    kernel.stores.push_back(std::move(store));
    return true;
  }
  // A row-major reshape writes the same memory as its base does in the base's own shape.
  const int base = reshaped_base(*this, id);
  if (base >= 0 && is_contiguous(strides, shape)) {
    return try_store(k, base, buffer, contiguous_strides(tensor(base).shape), max_nodes);
  }
  return false;
}

void Lowering::store_anywhere(int id, const std::string& buffer,
                              const std::vector<SymSize>& strides) {
  for (int k = static_cast<int>(kernels.size()) - 1; k >= 0; --k) {
    if (try_store(k, id, buffer, strides, kMaxFusedStoreNodes)) return;
  }
  const Tensor& t = tensor(id);
  Json domain = Json::array();
  Coords coords;
  for (std::size_t d = 0; d < t.shape.size(); ++d) {
    domain.push_back(t.shape[d].text());
    coords.push_back(idx(static_cast<int>(d)));
  }
  const int k = new_kernel({{"kind", "pointwise"}, {"domain", domain}}, "pointwise");
  kernels[static_cast<std::size_t>(k)].spaces.push_back({"", t.shape, coords});
  if (!try_store(k, id, buffer, strides)) {
    throw Unsupported(fmt::format("{}: cannot be stored by a pointwise kernel", t.origin));
  }
}

bool is_contiguous(const std::vector<SymSize>& strides, const std::vector<SymSize>& shape) {
  const auto expected = contiguous_strides(shape);
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (!shape[d].is_one() && !(strides[d] == expected[d])) return false;
  }
  return true;
}

int reshaped_base(const Lowering& lowering, int id) {
  const Tensor& view = lowering.tensors.at(static_cast<std::size_t>(id));
  if (view.view_base < 0 || !view.view_offset.is_zero() ||
      !is_contiguous(view.view_strides, view.shape)) {
    return -1;
  }
  const Tensor& base = lowering.tensors.at(static_cast<std::size_t>(view.view_base));
  if (!base.layout_strides.empty() && !is_contiguous(base.layout_strides, base.shape)) return -1;
  return view.view_base;
}

void set_kernel_value(Lowering& lowering, int k, int x, const Coords& coords, DType dtype,
                      std::vector<SymSize> shape, Coords space_coords, const std::string& origin) {
  Ctx ctx{lowering, k, Json::object(), false};
  Json value;
  try {
    value = is_integer_dtype(dtype) ? lowering.element(ctx, x, coords)
                                    : lowering.float_element(ctx, x, coords);
  } catch (const NotHere&) {
    throw Unsupported(fmt::format("{}: its input cannot be computed by a {} kernel", origin,
                                  lowering.kernels.at(static_cast<std::size_t>(k)).kind));
  }
  // Taken only now: computing the element may add kernels (a stored result's) to the list.
  Kernel& kernel = lowering.kernels.at(static_cast<std::size_t>(k));
  kernel.json["value"] = std::move(value);
  kernel.loads = std::move(ctx.loads);
  kernel.spaces.push_back({"", std::move(shape), std::move(space_coords)});
}

int add_pointwise(Lowering& lowering, std::vector<SymSize> shape, DType dtype, std::string origin,
                  ElementFn fn) {
  Tensor tensor;
  tensor.kind = Tensor::Kind::Pointwise;
  tensor.shape = std::move(shape);
  tensor.dtype = dtype;
  tensor.origin = std::move(origin);
  tensor.fn = std::move(fn);
  return lowering.add_tensor(std::move(tensor));
}

}  // namespace kernelarc::lowering
