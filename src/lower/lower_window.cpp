// Windowed ops: pooling and convolution. Each output element reduces a window of its input, so
// each becomes a reduce kernel whose kept dims are the output's dims and whose reduced dims are
// the window (and the input channels of a convolution's group). A window element reads the
// input at out_idx * stride - padding + win_idx * dilation; positions outside the input are
// masked with where() and their coords clamped into range, so no load leaves its buffer
// whatever order a code generator evaluates operands in. A 1x1 convolution with stride 1, no
// padding and one group is a GEMM over channels per batch and becomes a matmul kernel; any other
// convolution of one group with a long enough reduction is im2col + matmul (lower_convolution).
#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "lower/lowering.h"
#include "lower/node_args.h"

namespace kernelarc::lowering {
namespace {

using Shape = std::vector<SymSize>;

Json isub(const Json& a, const Json& b) {
  if (b == ilit(0)) return a;
  return op("sub", {a, b});
}
Json both(const Json& a, const Json& b) {
  if (a.is_null()) return b;
  if (b.is_null()) return a;
  return op("and", {a, b});
}

/// One spatial dim of a window: which input positions output index o reads.
struct WindowAxis {
  SymSize in_size;
  SymSize extent;  ///< window elements along this dim (a reduced dim)
  SymSize stride = SymSize::constant(1);
  int64_t padding = 0;
  int64_t dilation = 1;
  bool mask_low = false;   ///< a window may start before the input (padding)
  bool mask_high = false;  ///< a window may end past the input (padding, ceil_mode)
  /// An adaptive pool whose sizes do not divide: window o is [floor(o*I/O), ceil((o+1)*I/O)),
  /// of varying length; `extent` is the longest.
  int64_t uneven_in = 0, uneven_out = 0;

