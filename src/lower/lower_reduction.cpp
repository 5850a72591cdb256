// Reductions, normalisations and losses. Each becomes reduce stages over the input domain plus
// element-wise work around them; the stages of one domain share a kernel, so softmax is a max
// stage and a sum-of-exp stage, layernorm a mean stage and a variance stage, and the outputs
// broadcast back over the reduced dims are that kernel's "full" stores.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "lower/lowering.h"
#include "lower/node_args.h"

namespace kernelarc::lowering {
namespace {

using Shape = std::vector<SymSize>;

/// Helpers bound to one node: its arguments (NodeArgs) and the lowering they are read into.
struct NodeLowering : NodeArgs {
  Lowering& l;

  int tensor(std::size_t position, std::string_view name = {}) {
    return NodeArgs::tensor(l, position, name);
  }
  std::optional<int> optional_tensor(std::size_t position, std::string_view name) {
    return NodeArgs::optional_tensor(l, position, name);
  }
  const Shape& shape(int id) { return l.tensor(id).shape; }
  /// Reduced dims of a `dim` argument; none / [] = every dim.
  std::vector<int> dims(std::size_t position, std::string_view name, std::size_t rank) {
    const GraphArg* arg = node.arg(position, name);
    std::vector<int> result;
    if (arg && !arg->is_none()) {
      const auto list = arg->as_int_list();
      if (!list) throw Unsupported(fmt::format("{}: dims must be constant integers", origin));
      for (const int64_t d : *list) result.push_back(normalize_dim(d, rank, origin));
    }
    if (result.empty()) {
      for (std::size_t d = 0; d < rank; ++d) result.push_back(static_cast<int>(d));
    }
    std::sort(result.begin(), result.end());
    result.erase(std::unique(result.begin(), result.end()), result.end());
    return result;
  }
  DType out_dtype(std::size_t output = 0) { return *l.graph.value(node.outputs.at(output)).dtype; }
  void set_output(std::size_t output, int id) {
    if (output < node.outputs.size() && node.outputs[output] >= 0) {
      l.value_tensor[node.outputs[output]] = id;
    }
  }
  /// f(x) element-wise over x's shape.
  int map(int x, DType dtype, std::function<Json(Json)> f) {
    return add_pointwise(l, shape(x), dtype, origin, [x, f](Ctx& ctx, const Coords& coords) {
      return f(ctx.lowering.float_element(ctx, x, coords));
    });
  }
  /// rsqrt(v + eps) over v's shape, eps the argument at `position`: a number, or a float scalar
  /// input of the definition ({"input": name}) read from its buffer.
  int rsqrt_plus_eps(int v, std::size_t position) {
    const GraphArg* arg = node.arg(position, "eps");
    if (arg && arg->kind == GraphArg::Kind::Input) {
      const std::string input = arg->text;
      return add_pointwise(
          l, shape(v), DType::Float32, origin, [v, input](Ctx& ctx, const Coords& coords) {
            Json eps = ctx.lowering.load(ctx, input, SymSize::constant(0), {}, {});
            return op("rsqrt", {fadd(ctx.lowering.float_element(ctx, v, coords), eps)});
          });
    }
    const double eps = number(position, "eps", 1e-5);
    return map(v, DType::Float32, [eps](Json a) { return op("rsqrt", {fadd(a, flit(eps))}); });
  }
  /// f(x, y) over x's shape, y broadcast (y has keepdim 1s or fewer dims).
  int map2(int x, int y, DType dtype, std::function<Json(Json, Json)> f) {
    const Shape y_shape = shape(y);
    return add_pointwise(
        l, shape(x), dtype, origin, [x, y, y_shape, f](Ctx& ctx, const Coords& coords) {
          return f(ctx.lowering.float_element(ctx, x, coords),
                   ctx.lowering.float_element(ctx, y, broadcast_coords(y_shape, coords)));
        });
  }
  int reduce(int x, const std::vector<int>& dims, bool keepdim, const std::string& stage,
             DType dtype) {
    return add_reduction(l, x, dims, keepdim, stage, origin, dtype);
  }
  SymSize count(int x, const std::vector<int>& dims) {
    SymSize n = SymSize::constant(1);
    for (const int d : dims) n = n * shape(x)[static_cast<std::size_t>(d)];
    return n;
  }
  int mean(int x, const std::vector<int>& dims, bool keepdim, DType dtype) {
    const int sum = reduce(x, dims, keepdim, "sum", dtype);
    const Json n = op("float", {size_expr(count(x, dims))});
    return map(sum, dtype, [n](Json s) { return op("div", {s, n}); });
  }
  /// Biased (correction 0) or corrected variance; keepdim.
  int variance(int x, const std::vector<int>& dims, double correction, DType dtype,
               int* mean_out = nullptr) {
    const int m = mean(x, dims, true, DType::Float32);
    if (mean_out) *mean_out = m;
    const int squared = map2(x, m, DType::Float32, [](Json a, Json b) {
      Json d = fsub(a, b);
      return fmul(d, d);
    });
    const int sum = reduce(squared, dims, true, "sum", DType::Float32);
    const Json n = op("sub", {op("float", {size_expr(count(x, dims))}), flit(correction)});
    return map(sum, dtype, [n](Json s) { return op("div", {s, op("max", {n, flit(0)})}); });
  }
  /// Reduces a loss per element by torch's reduction enum (0 none, 1 mean, 2 sum).
  int reduce_loss(int loss, int64_t reduction, DType dtype) {
    if (reduction == 0) return loss;
    std::vector<int> all;
    for (std::size_t d = 0; d < shape(loss).size(); ++d) all.push_back(static_cast<int>(d));
    if (reduction == 2) return reduce(loss, all, false, "sum", dtype);
    return mean(loss, all, false, dtype);
  }
};

int64_t reduction_arg(NodeLowering& n, std::size_t position) {
  const GraphArg* arg = n.node.arg(position, "reduction");
  if (!arg || arg->is_none()) return 1;
  if (const auto value = arg->as_int()) return *value;
  throw Unsupported(n.origin + ": reduction must be a constant");
}

bool lower_norm_or_loss(NodeLowering& n, std::string_view name);

}  // namespace

namespace {

/// The reduction with 1s at the reduced dims.
int add_keepdim_reduction(Lowering& lowering, int input, std::vector<int> reduced,
                          const std::string& stage_op, const std::string& origin, DType dtype) {
  const Shape in_shape = lowering.tensor(input).shape;
  std::sort(reduced.begin(), reduced.end());
  Shape domain, reduce_sizes, out_shape;
  Coords in_coords(in_shape.size()), at;
  std::vector<int> kept;
  for (std::size_t d = 0; d < in_shape.size(); ++d) {
    if (std::find(reduced.begin(), reduced.end(), static_cast<int>(d)) == reduced.end()) {
      kept.push_back(static_cast<int>(d));
    }
  }
  for (std::size_t i = 0; i < kept.size(); ++i) {
    domain.push_back(in_shape[static_cast<std::size_t>(kept[i])]);
    in_coords[static_cast<std::size_t>(kept[i])] = idx(static_cast<int>(i));
  }
  for (std::size_t i = 0; i < reduced.size(); ++i) {
    reduce_sizes.push_back(in_shape[static_cast<std::size_t>(reduced[i])]);
    in_coords[static_cast<std::size_t>(reduced[i])] = idx(static_cast<int>(kept.size() + i));
  }
  for (std::size_t d = 0; d < in_shape.size(); ++d) {
    const bool is_reduced =
        std::find(reduced.begin(), reduced.end(), static_cast<int>(d)) != reduced.end();
    out_shape.push_back(is_reduced ? SymSize::constant(1) : in_shape[d]);
    at.push_back(is_reduced ? ilit(0) : in_coords[d]);
  }
  Tensor tensor;
  tensor.kind = Tensor::Kind::Reduction;
  tensor.shape = out_shape;
  tensor.dtype = dtype;
  tensor.origin = origin;
  tensor.at = at;
  const int id = lowering.add_tensor(std::move(tensor));

  const auto add_stage = [&](int k, Ctx& ctx) {
    Json value = lowering.element(ctx, input, in_coords);
    if (is_integer_dtype(lowering.tensor(input).dtype) && !is_integer_dtype(dtype) &&
        stage_op != "argmax" && stage_op != "argmin") {
      value = op("float", {value});
    }
    Kernel& kernel = lowering.kernels[static_cast<std::size_t>(k)];
    kernel.loads = std::move(ctx.loads);
    const std::string name = fmt::format("s{}", kernel.stage_count++);
    kernel.json["stages"].push_back({{"name", name}, {"op", stage_op}, {"value", value}});
    Tensor& t = lowering.tensor(id);
    t.kernel = k;
    t.ref = Json::array({"stage", name});
  };
  // Join an existing kernel over the same domain when the stage can be computed there.
  for (int k = static_cast<int>(lowering.kernels.size()) - 1; k >= 0; --k) {
    const Kernel& kernel = lowering.kernels[static_cast<std::size_t>(k)];
    if (kernel.kind != "reduce" || kernel.spaces.size() != 2 || kernel.spaces[0].shape != domain ||
        kernel.json["reduce"].size() != reduce_sizes.size()) {
      continue;
    }
    bool same = true;
    for (std::size_t i = 0; i < reduce_sizes.size(); ++i) {
      same = same && kernel.json["reduce"][i] == reduce_sizes[i].text();
    }
    // The same reduced sizes in another order would be another domain.
    same = same && kernel.spaces[1].coords == in_coords && kernel.spaces[1].shape == in_shape;
    if (!same) continue;
    Ctx dry{lowering, k, kernel.loads, true, kMaxFusedStoreNodes};
    try {
      if (expression_nodes(lowering.element(dry, input, in_coords)) > kMaxFusedStoreNodes) continue;
    } catch (const NotHere&) {
      continue;
    }
    Ctx ctx{lowering, k, kernel.loads, false};
    add_stage(k, ctx);
    return id;
  }
  Json domain_json = Json::array(), reduce_json = Json::array();
  for (const auto& size : domain) domain_json.push_back(size.text());
  for (const auto& size : reduce_sizes) reduce_json.push_back(size.text());
  const int k = lowering.new_kernel({{"kind", "reduce"},
                                     {"domain", domain_json},
                                     {"reduce", reduce_json},
                                     {"stages", Json::array()}},
                                    "reduce");
  Coords keep_coords;
  for (std::size_t i = 0; i < kept.size(); ++i) keep_coords.push_back(idx(static_cast<int>(i)));
  lowering.kernels[static_cast<std::size_t>(k)].spaces = {{"keep", domain, keep_coords},
                                                          {"full", in_shape, in_coords}};
  Ctx ctx{lowering, k, Json::object(), false};
  try {
    add_stage(k, ctx);
  } catch (const NotHere&) {
    throw Unsupported(fmt::format("{}: its input cannot be computed by a reduce kernel", origin));
  }
  return id;
}

}  // namespace

int add_reduction(Lowering& lowering, int input, std::vector<int> reduced, bool keepdim,
                  const std::string& stage_op, const std::string& origin, DType dtype) {
  std::sort(reduced.begin(), reduced.end());
  const int r = add_keepdim_reduction(lowering, input, reduced, stage_op, origin, dtype);
  if (keepdim) return r;
  return add_reduction_view(lowering, r, reduced, dtype, origin);
}

int add_reduction_view(Lowering& lowering, int r, std::vector<int> reduced, DType dtype,
                       const std::string& origin) {
  std::sort(reduced.begin(), reduced.end());
  const Shape full = lowering.tensor(r).shape;
  Shape squeezed;
  for (std::size_t d = 0; d < full.size(); ++d) {
    if (!std::binary_search(reduced.begin(), reduced.end(), static_cast<int>(d))) {
      squeezed.push_back(full[d]);
    }
  }
  return add_pointwise(
      lowering, squeezed, dtype, origin, [r, full, reduced](Ctx& ctx, const Coords& coords) {
        Coords inner;
        std::size_t next = 0;
        for (std::size_t d = 0; d < full.size(); ++d) {
          const bool is_reduced =
              std::binary_search(reduced.begin(), reduced.end(), static_cast<int>(d));
          inner.push_back(is_reduced ? ilit(0) : coords[next++]);
        }
        return ctx.lowering.element(ctx, r, inner);
      });
}

namespace {

bool lower_norm_or_loss(NodeLowering& n, std::string_view name) {
  const DType f32 = DType::Float32;
  if (name == "_softmax" || name == "_log_softmax") {
    const int x = n.tensor(0);
    const std::vector<int> dims = {
        normalize_dim(n.node.arg(1)->as_int().value_or(-1), n.shape(x).size(), n.origin)};
    const int m = n.reduce(x, dims, true, "max", f32);
    const int shifted = n.map2(x, m, f32, [](Json a, Json b) { return fsub(a, b); });
    const int e = n.map(shifted, f32, [](Json a) { return op("exp", {a}); });
    const int s = n.reduce(e, dims, true, "sum", f32);
    const bool log = name == "_log_softmax";
    n.set_output(0, n.map2(shifted, s, n.out_dtype(), [log](Json a, Json b) {
      return log ? fsub(a, op("log", {b})) : op("div", {op("exp", {a}), b});
    }));
    return true;
  }
  if (name == "native_layer_norm") {
    const int x = n.tensor(0);
    const auto normalized = n.node.arg(1)->as_int_expr_list();
    if (!normalized) throw Unsupported(n.origin + ": normalized_shape must be a list");
    const std::size_t rank = n.shape(x).size();
    std::vector<int> dims;
    for (std::size_t i = rank - normalized->size(); i < rank; ++i)
      dims.push_back(static_cast<int>(i));
    const auto weight = n.optional_tensor(2, "weight");
    const auto bias = n.optional_tensor(3, "bias");
    int mean = -1;
    const int var = n.variance(x, dims, 0.0, f32, &mean);
    const int rstd = n.rsqrt_plus_eps(var, 4);
    const int centered = n.map2(x, mean, f32, [](Json a, Json b) { return fsub(a, b); });
    int out = n.map2(centered, rstd, f32, [](Json a, Json b) { return fmul(a, b); });
    if (weight) out = n.map2(out, *weight, f32, [](Json a, Json b) { return fmul(a, b); });
    if (bias) out = n.map2(out, *bias, n.out_dtype(), [](Json a, Json b) { return fadd(a, b); });
    n.l.tensor(out).dtype = n.out_dtype();
    n.set_output(0, out);
    n.set_output(1, mean);
    n.set_output(2, rstd);
    return true;
  }
  if (name == "native_batch_norm" || name == "_native_batch_norm_legit" ||
      name == "_native_batch_norm_legit_no_training") {
    const int x = n.tensor(0);
    const auto weight = n.optional_tensor(1, "weight");
    const auto bias = n.optional_tensor(2, "bias");
    const bool no_stats = n.node.overload() == "no_stats";
    const bool no_training = name == "_native_batch_norm_legit_no_training";
    const std::size_t training_at = no_stats ? 3 : 5;
    const bool training = !no_training && n.flag(training_at, "training", true);
    const std::size_t eps_at = no_training ? 6 : training_at + 2;
    const std::size_t rank = n.shape(x).size();
    // Per-channel parameters broadcast along dim 1.
    const auto channel = [&](int per_channel) {
      return add_pointwise(n.l, n.shape(x), f32, n.origin,
                           [per_channel](Ctx& ctx, const Coords& c) {
                             return ctx.lowering.float_element(ctx, per_channel, {c[1]});
                           });
    };
    int mean = -1, rstd = -1;
    if (training) {
      std::vector<int> dims;
      for (std::size_t d = 0; d < rank; ++d) {
        if (d != 1) dims.push_back(static_cast<int>(d));
      }
      const int var = n.variance(x, dims, 0.0, f32, &mean);
      rstd = n.rsqrt_plus_eps(var, eps_at);
      const auto squeeze_channel = [&](int keepdim) {
        return add_pointwise(n.l, {n.shape(x)[1]}, f32, n.origin,
                             [keepdim, rank](Ctx& ctx, const Coords& c) {
                               Coords inner(rank, ilit(0));
                               inner[1] = c[0];
                               return ctx.lowering.element(ctx, keepdim, inner);
                             });
      };
      n.set_output(1, squeeze_channel(mean));
      n.set_output(2, squeeze_channel(rstd));
    } else {
      const int running_mean = n.tensor(3, "running_mean");
      const int running_var = n.tensor(4, "running_var");
      mean = channel(running_mean);
      rstd = n.rsqrt_plus_eps(channel(running_var), eps_at);
    }
    const int centered = n.map2(x, mean, f32, [](Json a, Json b) { return fsub(a, b); });
    int out = n.map2(centered, rstd, f32, [](Json a, Json b) { return fmul(a, b); });
    if (weight) out = n.map2(out, channel(*weight), f32, [](Json a, Json b) { return fmul(a, b); });
    if (bias) out = n.map2(out, channel(*bias), f32, [](Json a, Json b) { return fadd(a, b); });
    n.l.tensor(out).dtype = n.out_dtype();
    n.set_output(0, out);
    return true;
  }
  if (name == "native_group_norm") {
    const int x = n.tensor(0);
    const auto weight = n.optional_tensor(1, "weight");
    const auto bias = n.optional_tensor(2, "bias");
    const auto batch = n.node.arg(3)->as_int_expr();
    const auto channels = n.node.arg(4)->as_int_expr();
    const auto spatial = n.node.arg(5)->as_int_expr();
    const auto groups = n.node.arg(6)->as_int_expr();
    if (!batch || !channels || !spatial || !groups)
      throw Unsupported(n.origin + ": sizes must be integers");
    const auto per_group = channels->divided_by(*groups);
    if (!per_group) throw Unsupported(n.origin + ": channels must be a multiple of groups");
    // x viewed as [N, G, C/G * HxW]: the reduced dims of a group are contiguous.
    const Shape x_shape = n.shape(x);
    const Shape grouped = {*batch, *groups, *per_group * *spatial};
    const int xv = add_pointwise(
        n.l, grouped, n.l.tensor(x).dtype, n.origin,
        [x, x_shape, grouped](Ctx& ctx, const Coords& c) {
          return ctx.lowering.element(
              ctx, x,
              view_to_base_coords(ctx.lowering, grouped, contiguous_strides(grouped),
                                  SymSize::constant(0), x_shape, contiguous_strides(x_shape), c));
        });
    int mean = -1;
    const int var = n.variance(xv, {2}, 0.0, f32, &mean);
    const int rstd = n.rsqrt_plus_eps(var, 7);
    const SymSize group_size = *per_group;
    const auto stat = [&, group_size](int keepdim) {
      // The statistic of element (n, c, ...) of x.
      return add_pointwise(
          n.l, x_shape, f32, n.origin, [keepdim, group_size](Ctx& ctx, const Coords& c) {
            return ctx.lowering.element(
                ctx, keepdim, {c[0], op("floordiv", {c[1], size_expr(group_size)}), ilit(0)});
          });
    };
    const auto channel = [&](int per_channel) {
      return add_pointwise(n.l, x_shape, f32, n.origin, [per_channel](Ctx& ctx, const Coords& c) {
        return ctx.lowering.float_element(ctx, per_channel, {c[1]});
      });
    };
    const int centered = n.map2(x, stat(mean), f32, [](Json a, Json b) { return fsub(a, b); });
    int out = n.map2(centered, stat(rstd), f32, [](Json a, Json b) { return fmul(a, b); });
    if (weight) out = n.map2(out, channel(*weight), f32, [](Json a, Json b) { return fmul(a, b); });
    if (bias) out = n.map2(out, channel(*bias), f32, [](Json a, Json b) { return fadd(a, b); });
    n.l.tensor(out).dtype = n.out_dtype();
    n.set_output(0, out);
    const auto squeeze = [&](int keepdim) {
      return add_pointwise(n.l, {*batch, *groups}, f32, n.origin,
                           [keepdim](Ctx& ctx, const Coords& c) {
                             return ctx.lowering.element(ctx, keepdim, {c[0], c[1], ilit(0)});
                           });
    };
    n.set_output(1, squeeze(mean));
    n.set_output(2, squeeze(rstd));
    return true;
  }
  if (name == "mse_loss" || name == "l1_loss" || name == "smooth_l1_loss" || name == "huber_loss" ||
      name == "kl_div" || name == "binary_cross_entropy") {
    const int x = n.tensor(0);
    const int y = n.tensor(1);
    const bool bce = name == "binary_cross_entropy";
    const auto weight = bce ? n.optional_tensor(2, "weight") : std::nullopt;
    const int64_t reduction = reduction_arg(n, bce ? 3 : 2);
    int loss = -1;
    if (name == "mse_loss" || name == "l1_loss") {
      const bool squared = name == "mse_loss";
      loss = n.map2(x, y, f32, [squared](Json a, Json b) {
        Json d = fsub(a, b);
        return squared ? fmul(d, d) : op("abs", {d});
      });
    } else if (name == "smooth_l1_loss" || name == "huber_loss") {
      const bool huber = name == "huber_loss";
      const double beta = n.number(3, huber ? "delta" : "beta", 1.0);
      loss = n.map2(x, y, f32, [huber, beta](Json a, Json b) {
        Json d = op("abs", {fsub(a, b)});
        Json quadratic = fmul(flit(0.5), fmul(d, d));
        if (!huber) quadratic = op("div", {quadratic, flit(beta)});
        Json linear = fsub(d, flit(0.5 * beta));
        if (huber) linear = fmul(flit(beta), linear);
        return op("where", {op("lt", {d, flit(beta)}), quadratic, linear});
      });
    } else if (name == "kl_div") {
      const bool log_target = n.flag(3, "log_target", false);
      loss = n.map2(x, y, f32, [log_target](Json input, Json target) {
        if (log_target) return fmul(op("exp", {target}), fsub(target, input));
        Json xlogx =
            op("where", {op("eq", {target, flit(0)}), flit(0), fmul(target, op("log", {target}))});
        return fsub(xlogx, fmul(target, input));
      });
    } else {
      loss = n.map2(x, y, f32, [](Json p, Json t) {
        Json log_p = op("max", {op("log", {p}), flit(-100)});
        Json log_q = op("max", {op("log", {fsub(flit(1), p)}), flit(-100)});
        return op("neg", {fadd(fmul(t, log_p), fmul(fsub(flit(1), t), log_q))});
      });
      if (weight) loss = n.map2(loss, *weight, f32, [](Json a, Json b) { return fmul(a, b); });
    }
    n.l.tensor(loss).dtype = reduction == 0 ? n.out_dtype() : f32;
    const int result = n.reduce_loss(loss, reduction, n.out_dtype());
    n.set_output(0, result);
    return true;
  }
  if (name == "nll_loss_forward" || name == "nll_loss2d_forward") {
    const int x = n.tensor(0);
    const int target = n.tensor(1, "target");
    const auto weight = n.optional_tensor(2, "weight");
    const int64_t reduction = reduction_arg(n, 3);
    const GraphArg* ignore_arg = n.node.arg(4, "ignore_index");
    const int64_t ignore = ignore_arg && ignore_arg->as_int() ? *ignore_arg->as_int() : -100;
    const Shape x_shape = n.shape(x);
    const Shape t_shape = n.shape(target);
    const std::size_t class_dim = x_shape.size() == 1 ? 0 : 1;
    const SymSize classes = x_shape[class_dim];
    const auto clamped_class = [classes](const Json& t) {
      return op("max", {op("min", {t, op("sub", {size_expr(classes), ilit(1)})}), ilit(0)});
    };
    // The weight of element c's class (1 without class weights), 0 where the target is ignored:
    // what the mean divides by.
    const int counted = add_pointwise(n.l, t_shape, f32, n.origin, [=](Ctx& ctx, const Coords& c) {
      const Json t = ctx.lowering.element(ctx, target, c);
      const Json w =
          weight ? ctx.lowering.float_element(ctx, *weight, {clamped_class(t)}) : flit(1);
      return op("where", {op("ne", {t, ilit(ignore)}), w, flit(0)});
    });
    // -weight[target[n]] * x[n, target[n], ...], 0 where the target is ignored.
    const int picked = add_pointwise(n.l, t_shape, f32, n.origin, [=](Ctx& ctx, const Coords& c) {
      const Json t = ctx.lowering.element(ctx, target, c);
      Coords inner;
      std::size_t next = 0;
      for (std::size_t d = 0; d < x_shape.size(); ++d) {
        inner.push_back(d == class_dim ? clamped_class(t) : c[next++]);
      }
      Json loss = op("neg", {ctx.lowering.float_element(ctx, x, inner)});
      if (weight) loss = fmul(ctx.lowering.float_element(ctx, *weight, {clamped_class(t)}), loss);
      return op("where", {op("ne", {t, ilit(ignore)}), loss, flit(0)});
    });
    std::vector<int> all;
    for (std::size_t d = 0; d < t_shape.size(); ++d) all.push_back(static_cast<int>(d));
    const int total = n.reduce(counted, all, false, "sum", f32);
    n.set_output(1, total);
    if (reduction == 0) {
      n.l.tensor(picked).dtype = n.out_dtype();
      n.set_output(0, picked);
      return true;
    }
    const int sum = n.reduce(picked, all, false, "sum", f32);
    if (reduction == 2) {
      n.set_output(0, sum);
      return true;
    }
    n.set_output(0, n.map2(sum, total, n.out_dtype(), [](Json s, Json w) {
      return op("div", {s, w});
    }));
    return true;
  }
  return false;
}

}  // namespace

bool lower_reduction(Lowering& lowering, const GraphNode& node) {
  NodeLowering n{{node, fmt::format("{} (op {})", node.op, node.id)}, lowering};
  const std::string_view name = node.base_name();
  if (lower_norm_or_loss(n, name)) return true;
  const bool known = name == "sum" || name == "mean" || name == "prod" || name == "amax" ||
                     name == "amin" || name == "max" || name == "min" || name == "argmax" ||
                     name == "argmin" || name == "any" || name == "all" || name == "var" ||
                     name == "std" || name == "var_mean" || name == "std_mean" || name == "norm" ||
                     name == "linalg_vector_norm" || name == "logsumexp";
  if (!known) return false;
  const int x = n.tensor(0);
  const std::size_t rank = n.shape(x).size();
  const DType out = n.out_dtype();
  if (name == "max" || name == "min") {
    const GraphArg* dim = node.arg(1, "dim");
    if (dim && dim->as_value()) return false;  // max.other: element-wise
    const std::string stage = std::string(name);
    if (!dim) {
      n.set_output(0, n.reduce(x, n.dims(99, "", rank), false, stage, out));
      return true;
    }
    const std::vector<int> dims = n.dims(1, "dim", rank);
    const bool keepdim = n.flag(2, "keepdim", false);
    n.set_output(0, n.reduce(x, dims, keepdim, stage, out));
    n.set_output(1, n.reduce(x, dims, keepdim, "arg" + stage, DType::Int64));
    return true;
  }
  if (name == "argmax" || name == "argmin") {
    const std::vector<int> dims = n.dims(1, "dim", rank);
    n.set_output(0,
                 n.reduce(x, dims, n.flag(2, "keepdim", false), std::string(name), DType::Int64));
    return true;
  }
  if (name == "norm" || name == "linalg_vector_norm") {
    // norm(x, p, dim, keepdim, dtype) / linalg_vector_norm(x, ord, dim, keepdim, dtype)
    const double p = n.number(1, name == "norm" ? "p" : "ord", 2.0);
    const std::vector<int> reduced = n.dims(2, "dim", rank);
    const bool keepdim = n.flag(3, "keepdim", false);
    if (std::isinf(p)) {
      const int a = n.map(x, DType::Float32, [](Json v) { return op("abs", {v}); });
      n.set_output(0, n.reduce(a, reduced, keepdim, p > 0 ? "max" : "min", out));
      return true;
    }
    const int powered = n.map(x, DType::Float32, [p](Json v) {
      if (p == 0) return op("float", {op("ne", {v, flit(0)})});
      if (p == 1) return op("abs", {v});
      if (p == 2) return fmul(v, v);
      return op("pow", {op("abs", {v}), flit(p)});
    });
    const int s = n.reduce(powered, reduced, keepdim, "sum", DType::Float32);
    n.set_output(0, n.map(s, out, [p](Json v) {
      if (p == 0 || p == 1) return v;
      if (p == 2) return op("sqrt", {v});
      return op("pow", {v, flit(1.0 / p)});
    }));
    return true;
  }
  // var(x, unbiased) and std(x, unbiased) reduce every dim; elsewhere argument 1 is the dims.
  const bool all_dims =
      (name == "var" || name == "std" || name == "var_mean" || name == "std_mean") &&
      node.overload() == "";
  const std::vector<int> dims = n.dims(all_dims ? 99 : 1, "dim", rank);
  if (name == "sum" || name == "prod" || name == "amax" || name == "amin" || name == "any" ||
      name == "all") {
    const bool keepdim = n.flag(2, "keepdim", false);
    const std::string stage = name == "amax" ? "max" : name == "amin" ? "min" : std::string(name);
    const bool dimless = name == "prod" && !node.kwarg("dim") &&
                         (node.args.size() < 2 || node.args[1].kind == GraphArg::Kind::DType);
    const std::vector<int> reduced = dimless ? n.dims(99, "", rank) : dims;
    n.set_output(0, n.reduce(x, reduced, dimless ? false : keepdim, stage,
                             stage == "any" || stage == "all" ? DType::Bool : out));
    return true;
  }
  if (name == "mean") {
    n.set_output(0, n.mean(x, dims, n.flag(2, "keepdim", false), out));
    return true;
  }
  if (name == "var" || name == "std" || name == "var_mean" || name == "std_mean") {
    double correction = n.number(99, "correction", 1.0);
    bool keepdim = false;
    if (node.overload() == "dim" || node.overload() == "") {
      const GraphArg* unbiased = node.arg(node.overload() == "dim" ? 2 : 1, "unbiased");
      if (unbiased && unbiased->as_bool()) correction = *unbiased->as_bool() ? 1.0 : 0.0;
      keepdim = node.overload() == "dim" && n.flag(3, "keepdim", false);
    } else {
      keepdim = n.flag(99, "keepdim", false);
    }
    const std::vector<int> reduced = node.overload() == "" ? n.dims(99, "", rank) : dims;
    int mean = -1;
    int v = n.variance(x, reduced, correction, DType::Float32, &mean);
    if (name.starts_with("std")) v = n.map(v, out, [](Json a) { return op("sqrt", {a}); });
    const auto shaped = [&](int keep) {
      if (keepdim) return keep;
      return add_reduction_view(n.l, keep, reduced, out, n.origin);
    };
    n.l.tensor(v).dtype = out;
    n.set_output(0, shaped(v));
    n.set_output(1, shaped(mean));
    return true;
  }
  if (name == "logsumexp") {
    const bool keepdim = n.flag(2, "keepdim", false);
    const int m = n.reduce(x, dims, true, "max", DType::Float32);
    const int safe = n.map(m, DType::Float32, [](Json a) {
      return op("where", {op("isinf", {a}), flit(0), a});
    });
    const int e =
        n.map2(x, safe, DType::Float32, [](Json a, Json b) { return op("exp", {fsub(a, b)}); });
    const int s = n.reduce(e, dims, true, "sum", DType::Float32);
    int result = n.map2(s, safe, out, [](Json a, Json b) { return fadd(op("log", {a}), b); });
    if (!keepdim) result = add_reduction_view(n.l, result, dims, out, n.origin);
    n.set_output(0, result);
    return true;
  }
  return true;
}

}  // namespace kernelarc::lowering
