#include "synth/library_matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace kernelarc {
namespace {

bool library_element(DType dtype) {
  return dtype == DType::BFloat16 || dtype == DType::Float16 || dtype == DType::Float32;
}

/// cuBLASLt multiplies bfloat16 or float16 into the same type or float32, float32 into float32.
bool library_destination(DType operands, DType destination) {
  return destination == operands || destination == DType::Float32;
}

bool is_acc(const PlanExpr& e) {
  return e.op == "acc";
}

std::optional<double> literal(const PlanExpr& e) {
  if (e.op == "f") return e.number;
  return std::nullopt;
}

/// alpha * acc, as the value spells it: acc, acc * f, f * acc, acc / f.
std::optional<double> scaled_product(const PlanExpr& e) {
  if (is_acc(e)) return 1.0;
  if (e.args.size() != 2) return std::nullopt;
  if (e.op == "mul") {
    if (is_acc(e.args[0])) return literal(e.args[1]);
    if (is_acc(e.args[1])) return literal(e.args[0]);
  }
  if (e.op == "div" && is_acc(e.args[0])) {
    const std::optional<double> divisor = literal(e.args[1]);
    if (divisor && *divisor != 0) return 1.0 / *divisor;
  }
  return std::nullopt;
}

struct DirectValue {
  double alpha = 1;
  std::optional<std::string> residual;  ///< a load's name
};

/// The value as alpha * acc (+ a load), once casts to the destination's own dtype (which the
/// store does anyway) are peeled off.
std::optional<DirectValue> direct_value(const PlanExpr& value, DType destination) {
  const PlanExpr* e = &value;
  while (e->op == "cast" && e->dtype == destination && e->args.size() == 1) e = &e->args[0];
  if (const std::optional<double> alpha = scaled_product(*e)) return DirectValue{*alpha, {}};
  if (e->op != "add" || e->args.size() != 2) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const PlanExpr& load = e->args[side];
    const std::optional<double> alpha = scaled_product(e->args[1 - side]);
    if (alpha && load.op == "load") return DirectValue{*alpha, load.text};
  }
  return std::nullopt;
}

/// A name for something new that none of `taken` has.
template <class Taken>
std::string fresh_name(const std::string& base, const Taken& taken) {
  for (int n = 0;; ++n) {
    std::string name = n == 0 ? base : fmt::format("{}_{}", base, n);
    if (!taken(name)) return name;
  }
}

PlanExpr replace_acc(const PlanExpr& e, const std::string& load) {
  if (is_acc(e)) {
    PlanExpr read;
    read.op = "load";
    read.text = load;
    read.type = ValueType::Float;
    return read;
  }
  PlanExpr copy = e;
  for (PlanExpr& arg : copy.args) arg = replace_acc(arg, load);
  return copy;
}

PlanExpr index_dim(int d) {
  PlanExpr e;
  e.op = "idx";
  e.integer = d;
  e.type = ValueType::Int;
  return e;
}

/// A float32 temp holding the product in row-major [batch..., m, n], and its access.
PlanAccess add_product_temp(KernelPlan& plan, const PlanKernel& matmul, std::size_t index) {
  std::vector<std::string> sizes = matmul.batch;
  sizes.push_back(matmul.m);
  sizes.push_back(matmul.n);
  PlanBuffer temp;
  temp.name = fresh_name(fmt::format("ka_product{}", index),
                         [&](const std::string& n) { return plan.find_buffer(n) != nullptr; });
  temp.kind = PlanBufferKind::Temp;
  temp.dtype = DType::Float32;
  PlanAccess access;
  access.buffer = temp.name;
  std::string stride = "1";
  access.strides.resize(sizes.size());
  for (std::size_t d = sizes.size(); d-- > 0;) {
    access.strides[d] = stride;
    stride =
        stride == "1" ? fmt::format("({})", sizes[d]) : fmt::format("{} * ({})", stride, sizes[d]);
  }
  temp.elements = stride;
  for (std::size_t d = 0; d < sizes.size(); ++d) access.coords.push_back(index_dim(int(d)));
  plan.buffers.push_back(temp);
  return access;
}

bool uses_acc(const PlanExpr& e) {
  if (is_acc(e)) return true;
  return std::any_of(e.args.begin(), e.args.end(), uses_acc);
}