  bool uneven() const { return uneven_out > 0; }
  Json start(const Json& o) const {
    if (uneven()) return op("floordiv", {imul(o, ilit(uneven_in)), ilit(uneven_out)});
    return isub(imul(o, size_expr(stride)), ilit(padding));
  }
  Json end(const Json& o) const {
    return op("floordiv", {iadd(imul(iadd(o, ilit(1)), ilit(uneven_in)), ilit(uneven_out - 1)),
                           ilit(uneven_out)});
  }
  Json position(const Json& o, const Json& r) const {
    return iadd(start(o), imul(r, ilit(dilation)));
  }
  /// Whether window element r of output o is an input position; null when it always is.
  Json valid(const Json& o, const Json& r) const {
    if (uneven()) return op("lt", {r, isub(end(o), start(o))});
    const Json at = position(o, r);
    Json result;
    if (mask_low) result = op("ge", {at, ilit(0)});
    if (mask_high) result = both(result, op("lt", {at, size_expr(in_size)}));
    return result;
  }
  /// The position clamped into the input, for the load that where() may discard.
  Json clamped(const Json& o, const Json& r) const {
    Json at = position(o, r);
    if (mask_low) at = op("max", {at, ilit(0)});
    if (mask_high || uneven()) at = op("min", {at, isub(size_expr(in_size), ilit(1))});
    return at;
  }
  /// The first input position of window o (torch's initial max-pool index).
  Json first(const Json& o) const {
    const Json s = start(o);
    if (!mask_low || uneven()) return s;
    const Json skipped = op("floordiv", {iadd(op("neg", {s}), ilit(dilation - 1)), ilit(dilation)});
    return op("where", {op("lt", {s, ilit(0)}), iadd(s, imul(skipped, ilit(dilation))), s});
  }
};

/// A reduce kernel over [output dims..., window dims...], storing over the output's dims.
struct WindowKernel {
  int kernel = -1;
  Shape out;
  Coords keep;     ///< the output's coords: idx 0..K-1
  Coords reduced;  ///< the window's coords: idx K..
};

WindowKernel new_window_kernel(Lowering& l, const Shape& out, const Shape& reduce) {
  WindowKernel w;
  w.out = out;
  Json domain = Json::array(), reduce_json = Json::array();
  for (std::size_t d = 0; d < out.size(); ++d) {
    domain.push_back(out[d].text());
    w.keep.push_back(idx(static_cast<int>(d)));
  }
  for (std::size_t d = 0; d < reduce.size(); ++d) {
    reduce_json.push_back(reduce[d].text());
    w.reduced.push_back(idx(static_cast<int>(out.size() + d)));
  }
  w.kernel = l.new_kernel(
      {{"kind", "reduce"}, {"domain", domain}, {"reduce", reduce_json}, {"stages", Json::array()}},
      "reduce");
  // Only "keep": a full store over the window dims means nothing for an output.
  l.kernels[static_cast<std::size_t>(w.kernel)].spaces = {{"keep", out, w.keep}};
  return w;
}

/// A stage of `w` computing `value`; the tensor of its result over the output's shape.
int add_stage(Lowering& l, const WindowKernel& w, const std::string& stage_op, DType dtype,
              const std::string& origin, const std::function<Json(Ctx&)>& value) {
  Ctx ctx{l, w.kernel, l.kernels[static_cast<std::size_t>(w.kernel)].loads, false};
  Json computed;
  try {
    computed = value(ctx);
  } catch (const NotHere&) {
    throw Unsupported(fmt::format("{}: its input cannot be computed by a reduce kernel", origin));
  }
  Kernel& kernel = l.kernels[static_cast<std::size_t>(w.kernel)];
  kernel.loads = std::move(ctx.loads);
  const std::string name = fmt::format("s{}", kernel.stage_count++);
  kernel.json["stages"].push_back({{"name", name}, {"op", stage_op}, {"value", computed}});
  Tensor tensor;
  tensor.kind = Tensor::Kind::Reduction;
  tensor.shape = w.out;
  tensor.dtype = dtype;
  tensor.origin = origin;
  tensor.kernel = w.kernel;
  tensor.ref = Json::array({"stage", name});
  tensor.at = w.keep;
  return l.add_tensor(std::move(tensor));
}

/// Whether anything reads value `id`'s buffer: a compute node's argument or a graph output.
bool is_read(const OpGraph& graph, int64_t id) {
  const int64_t buffer = graph.value(id).buffer;
  const std::function<bool(const GraphArg&)> reads = [&](const GraphArg& arg) {
    if (const auto value = arg.as_value(); value && graph.value(*value).buffer == buffer) {
      return true;
    }
    return std::any_of(arg.items.begin(), arg.items.end(), reads);
  };
  for (const auto& node : graph.nodes) {
    if (node.view) continue;
    if (std::any_of(node.args.begin(), node.args.end(), reads)) return true;
    for (const auto& [name, arg] : node.kwargs) {
      if (reads(arg)) return true;
    }
  }
  return std::any_of(graph.outputs.begin(), graph.outputs.end(), [&](const GraphOutput& output) {
    return graph.value(output.value).buffer == buffer;
  });
}

void set_output(Lowering& l, const GraphNode& node, std::size_t output, int id) {
  if (output < node.outputs.size() && node.outputs[output] >= 0) {
    l.value_tensor[node.outputs[output]] = id;
  }
}

/// A pool over the last axes.size() dims of x: the input element at window point (keep,
/// reduced), null mask when every window point is inside the input.
struct Pool {
  int x = -1;
  std::size_t lead = 0;  ///< dims before the spatial ones, kept as they are
  std::vector<WindowAxis> axes;