/// The pointwise kernel over [batch..., m, n] that computes `stores` of the matmul (its other
/// loads keep their coords: the dims number the same), reading the product from `product` where
/// a store uses it.
PlanKernel epilogue_kernel(const PlanKernel& matmul, const std::vector<PlanStore>& stores,
                           const std::optional<PlanAccess>& product) {
  PlanKernel epilogue;
  epilogue.kind = PlanKernelKind::Pointwise;
  epilogue.domain = matmul.batch;
  epilogue.domain.push_back(matmul.m);
  epilogue.domain.push_back(matmul.n);
  epilogue.loads = matmul.loads;
  const std::string load = fresh_name(
      "ka_product", [&](const std::string& n) { return matmul.find_load(n) != nullptr; });
  if (product) epilogue.loads.emplace_back(load, *product);
  for (const PlanStore& store : stores) {
    PlanStore moved = store;
    moved.value = replace_acc(store.value, load);
    epilogue.stores.push_back(moved);
  }
  return epilogue;
}

/// The stride of an affine access along index dim `dim`, as the SIZE expressions it sums.
std::vector<std::string> dim_strides(const PlanAccess& access, int dim) {
  std::vector<std::string> strides;
  for (std::size_t j = 0; j < access.coords.size(); ++j)
    if (access.coords[j].op == "idx" && access.coords[j].integer == dim)
      strides.push_back(access.strides[j]);
  return strides;
}

/// Whether C walks every dim of the product (batch..., m, n) as D does: cuBLASLt reads C with
/// D's layout, so a bias broadcast over m (no stride along it) is no C (ka_lt_matmul would refuse
/// it at run time, and the plan's own kernel would run instead of the library's). Strides are
/// compared as written, so a C whose equal strides are spelled otherwise takes the temp route.
bool walks_like(const PlanAccess& c, const PlanAccess& d, int dims) {
  for (int dim = 0; dim < dims; ++dim)
    if (dim_strides(c, dim) != dim_strides(d, dim)) return false;
  return true;
}

/// The direct route for `product_store`, the matmul's one store that reads the product, where
/// cuBLASLt can write it: D = alpha A.B (+ C).
std::optional<LibraryMatmul> direct_route(const KernelPlan& plan, const PlanKernel& kernel,
                                          std::size_t index, DType operands,
                                          const PlanStore& product_store) {
  if (!is_affine_access(product_store.access)) return std::nullopt;
  const DType destination = plan.find_buffer(product_store.access.buffer)->dtype;
  const std::optional<DirectValue> value = direct_value(product_store.value, destination);
  if (!value || !library_destination(operands, destination)) return std::nullopt;
  const PlanAccess* residual = value->residual ? kernel.find_load(*value->residual) : nullptr;
  const int dims = static_cast<int>(kernel.batch.size()) + 2;
  if (value->residual && !(residual && is_affine_access(*residual) &&
                           plan.find_buffer(residual->buffer)->dtype == destination &&
                           walks_like(*residual, product_store.access, dims))) {
    return std::nullopt;
  }
  LibraryMatmul route;
  route.kernel = index;
  route.d = product_store.access;
  route.alpha = value->alpha;
  if (residual) route.c = *residual;
  return route;
}

}  // namespace

bool is_affine_access(const PlanAccess& access) {
  return std::all_of(access.coords.begin(), access.coords.end(), [](const PlanExpr& c) {
    return c.op == "idx" || (c.op == "i" && c.integer >= 0);
  });
}

LibraryPlan with_library_matmuls(const KernelPlan& original) {
  LibraryPlan out;
  out.plan = original;
  out.own_kernels = original.kernels.size();
  if (original.float64) return out;
  for (std::size_t i = 0; i < original.kernels.size(); ++i) {
    const PlanKernel& kernel = original.kernels[i];
    if (kernel.kind != PlanKernelKind::Matmul) continue;
    const DType a = original.find_buffer(kernel.a.buffer)->dtype;
    const DType b = original.find_buffer(kernel.b.buffer)->dtype;
    if (a != b || !library_element(a) || !is_affine_access(kernel.a) || !is_affine_access(kernel.b))
      continue;
    std::vector<PlanStore> reading, others;
    for (const PlanStore& store : kernel.stores)
      (uses_acc(store.value) ? reading : others).push_back(store);
    std::optional<LibraryMatmul> direct;
    if (reading.size() == 1) direct = direct_route(original, kernel, i, a, reading.front());
    if (direct) {
      // Stores that do not read the product (an output the plan fused here, such as a residual
      // sum) go to a pointwise kernel of their own, so that the product still goes straight to
      // its destination instead of through a float32 temp and a pass over it.
      if (!others.empty()) {
        direct->epilogue = out.plan.kernels.size();
        out.plan.kernels.push_back(epilogue_kernel(kernel, others, std::nullopt));
      }
      out.matmuls.push_back(*direct);
      continue;
    }
    LibraryMatmul route;
    route.kernel = i;
    route.d = add_product_temp(out.plan, kernel, i);
    route.epilogue = out.plan.kernels.size();
    out.plan.kernels.push_back(epilogue_kernel(kernel, kernel.stores, route.d));
    out.matmuls.push_back(route);
  }
  return out;
}

}  // namespace kernelarc