  Coords input_coords(const Coords& keep, const Coords& reduced) const {
    Coords coords(keep.begin(), keep.begin() + static_cast<std::ptrdiff_t>(lead));
    for (std::size_t j = 0; j < axes.size(); ++j) {
      coords.push_back(axes[j].clamped(keep[lead + j], reduced[j]));
    }
    return coords;
  }
  Json valid(const Coords& keep, const Coords& reduced) const {
    Json result;
    for (std::size_t j = 0; j < axes.size(); ++j) {
      result = both(result, axes[j].valid(keep[lead + j], reduced[j]));
    }
    return result;
  }
  Shape window() const {
    Shape sizes;
    for (const auto& axis : axes) sizes.push_back(axis.extent);
    return sizes;
  }
  /// The window element's coords from a stage's flat window index (row-major).
  Coords unflatten_window(const Json& flat) const {
    Coords result(axes.size());
    SymSize inner = SymSize::constant(1);
    for (std::size_t j = axes.size(); j-- > 0;) {
      Json coord = inner.is_one() ? flat : op("floordiv", {flat, size_expr(inner)});
      if (j > 0) coord = op("mod", {coord, size_expr(axes[j].extent)});
      result[j] = coord;
      inner = inner * axes[j].extent;
    }
    return result;
  }
  /// torch's max-pool index: the input position flattened over the spatial dims.
  Json flat_position(const std::vector<Json>& positions) const {
    Json flat = ilit(0);
    SymSize inner = SymSize::constant(1);
    for (std::size_t j = axes.size(); j-- > 0;) {
      flat = iadd(flat, imul(positions[j], size_expr(inner)));
      inner = inner * axes[j].in_size;
    }
    return flat;
  }
};

/// values (max stage) and, when read, indices (argmax stage turned into an input position).
void lower_max_pool(Lowering& l, const GraphNode& node, const NodeArgs& args, const Pool& pool,
                    const Shape& out) {
  const WindowKernel w = new_window_kernel(l, out, pool.window());
  const auto masked = [&](Ctx& ctx) {
    Json value = ctx.lowering.float_element(ctx, pool.x, pool.input_coords(w.keep, w.reduced));
    const Json valid = pool.valid(w.keep, w.reduced);
    return valid.is_null()
               ? value
               : op("where", {valid, value, flit(-std::numeric_limits<double>::infinity())});
  };
  const DType dtype = *l.graph.value(node.output()).dtype;
  set_output(l, node, 0, add_stage(l, w, "max", dtype, args.origin, masked));
  if (node.outputs.size() < 2 || node.outputs[1] < 0) return;
  if (!is_read(l.graph, node.outputs[1])) {
    // Views of the indices are still lowered (max_pool1d squeezes them), so they need a tensor.
    const std::string origin = args.origin;
    set_output(l, node, 1,
               add_pointwise(l, out, DType::Int64, origin, [origin](Ctx&, const Coords&) -> Json {
                 throw Unsupported(origin + ": its indices are not computed: nothing reads them");
               }));
    return;
  }
  const int arg = add_stage(l, w, "argmax", DType::Int64, args.origin, masked);
  set_output(
      l, node, 1, add_pointwise(l, out, DType::Int64, args.origin, [=](Ctx& ctx, const Coords& c) {
        const Coords r = pool.unflatten_window(ctx.lowering.element(ctx, arg, c));
        std::vector<Json> positions, firsts;
        for (std::size_t j = 0; j < pool.axes.size(); ++j) {
          positions.push_back(pool.axes[j].position(c[pool.lead + j], r[j]));
          firsts.push_back(pool.axes[j].first(c[pool.lead + j]));
        }
        // When every input value of the window is -inf the argmax lands on a masked
        // position; torch keeps its initial index then, the window's first input position.
        const Json valid = pool.valid(c, r);
        const Json flat = pool.flat_position(positions);
        return valid.is_null() ? flat : op("where", {valid, flat, pool.flat_position(firsts)});
      }));
}

/// sum stage over the window divided per output point by `divisor(coords)`.
void lower_avg_pool(Lowering& l, const GraphNode& node, const NodeArgs& args, const Pool& pool,
                    const Shape& out, std::function<Json(const Coords&)> divisor) {
  const WindowKernel w = new_window_kernel(l, out, pool.window());
  const int sum = add_stage(l, w, "sum", l.compute_dtype, args.origin, [&](Ctx& ctx) {
    Json value = ctx.lowering.float_element(ctx, pool.x, pool.input_coords(w.keep, w.reduced));
    const Json valid = pool.valid(w.keep, w.reduced);
    return valid.is_null() ? value : op("where", {valid, value, flit(0)});
  });
  const DType dtype = *l.graph.value(node.output()).dtype;
  set_output(l, node, 0, add_pointwise(l, out, dtype, args.origin, [=](Ctx& ctx, const Coords& c) {
               return op("div", {ctx.lowering.element(ctx, sum, c), divisor(c)});
             }));
}

bool lower_pool(Lowering& l, const GraphNode& node, std::string_view name) {
  const bool adaptive = name.starts_with("adaptive_") || name.starts_with("_adaptive_");
  const bool average = name.find("avg_pool") != std::string_view::npos;
  if (!adaptive && !name.starts_with("avg_pool") && !name.starts_with("max_pool")) return false;
  const std::size_t at = name.find("_pool");
  if (at == std::string_view::npos || at + 6 >= name.size() || name[at + 6] != 'd') return false;
  const std::size_t rank = static_cast<std::size_t>(name[at + 5] - '0');
  if (rank < 1 || rank > 3 || name.ends_with("backward")) return false;
  const NodeArgs args{node, fmt::format("{} (op {})", node.op, node.id)};
  Pool pool;
  pool.x = args.tensor(l, 0, "self");
  const Shape in = l.tensor(pool.x).shape;
  const Shape out = l.graph.value(node.output()).shape;
  if (in.size() < rank || out.size() != in.size()) {
    throw Unsupported(
        fmt::format("{}: input of rank {} for a {}-d pool", args.origin, in.size(), rank));
  }
  pool.lead = in.size() - rank;
  if (adaptive) {
    for (std::size_t j = 0; j < rank; ++j) {
      WindowAxis axis;
      axis.in_size = in[pool.lead + j];
      const SymSize& o = out[pool.lead + j];
      if (const auto step = axis.in_size.divided_by(o)) {
        axis.extent = *step;
        axis.stride = *step;
      } else if (axis.in_size.is_constant() && o.is_constant()) {
        axis.uneven_in = axis.in_size.coefficient();
        axis.uneven_out = o.coefficient();
        int64_t longest = 0;
        for (int64_t i = 0; i < axis.uneven_out; ++i) {
          const int64_t start = i * axis.uneven_in / axis.uneven_out;
          const int64_t end = ((i + 1) * axis.uneven_in + axis.uneven_out - 1) / axis.uneven_out;
          longest = std::max(longest, end - start);
        }
        axis.extent = SymSize::constant(longest);
      } else {
        throw Unsupported(
            fmt::format("{}: an adaptive pool from {} to {} (not a multiple) needs constant sizes",
                        args.origin, axis.in_size.text(), o.text()));
      }
      pool.axes.push_back(axis);
    }
  } else {
    const auto kernel = args.ints(1, "kernel_size", rank, {});
    const auto stride = args.ints(2, "stride", rank, kernel);
    const auto padding = args.ints(3, "padding", rank, {0});
    const auto dilation =
        average ? std::vector<int64_t>(rank, 1) : args.ints(4, "dilation", rank, {1});
    const bool ceil_mode = args.flag(average ? 4 : 5, "ceil_mode", false);
    for (std::size_t j = 0; j < rank; ++j) {
      WindowAxis axis;
      axis.in_size = in[pool.lead + j];
      axis.extent = SymSize::constant(kernel[j]);
      axis.stride = SymSize::constant(stride[j]);
      axis.padding = padding[j];
      axis.dilation = dilation[j];
      axis.mask_low = padding[j] > 0;
      axis.mask_high = padding[j] > 0 || ceil_mode;
      pool.axes.push_back(axis);
    }
  }
  if (!average) {
    lower_max_pool(l, node, args, pool, out);
    return true;
  }
  std::function<Json(const Coords&)> divisor;
  const bool masked = std::any_of(pool.axes.begin(), pool.axes.end(),
                                  [](const WindowAxis& a) { return a.mask_high || a.uneven(); });
  const GraphArg* override_arg = adaptive || rank == 1 ? nullptr : node.arg(6, "divisor_override");
  if (override_arg && !override_arg->is_none()) {
    const double value = static_cast<double>(args.integer(6, "divisor_override", 1));
    divisor = [value](const Coords&) { return flit(value); };
  } else if (!masked) {
    const Json count = op("float", {size_expr(product(pool.window()))});
    divisor = [count](const Coords&) { return count; };
  } else {
    const bool include_pad = adaptive ? false : args.flag(5, "count_include_pad", true);
    divisor = [pool, include_pad](const Coords& c) {
      Json count = ilit(1);
      for (std::size_t j = 0; j < pool.axes.size(); ++j) {
        const WindowAxis& axis = pool.axes[j];
        const Json o = c[pool.lead + j];
        const Json start = axis.start(o);
        Json length;
        if (axis.uneven()) {
          length = isub(axis.end(o), start);
        } else {
          // torch: the window ends at most `padding` past the input; count_include_pad counts
          // the padding in it, else only the input positions.
          const Json end = op("min", {iadd(start, size_expr(axis.extent)),
                                      iadd(size_expr(axis.in_size), ilit(axis.padding))});
          length = include_pad ? isub(end, start)
                               : isub(op("min", {end, size_expr(axis.in_size)}),
                                      op("max", {start, ilit(0)}));
        }
        count = imul(count, length);
      }
      return op("float", {count});
    };
  }
  lower_avg_pool(l, node, args, pool, out, divisor);
  return true;
}

struct Convolution {
  int x = -1, weight = -1;
  std::optional<int> bias;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;

  /// Spatial dim j of a convolution that is not transposed, over an input of `in_size`.
  WindowAxis axis(std::size_t j, const SymSize& in_size) const {
    WindowAxis result;
    result.in_size = in_size;
    result.stride = SymSize::constant(stride[j]);
    result.padding = padding[j];
    result.dilation = dilation[j];
    result.mask_low = result.mask_high = padding[j] > 0;
    return result;
  }
};

/// A LOAD of `view`; unlike a product operand's, coords that are the constant 0 are dropped too.
Json window_operand_load(const StoredAt& view, const Coords& coords) {
  Json strides = Json::array(), coords_json = Json::array();
  for (std::size_t d = 0; d < view.strides.size(); ++d) {
    if (view.strides[d].is_zero() || coords[d] == ilit(0)) continue;
    strides.push_back(view.strides[d].text());
    coords_json.push_back(coords[d]);
  }
  return {{"buffer", view.buffer},
          {"offset", view.offset.text()},
          {"strides", strides},
          {"coords", coords_json}};
}

/// The spatial coords of flat position p = ["idx", 2] over `spatial` (row-major).
Coords unflattened_positions(const Shape& spatial) {
  Coords positions(spatial.size());
  SymSize inner = SymSize::constant(1);
  for (std::size_t j = spatial.size(); j-- > 0;) {
    Json coord = inner.is_one() ? idx(2) : op("floordiv", {idx(2), size_expr(inner)});
    if (j > 0) coord = op("mod", {coord, size_expr(spatial[j])});
    positions[j] = coord;
    inner = inner * spatial[j];
  }
  return positions;
}

/// The matmul kernel of a convolution without groups: batch n, m = out channels, n = the output's
/// flattened positions p, k = `reduction`, with operands `a` (over m, k) and `b` (over batch, k,
/// n). Its result is the output at [n, co, p unflattened into the spatial dims].
int add_convolution_matmul(Lowering& l, const Shape& out, const SymSize& reduction, Json a, Json b,
                           DType dtype, const std::string& origin) {
  const Shape spatial(out.begin() + 2, out.end());
  const Coords positions = unflattened_positions(spatial);
  const int k = l.new_kernel({{"kind", "matmul"},
                              {"batch", Json::array({out[0].text()})},
                              {"m", out[1].text()},
                              {"n", product(spatial).text()},
                              {"k", reduction.text()},
                              {"a", std::move(a)},
                              {"b", std::move(b)}},
                             "matmul");
  Coords at = {idx(0), idx(1)};
  at.insert(at.end(), positions.begin(), positions.end());
  l.kernels[static_cast<std::size_t>(k)].spaces.push_back({"", out, at});
  Tensor tensor;
  tensor.kind = Tensor::Kind::Matmul;
  tensor.shape = out;
  tensor.dtype = dtype;
  tensor.origin = origin;
  tensor.kernel = k;
  tensor.ref = Json::array({"acc"});
  tensor.at = at;
  return l.add_tensor(std::move(tensor));
}

/// out[n, co, p] = sum_ci w[co, ci] * x[n, ci, p] over the flattened positions p: a matmul
/// with batch n, m = co, n = p, k = ci. The output's spatial coords unflatten the matmul's n.
int lower_pointwise_convolution(Lowering& l, const Convolution& conv, const Shape& out, DType dtype,
                                const std::string& origin) {
  const Shape x_shape = l.tensor(conv.x).shape;
  const StoredAt x_view = stored_view(l, conv.x);
  const StoredAt w_view = stored_view(l, conv.weight);
  const Coords positions = unflattened_positions(Shape(out.begin() + 2, out.end()));
  Coords x_coords = {x_shape[0].is_one() ? ilit(0) : idx(0), idx(3)};
  Coords w_coords = {idx(1), idx(3)};
  x_coords.insert(x_coords.end(), positions.begin(), positions.end());
  w_coords.insert(w_coords.end(), positions.size(), ilit(0));
  const int result =
      add_convolution_matmul(l, out, x_shape[1], window_operand_load(w_view, w_coords),
                             window_operand_load(x_view, x_coords), dtype, origin);
  l.notes.push_back(
      fmt::format("{}: a 1x1 convolution, lowered as a matmul over channels", origin));
  return result;
}

/// A convolution without groups reduces over K = in channels x kernel window elements; below
/// this K it stays a direct reduce kernel, from it on it is im2col + matmul. Under 16 the product
/// is shorter than one k step of a tensor-core MMA (16 for 16-bit types) and of cuBLASLt's
/// tiles: the matmul is bound by reading col and writing the output, so the col pass (K elements
/// written and read again per output position, 2*N*K*P in all) costs about what the whole direct
/// kernel does, which writes only the output and reads its K inputs per element from cache.
/// From 16 on, the direct kernel's K multiply-adds per output element on CUDA cores, each
/// reading x and w again, grow with K while the matmul reuses each col element across a tile
/// of output channels. An estimate, not a measured crossover: a conv with many output channels
/// and K < 16 (3 input channels and a 1x3 kernel, say) stays direct.
constexpr int64_t kIm2colMinReduction = 16;

/// im2col + matmul: a pointwise kernel writes col[n, ci, r..., o...] = x[n, ci, o * stride -
/// padding + r * dilation] (0 outside the input, masked and clamped as WindowAxis does), row-major
/// so that it is col[n, K, P] with K = C_in * prod(kernel) in the weight's own order (ci, then
/// the kernel dims) and P = prod(output spatial); then one matmul per batch, out[n] = w[C_out, K]
/// . col[n], whose operands are plain strided matrices (no floordiv/mod in their coords) and so
/// may run through cuBLASLt (synth/library_matmul.h).
///
/// Cost: col holds N*K*P elements of x's dtype, about prod(kernel) / prod(stride) times the
/// input (9x for a 3x3 kernel at stride 1, 27x for 3x3x3): a float32 batch of 16 x 3 x 256 x 256
/// with a 3x3 kernel needs 16 * 27 * 254^2 floats, 111 MB of workspace, written once and read
/// by the matmul. The output's store unflattens p, which simplify_plan folds back into one
/// coord, so cuBLASLt writes the output directly (through a float32 temp of the output's size
/// and an epilogue pass only when a bias is added, broadcast over p). Reading x
/// through div/mod coords of the matmul's k and n instead (implicit GEMM) would need no temp,
/// but no library reads such an operand: only the generated kernel could run it, at a third of
/// cuBLAS's rate on Hopper.
int lower_im2col_convolution(Lowering& l, const Convolution& conv, const StoredAt& w_view,
                             const Shape& out, DType dtype, const std::string& origin) {
  const Shape x_shape = l.tensor(conv.x).shape;
  const Shape w_shape = l.tensor(conv.weight).shape;
  const std::size_t rank = w_shape.size() - 2;
  std::vector<WindowAxis> axes;
  for (std::size_t j = 0; j < rank; ++j) axes.push_back(conv.axis(j, x_shape[2 + j]));
  // [n, ci, kernel..., out spatial...]
  Shape col_shape = {x_shape[0], w_shape[1]};
  col_shape.insert(col_shape.end(), w_shape.begin() + 2, w_shape.end());
  col_shape.insert(col_shape.end(), out.begin() + 2, out.end());
  const int x = conv.x;
  const int col = add_pointwise(
      l, col_shape, l.tensor(x).dtype, origin, [x, axes, rank](Ctx& ctx, const Coords& c) {
        Coords x_coords = {c[0], c[1]};
        Json valid;
        for (std::size_t j = 0; j < rank; ++j) {
          const Json& r = c[2 + j];
          const Json& o = c[2 + rank + j];
          valid = both(valid, axes[j].valid(o, r));
          x_coords.push_back(axes[j].clamped(o, r));
        }
        const Json value = ctx.lowering.float_element(ctx, x, x_coords);
        return valid.is_null() ? value : op("where", {valid, value, flit(0)});
      });
  // Stored by a pointwise kernel of its own, in x's dtype: the values are x's.
  const StoredAt col_view = l.materialize_now(col, StoredFor::Operand);
  const SymSize reduction = product(Shape(w_shape.begin() + 1, w_shape.end()));
  const SymSize positions = product(Shape(out.begin() + 2, out.end()));
  const StoredAt a_view{w_view.buffer, w_view.offset, {reduction, SymSize::constant(1)}, -1};
  const StoredAt b_view{col_view.buffer,
                        SymSize::constant(0),
                        {reduction * positions, positions, SymSize::constant(1)},
                        col_view.kernel};
  const Json a = window_operand_load(a_view, {idx(1), idx(3)});
  const Json b =
      window_operand_load(b_view, {x_shape[0].is_one() ? ilit(0) : idx(0), idx(3), idx(2)});
  const int result = add_convolution_matmul(l, out, reduction, a, b, dtype, origin);
  l.notes.push_back(fmt::format(
      "{}: a convolution over K = {} in-channel x window elements, lowered as im2col + matmul "
      "(col temp {} of {} elements)",
      origin, reduction.text(), col_view.buffer, product(col_shape).text()));
  return result;
}

/// The direct convolution: a sum stage over [input channels of the group, kernel...].
int lower_direct_convolution(Lowering& l, const Convolution& conv, const Shape& out, DType dtype,
                             const std::string& origin) {
  const Shape x_shape = l.tensor(conv.x).shape;
  const Shape w_shape = l.tensor(conv.weight).shape;
  const std::size_t rank = w_shape.size() - 2;
  const SymSize groups = SymSize::constant(conv.groups);
  const auto out_per_group = out[1].divided_by(groups);
  const auto in_per_group = conv.transposed ? x_shape[1].divided_by(groups) : w_shape[1];
  if (!out_per_group || !in_per_group) {
    throw Unsupported(fmt::format("{}: channels are not a multiple of groups", origin));
  }
  Shape reduce = {*in_per_group};
  for (std::size_t j = 0; j < rank; ++j) reduce.push_back(w_shape[2 + j]);
  const WindowKernel w = new_window_kernel(l, out, reduce);
  const Json n = w.keep[0], co = w.keep[1], ci = w.reduced[0];
  const Json group = conv.groups == 1 ? ilit(0) : op("floordiv", {co, size_expr(*out_per_group)});
  const Json channel = iadd(imul(group, size_expr(*in_per_group)), ci);
  Coords x_coords = {x_shape[0].is_one() ? ilit(0) : n, channel};
  Coords w_coords;
  Json valid;
  for (std::size_t j = 0; j < rank; ++j) {
    const Json o = w.keep[2 + j], r = w.reduced[1 + j];
    const SymSize& in_size = x_shape[2 + j];
    if (conv.transposed) {
      // Output o takes input i where o = i * stride - padding + r * dilation.
      const Json t = isub(iadd(o, ilit(conv.padding[j])), imul(r, ilit(conv.dilation[j])));
      const Json i = conv.stride[j] == 1 ? t : op("floordiv", {t, ilit(conv.stride[j])});
      if (conv.stride[j] != 1)
        valid = both(valid, op("eq", {op("mod", {t, ilit(conv.stride[j])}), ilit(0)}));
      valid = both(valid, both(op("ge", {i, ilit(0)}), op("lt", {i, size_expr(in_size)})));
      x_coords.push_back(op("min", {op("max", {i, ilit(0)}), isub(size_expr(in_size), ilit(1))}));
    } else {
      const WindowAxis axis = conv.axis(j, in_size);
      valid = both(valid, axis.valid(o, r));
      x_coords.push_back(axis.clamped(o, r));
    }
  }
  if (conv.transposed) {
    w_coords = {channel, conv.groups == 1 ? co : op("mod", {co, size_expr(*out_per_group)})};
  } else {
    w_coords = {co, ci};
  }
  w_coords.insert(w_coords.end(), w.reduced.begin() + 1, w.reduced.end());
  l.notes.push_back(fmt::format("{}: direct convolution: correct, not tuned", origin));
  return add_stage(l, w, "sum", dtype, origin, [&](Ctx& ctx) {
    const Json product = op("mul", {ctx.lowering.float_element(ctx, conv.x, x_coords),
                                    ctx.lowering.float_element(ctx, conv.weight, w_coords)});
    return valid.is_null() ? product : op("where", {valid, product, flit(0)});
  });
}

/// The weight as a row-major [C_out, K] matrix when the convolution is im2col + matmul, else
/// nullopt. It stays direct when transposed (an output reads only the inputs its position reaches
/// through the stride: im2col would read a zero-stuffed input, col2im scatter the product), with
/// groups (one matmul per group; a depthwise one has one output channel per group and K = the
/// window alone, so each col element would feed one multiply-add), or when K is known to be under
/// kIm2colMinReduction (a K of var axes is taken as long).
std::optional<StoredAt> im2col_weight(Lowering& l, const Convolution& conv,
                                      const std::string& origin) {
  const Shape w_shape = l.tensor(conv.weight).shape;
  const SymSize reduction = product(Shape(w_shape.begin() + 1, w_shape.end()));
  if (conv.transposed || conv.groups != 1) return std::nullopt;
  if (reduction.is_constant() && reduction.coefficient() < kIm2colMinReduction) return std::nullopt;
  const StoredAt weight = stored_view(l, conv.weight);
  if (is_contiguous(weight.strides, w_shape)) return weight;
  // A permuted view of the weight is copied row-major first (C_out * K elements, a pass over the
  // weight per call), so that A stays a plain strided matrix.
  const int w = conv.weight;
  const int copy =
      add_pointwise(l, w_shape, l.tensor(w).dtype, origin,
                    [w](Ctx& ctx, const Coords& c) { return ctx.lowering.element(ctx, w, c); });
  return l.materialize_now(copy, StoredFor::Operand);
}

bool lower_convolution(Lowering& l, const GraphNode& node, std::string_view name) {
  const NodeArgs args{node, fmt::format("{} (op {})", node.op, node.id)};
  const bool generic = name == "convolution" || name == "_convolution";
  const bool transpose_form = name.starts_with("conv_transpose");
  const bool plain_form = name == "conv1d" || name == "conv2d" || name == "conv3d";
  if (!generic && !transpose_form && !plain_form) return false;
  Convolution conv;
  conv.x = args.tensor(l, 0, "input");
  conv.weight = args.tensor(l, 1, "weight");
  conv.bias = args.optional_tensor(l, 2, "bias");
  const Shape w_shape = l.tensor(conv.weight).shape;
  const std::size_t rank = w_shape.size() - 2;
  const Shape out = l.graph.value(node.output()).shape;
  if (w_shape.size() < 3 || l.tensor(conv.x).shape.size() != rank + 2 || out.size() != rank + 2) {
    throw Unsupported(
        fmt::format("{}: expected a batched input and a weight of the same rank", args.origin));
  }
  if (plain_form && node.arg(4, "padding") && node.arg(4, "padding")->as_string()) {
    throw Unsupported(fmt::format("{}: string padding is not lowered", args.origin));
  }
  conv.stride = args.ints(3, "stride", rank, {1});
  conv.padding = args.ints(4, "padding", rank, {0});
  if (generic) {
    conv.dilation = args.ints(5, "dilation", rank, {1});
    conv.transposed = args.flag(6, "transposed", false);
    conv.output_padding = args.ints(7, "output_padding", rank, {0});
    conv.groups = args.integer(8, "groups", 1);
  } else if (transpose_form) {
    conv.transposed = true;
    conv.output_padding = args.ints(5, "output_padding", rank, {0});
    conv.groups = args.integer(6, "groups", 1);
    conv.dilation = args.ints(7, "dilation", rank, {1});
  } else {
    conv.dilation = args.ints(5, "dilation", rank, {1});
    conv.groups = args.integer(6, "groups", 1);
  }
  const DType dtype = *l.graph.value(node.output()).dtype;
  const bool pointwise =
      !conv.transposed && conv.groups == 1 &&
      std::all_of(w_shape.begin() + 2, w_shape.end(),
                  [](const SymSize& k) { return k.is_one(); }) &&
      std::all_of(conv.stride.begin(), conv.stride.end(), [](int64_t s) { return s == 1; }) &&
      std::all_of(conv.padding.begin(), conv.padding.end(), [](int64_t p) { return p == 0; });
  const DType accumulated = conv.bias ? l.compute_dtype : dtype;
  int result = -1;
  if (pointwise) {
    result = lower_pointwise_convolution(l, conv, out, accumulated, args.origin);
  } else if (const auto weight = im2col_weight(l, conv, args.origin)) {
    result = lower_im2col_convolution(l, conv, *weight, out, accumulated, args.origin);
  } else {
    result = lower_direct_convolution(l, conv, out, accumulated, args.origin);
  }
  if (conv.bias) {
    const int sum = result;
    const int bias = *conv.bias;
    result = add_pointwise(l, out, dtype, args.origin, [sum, bias](Ctx& ctx, const Coords& c) {
      return op("add",
                {ctx.lowering.element(ctx, sum, c), ctx.lowering.float_element(ctx, bias, {c[1]})});
    });
  }
  set_output(l, node, 0, result);
  return true;
}

}  // namespace

bool lower_window(Lowering& lowering, const GraphNode& node) {
  const std::string_view name = node.base_name();
  if (name.find("pool") != std::string_view::npos) return lower_pool(lowering, node, name);
  return lower_convolution(lowering, node, name);
}

}  // namespace kernelarc::lowering
