// The CUDA generator of family "fused": ka_problem.h for templates/cuda/fused. Each kernel of
// the plan becomes a struct deriving from KaArgs whose member functions read, combine and store
// its elements (the shapes templates/cuda/fused/ka_fused.cuh documents); the drivers there map
// the work onto threads, and ka_plan_run launches every kernel in order on the given stream.
//
// Vector paths: along the innermost dimension of a kernel's walk (pointwise: the last domain
// dimension; reduce: the last reduced one) every access is classified once. A contiguous access
// (its coordinate for that dimension is that index, with stride 1, and no other coordinate
// depends on it) moves as one pack; a broadcast one (no coordinate depends on it) is read once;
// any other is read element by element. The host checks sizes and alignment before taking the
// vector path.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/expr.h"
#include "synth/family.h"
#include "synth/family_elementwise.h"
#include "synth/family_fused.h"
#include "synth/family_support.h"
#include "synth/kernel_plan_code.h"

namespace kernelarc {

namespace {

// Expressions refer to a kernel's loads through stand-in stages with this prefix, so that the
// generator decides where a loaded value comes from (a pack, a register cache, an inline read).
constexpr char kLoadMark = '\x01';

PlanExpr loads_as_values(const PlanExpr& expr) {
  PlanExpr copy = expr;
  if (copy.op == "load") {
    copy.op = "stage";
    copy.text = std::string(1, kLoadMark) + copy.text;
  }
  for (PlanExpr& arg : copy.args) arg = loads_as_values(arg);
  return copy;
}

/// The index dimensions an expression depends on, through the coordinates of the loads it reads.
void collect_dims(const PlanKernel& kernel, const PlanExpr& expr, std::set<int>& dims) {
  if (expr.op == "idx") dims.insert(static_cast<int>(expr.integer));
  if (expr.op == "load")
    for (const PlanExpr& coord : kernel.find_load(expr.text)->coords)
      collect_dims(kernel, coord, dims);
  for (const PlanExpr& arg : expr.args) collect_dims(kernel, arg, dims);
}

bool depends_on(const PlanKernel& kernel, const PlanExpr& expr, int dim) {
  std::set<int> dims;
  collect_dims(kernel, expr, dims);
  return dims.contains(dim);
}

enum class AccessClass { Broadcast, Contiguous, PerElement };

struct Classified {
  AccessClass kind = AccessClass::PerElement;
  int coord = -1;  ///< Contiguous: the coordinate walking the dimension
};

Classified classify(const PlanKernel& kernel, const PlanAccess& access, int dim) {
  Classified result;
  std::vector<int> dependent;
  for (std::size_t j = 0; j < access.coords.size(); ++j)
    if (depends_on(kernel, access.coords[j], dim) && access.strides[j] != "0")
      dependent.push_back(static_cast<int>(j));
  if (dependent.empty()) {
    result.kind = AccessClass::Broadcast;
    return result;
  }
  const int j = dependent.front();
  const PlanExpr& coord = access.coords[j];
  if (dependent.size() == 1 && coord.op == "idx" && coord.integer == dim &&
      constant_expr_value(access.strides[j]) == 1) {
    result.kind = AccessClass::Contiguous;
    result.coord = j;
  }
  return result;
}

std::string value_type(ValueType type) {
  return type == ValueType::Float ? "ka_pf_float" : "long long";
}

/// The conversions of raw elements (read as packs) to the values expressions compute with.
constexpr const char* kValueConversions = R"(
KA_HD ka_pf_float ka_fz_value(float x) { return (ka_pf_float)x; }
KA_HD ka_pf_float ka_fz_value(double x) { return (ka_pf_float)x; }
KA_HD ka_pf_float ka_fz_value(__half x) { return (ka_pf_float)ka_pf_widen(x); }
KA_HD ka_pf_float ka_fz_value(__nv_bfloat16 x) { return (ka_pf_float)ka_pf_widen(x); }
KA_HD long long ka_fz_value(signed char x) { return x; }
KA_HD long long ka_fz_value(unsigned char x) { return x; }
KA_HD long long ka_fz_value(short x) { return x; }
KA_HD long long ka_fz_value(int x) { return x; }
KA_HD long long ka_fz_value(long long x) { return x; }

// Python's // and % in SIZE expressions.
KA_HD long long ka_floordiv(long long a, long long b) {
  const long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
KA_HD long long ka_floormod(long long a, long long b) {
  const long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
)";

class CudaFusedWriter {
 public:
  CudaFusedWriter(const LibraryPlan& library, const Definition& def)
      : plan_(library.plan),
        library_(library),
        def_(def),
        unreadable_(unreadable_axes(library.plan, def)) {
    for (const Axis& axis : def.axes)
      if (!unreadable_.contains(axis.name)) axes_.push_back(axis.name);
  }

  std::string write() {
    std::string out = description();
    out +=
        "#pragma once\n#define KA_TARGET_CUDA 1\n#define KA_HD __host__ __device__ "
        "__forceinline__\n#include <cstdio>\n#include \"kernelarc/abi.h\"\n";
    out += plan_code_prelude(true, plan_.float64);
    out += "#include \"ka_fused.cuh\"\n#define KA_UNROLL_ELEMENTS _Pragma(\"unroll\")\n";
    if (!library_.matmuls.empty()) out += "#include \"ka_lt_matmul.cuh\"\n";
    out += kValueConversions;
    out += args_struct();
    out += bind_function();
    for (std::size_t k = 0; k < plan_.kernels.size(); ++k) out += kernel_struct(k);
    out += run_function();
    return out;
  }

 private:
  // ---- names and writers

  std::string pointer(const PlanBuffer& buffer) const {
    return fmt::format("ka_b{}", &buffer - plan_.buffers.data());
  }
  const PlanBuffer& buffer(const std::string& name) const { return *plan_.find_buffer(name); }
  std::string element_type(const PlanBuffer& b) const { return plan_element_type(b.dtype, true); }

  /// A kernel with a stand-in stage per load (see kLoadMark).
  static PlanKernel with_load_stages(const PlanKernel& kernel) {
    PlanKernel copy = kernel;
    for (const auto& [name, access] : kernel.loads) {
      PlanStage stage;
      stage.name = std::string(1, kLoadMark) + name;
      copy.stages.push_back(stage);
    }
    return copy;
  }

  /// A code writer where index dimension `alt_dim` is spelled ka_j<d> (an element of a vector)
  /// and loads are the codes of `load_codes`.
  PlanCodeWriter writer(const PlanKernel& kernel, int alt_dim,
                        const std::map<std::string, std::string>* load_codes) const {
    PlanCodeNames names;
    names.index = [alt_dim](int d) { return (d == alt_dim ? "ka_j" : "ka_i") + std::to_string(d); };
    names.pointer = [this](const PlanBuffer& b) { return pointer(b); };
    names.stage = [&kernel, load_codes](const PlanStage& stage) -> std::string {
      if (!stage.name.empty() && stage.name[0] == kLoadMark)
        return load_codes->at(stage.name.substr(1));
      const std::size_t j = &stage - kernel.stages.data();
      const bool arg = stage.op == ReduceOp::ArgMax || stage.op == ReduceOp::ArgMin;
      return (arg ? "acc.i" : "acc.s") + std::to_string(j);
    };
    return PlanCodeWriter(plan_, kernel, axes_, names, true);
  }

  // ---- header parts

  std::string description() const {
    std::string text = fmt::format(
        "// ka_problem.h for \"{}\" (family fused, CUDA), generated by kernelarc's fused "
        "generator.\n// The plan's kernels, launched in order:\n",
        def_.name);
    for (std::size_t k = 0; k < plan_.kernels.size(); ++k) {
      const PlanKernel& kernel = plan_.kernels[k];
      text += fmt::format("//   {}: {} over [{}]", k, kernel_kind_name(kernel.kind),
                          fmt::join(kernel.index_sizes(), ", "));
      if (k >= library_.own_kernels) text += " (the epilogue of a matmul cuBLASLt ran)";
      if (kernel.kind == PlanKernelKind::Reduce)
        text += fmt::format(", reducing the last {}", kernel.reduce.size());
      text += "\n";
    }
    return text;
  }

  std::string args_struct() const {
    std::string text =
        "\n// Every buffer of the plan (temps point into the workspace) and axis.\nstruct KaArgs "
        "{\n";
    for (const PlanBuffer& b : plan_.buffers) {
      const bool read_only = b.kind == PlanBufferKind::Input;
      text += fmt::format("  {}{}* {};  // {}\n", read_only ? "const " : "", element_type(b),
                          pointer(b), b.name);
    }
    for (const Axis& axis : def_.axes) {
      if (unreadable_.contains(axis.name)) continue;
      if (axis.kind == AxisKind::Const)
        text +=
            fmt::format("  static constexpr long long ka_axis_{} = {}LL;\n", axis.name, axis.value);
      else
        text += fmt::format("  long long ka_axis_{};\n", axis.name);
    }
    return text + "};\n";
  }

  /// dtype, rank and layout of one tensor, and the axes read from shapes it is the first to name.
  std::string tensor_checks(const TensorSpec& t, const std::string& slot,
                            std::set<std::string>& known) const {
    std::string text = bind_tensor_checks(t, slot);
    if (t.is_scalar()) return text;
    for (std::size_t d = 0; d < t.shape->size(); ++d) {
      const std::string& axis = (*t.shape)[d];
      if (read_from_shape(axis) && known.insert(axis).second)
        text += fmt::format("  args->ka_axis_{} = {}.shape[{}];\n", axis, slot, d);
    }
    return text;
  }

  /// Every dimension of one tensor against its axis (after the axis values are known).
  std::string shape_checks(const TensorSpec& t, const std::string& slot) const {
    if (t.is_scalar()) return "";
    std::string text;
    for (std::size_t d = 0; d < t.shape->size(); ++d) {
      const std::string& axis = (*t.shape)[d];
      const bool named = std::any_of(def_.axes.begin(), def_.axes.end(),
                                     [&](const Axis& a) { return a.name == axis; });
      text += fmt::format("  if ({}.shape[{}] != {}) return \"{}: dimension {} is not {}\";\n",
                          slot, d, named ? "ka_axis_" + axis : axis, t.name, d, axis);
    }
    return text;
  }

  /// Var axes, and expr axes whose expression names an axis no shape gives
  /// (batch_seq_len = batch_size * seq_len where only batch_seq_len sizes a tensor): read from the
  /// first shape naming them. Every other expr axis is computed from its expression.
  bool read_from_shape(const std::string& name) const {
    return std::any_of(def_.axes.begin(), def_.axes.end(), [&](const Axis& a) {
      if (a.name != name || unreadable_.contains(name)) return false;
      if (a.kind == AxisKind::Var) return true;
      if (a.kind == AxisKind::Const) return false;
      const std::set<std::string> needs = expr_variables(a.expression);
      return std::any_of(needs.begin(), needs.end(),
                         [&](const std::string& n) { return unreadable_.contains(n); });
    });
  }

  std::string bind_function() const {
    std::string body = fmt::format(
        "  if (n_inputs != {0} || n_outputs != {1}) return \"expected {0} inputs and {1} "
        "outputs\";\n",
        def_.inputs.size(), def_.outputs.size());
    std::set<std::string> known;
    for (std::size_t i = 0; i < def_.inputs.size(); ++i)
      body += tensor_checks(def_.inputs[i], fmt::format("inputs[{}]", i), known);
    for (std::size_t i = 0; i < def_.outputs.size(); ++i)
      body += tensor_checks(def_.outputs[i], fmt::format("outputs[{}]", i), known);
    body += axis_values("args->");
    for (const Axis& axis : def_.axes)
      if (axis.kind == AxisKind::Expr && !unreadable_.contains(axis.name) &&
          !read_from_shape(axis.name))
        body += fmt::format("  args->ka_axis_{0} = ka_axis_{0};\n", axis.name);
    for (std::size_t i = 0; i < def_.inputs.size(); ++i)
      body += shape_checks(def_.inputs[i], fmt::format("inputs[{}]", i));
    for (std::size_t i = 0; i < def_.outputs.size(); ++i)
      body += shape_checks(def_.outputs[i], fmt::format("outputs[{}]", i));
    for (const PlanBuffer& b : plan_.buffers) {
      if (b.kind == PlanBufferKind::Temp) continue;
      const bool input = b.kind == PlanBufferKind::Input;
      body += fmt::format("  args->{} = static_cast<{}{}*>({}[{}].data);\n", pointer(b),
                          input ? "const " : "", element_type(b), input ? "inputs" : "outputs",
                          b.index);
    }
    body += "  return nullptr;\n";
    return ka_bind_definition(
        body, "fills *args (temps are set by ka_plan_run); nullptr or what is wrong");
  }

  /// Local ka_axis_<name> for every axis the code knows: constant, read from `prefix` (those read
  /// from shapes), or computed (the other expr axes, in declaration order).
  std::string axis_values(const std::string& prefix) const {
    std::string text;
    for (const Axis& axis : def_.axes) {
      if (unreadable_.contains(axis.name)) continue;
      if (axis.kind == AxisKind::Const)
        text += fmt::format("  [[maybe_unused]] const long long ka_axis_{0} = {1}LL;\n", axis.name,
                            axis.value);
      else if (read_from_shape(axis.name))
        text += fmt::format("  [[maybe_unused]] const long long ka_axis_{0} = {1}ka_axis_{0};\n",
                            axis.name, prefix);
      else
        text += fmt::format("  [[maybe_unused]] const long long ka_axis_{} = {};\n", axis.name,
                            axis_expression_code(axis.expression, axes_));
    }
    return text;
  }

  /// Index variables ka_i<first>.. of dims [first, first + sizes.size()) from flat `var`
  /// (row-major), in index type `index_type`.
  std::string decompose(const PlanCodeWriter& w, const std::vector<std::string>& sizes, int first,
                        const std::string& var, const std::string& index_type) const {
    if (sizes.empty()) return "";
    std::string text =
        fmt::format("    {} ka_rest_{} = ({}){};\n", index_type, first, index_type, var);
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      const int dim = first + d;
      if (d == 0) {
        text += fmt::format(
            "    [[maybe_unused]] const long long ka_i{} = (long long)ka_rest_{};\n", dim, first);
        break;
      }
      text += fmt::format(
          "    [[maybe_unused]] const long long ka_i{0} = (long long)(ka_rest_{1} % ({2}){3});\n"
          "    ka_rest_{1} /= ({2}){3};\n",
          dim, first, index_type, w.size(sizes[d]));
    }
    return text;
  }

  /// The host's alignment condition for an access read or written as packs of n elements.
  std::string pack_condition(const PlanCodeWriter& w, const PlanAccess& access, int coord) const {
    std::string text = fmt::format("ka_pack_aligned({}, 0, n) && {} % n == 0",
                                   pointer(buffer(access.buffer)), w.size(access.offset));
    for (std::size_t j = 0; j < access.strides.size(); ++j) {
      if (static_cast<int>(j) == coord) continue;
      text += fmt::format(" && {} % n == 0", w.size(access.strides[j]));
    }
    return text;
  }

  // ---- kernels

  std::string kernel_struct(std::size_t index) const {
    const PlanKernel& kernel = plan_.kernels[index];
    switch (kernel.kind) {
      case PlanKernelKind::Pointwise:
        return pointwise_struct(index, kernel);
      case PlanKernelKind::Reduce:
        return reduce_struct(index, kernel);
      case PlanKernelKind::Scan:
        return scan_struct(index, kernel);
      case PlanKernelKind::Matmul:
        return matmul_struct(index, kernel);
      case PlanKernelKind::Scatter:
        return scatter_struct(index, kernel);
      case PlanKernelKind::Topk:
        return topk_struct(index, kernel);
    }
    return "";
  }

  // ---- topk

  std::string topk_struct(std::size_t index, const PlanKernel& kernel) const {
    const PlanCodeWriter w = writer(kernel, -1, nullptr);
    const int kept = static_cast<int>(kernel.domain.size());
    std::string stores;
    for (const PlanStore& store : kernel.stores) stores += "    " + w.store(store) + "\n";
    const std::string row = device_axes() + decompose(w, kernel.domain, 0, "row", "long long");
    return fmt::format(R"(
// Kernel {0}: topk of rows of [{1}] over [{2}], the {3} first.
struct KaKernel{0} : KaArgs {{
  long long rows, n, k;
  typedef {4} V;
  static constexpr bool kLargest = {5};

  KA_DEV V value(long long row, long long r) const {{
{6}    [[maybe_unused]] const long long ka_i{7} = r;
    return {8};
  }}

  KA_DEV void store(long long row, long long j, V ka_topk_value, long long ka_topk_index) const {{
{6}    [[maybe_unused]] const long long ka_i{7} = j;
{9}  }}
}};
)",
                       index, kernel.extent, fmt::join(kernel.domain, ", "),
                       kernel.largest ? "largest" : "smallest", value_type(kernel.topk_type),
                       kernel.largest ? "true" : "false", row, kept,
                       kernel.topk_type == ValueType::Float ? w.float_code(kernel.topk_value)
                                                            : w.int_code(kernel.topk_value),
                       stores);
  }

  // ---- scatter

  std::string scatter_struct(std::size_t index, const PlanKernel& kernel) const {
    const PlanCodeWriter w = writer(kernel, -1, nullptr);
    std::string stores;
    for (const PlanStore& store : kernel.stores) {
      const DType dtype = buffer(store.access.buffer).dtype;
      static const std::set<DType> atomic = {DType::Float32,  DType::Float64, DType::Float16,
                                             DType::BFloat16, DType::Int32,   DType::Int64};
      if (kernel.accumulate && !atomic.contains(dtype))
        throw TemplateMismatch(fmt::format(
            "{}: kernelarc.op_params.kernels[{}]: the device has no atomic addition of {}",
            def_.name, index, dtype_name(dtype)));
      // No error comes back from the device without waiting for it: a stray index writes
      // nothing (torch's own kernel stops the device with an assertion instead).
      stores += "    " +
                w.scatter_store(store, kernel.accumulate,
                                plan_buffer_elements(buffer(store.access.buffer), def_), "") +
                "\n";
    }
    return fmt::format(R"(
// Kernel {0}: scatter over [{1}]{2}.
struct KaKernel{0} : KaArgs {{
  long long total;  // points of the domain

  KA_DEV void apply(long long flat) const {{
{3}{4}{5}  }}
}};
)",
                       index, fmt::join(kernel.domain, ", "),
                       kernel.accumulate ? ", accumulating in arrival order" : "", device_axes(),
                       decompose(w, kernel.domain, 0, "flat", "long long"), stores);
  }

  std::string device_axes() const { return axis_values("this->"); }

  /// Loads of a vector of N elements along dim `dim` into codes for expressions. `elem` is how
  /// the code refers to one element's loaded value (pack / scalar / per element).
  struct VectorLoads {
    std::string before;   ///< packs and broadcast reads, before the element loop
    std::string in_loop;  ///< per-element reads, inside it
    std::map<std::string, std::string> codes;
    std::string vector_ok;  ///< host condition (without the size check)
  };

  VectorLoads vector_loads(const PlanKernel& kernel, const PlanCodeWriter& outer,
                           const PlanCodeWriter& inner, int dim) const {
    VectorLoads result;
    std::vector<std::string> conditions;
    for (std::size_t l = 0; l < kernel.loads.size(); ++l) {
      const auto& [name, access] = kernel.loads[l];
      const Classified c = classify(kernel, access, dim);
      const PlanBuffer& b = buffer(access.buffer);
      const TypedCode loaded = inner.load(access);
      const std::string var = fmt::format("ka_l{}", l);
      switch (c.kind) {
        case AccessClass::Contiguous:
          result.before += fmt::format("    const auto {}_pack = ka_load_pack<N>({} + {});\n", var,
                                       pointer(b), outer.address(access));
          result.codes[name] = fmt::format("ka_fz_value({}_pack.v[ka_e])", var);
          conditions.push_back(pack_condition(outer, access, c.coord));
          break;
        case AccessClass::Broadcast:
          result.before += fmt::format("    const {} {} = {};\n", value_type(loaded.type), var,
                                       outer.load(access).code);
          result.codes[name] = var;
          break;
        case AccessClass::PerElement:
          result.in_loop +=
              fmt::format("      const {} {} = {};\n", value_type(loaded.type), var, loaded.code);
          result.codes[name] = var;
          break;
      }
    }
    result.vector_ok =
        conditions.empty() ? "true" : fmt::format("{}", fmt::join(conditions, " && "));
    return result;
  }

  /// Stores of a vector of N elements along `dim`; false in `ok` when one cannot be vectorised.
  struct VectorStores {
    std::string before, in_loop, after, vector_ok = "true";
    bool possible = true;
  };

  VectorStores vector_stores(const PlanKernel& kernel, const std::vector<const PlanStore*>& stores,
                             const PlanCodeWriter& outer, const PlanCodeWriter& inner,
                             int dim) const {
    VectorStores result;
    std::vector<std::string> conditions;
    for (std::size_t s = 0; s < stores.size(); ++s) {
      const PlanStore& store = *stores[s];
      const Classified c = classify(kernel, store.access, dim);
      const PlanBuffer& b = buffer(store.access.buffer);
      PlanStore rewritten = store;
      rewritten.value = loads_as_values(store.value);
      const TypedCode value = inner.expr(rewritten.value);
      if (c.kind == AccessClass::Contiguous) {
        result.before += fmt::format("    ka_pack<{}, N> ka_o{};\n", element_type(b), s);
        result.in_loop += fmt::format("      ka_o{}.v[ka_e] = {};\n", s,
                                      inner.to_element(value.code, value.type, b.dtype));
        result.after += fmt::format("    ka_store_pack<N>({} + {}, ka_o{});\n", pointer(b),
                                    outer.address(store.access), s);
        conditions.push_back(pack_condition(outer, store.access, c.coord));
      } else {
        if (c.kind == AccessClass::Broadcast) result.possible = false;
        result.in_loop += "      " + inner.store(rewritten) + "\n";
      }
    }
    if (!conditions.empty()) result.vector_ok = fmt::format("{}", fmt::join(conditions, " && "));
    return result;
  }

  std::string pointwise_struct(std::size_t index, const PlanKernel& plain) const {
    const PlanKernel kernel = with_load_stages(plain);
    const int rank = static_cast<int>(kernel.domain.size());
    const int dim = rank - 1;
    VectorLoads loads;
    const PlanCodeWriter outer = writer(kernel, -1, &loads.codes);
    const PlanCodeWriter inner = writer(kernel, dim, &loads.codes);
    loads = vector_loads(kernel, outer, inner, dim);
    std::vector<const PlanStore*> stores;
    for (const PlanStore& s : kernel.stores) stores.push_back(&s);
    const VectorStores out = vector_stores(kernel, stores, outer, inner, dim);
    const std::string inner_index =
        dim >= 0
            ? fmt::format("    [[maybe_unused]] const long long ka_j{0} = ka_i{0} + ka_e;\n", dim)
            : "";
    const bool vector = rank > 0 && out.possible;
    std::string text =
        fmt::format(R"(
// Kernel {0}: pointwise over [{1}].
struct KaKernel{0} : KaArgs {{
  long long total, inner;  // elements of the domain, size of its last dimension

  // Elements flat .. flat + N - 1, all in one row of the last dimension.
  template <int N, class I>
  KA_DEV void apply(I flat) const {{
{2}{3}{4}{5}    KA_UNROLL_ELEMENTS
    for (int ka_e = 0; ka_e < N; ++ka_e) {{
{6}{7}{8}    }}
{9}  }}

  bool vector_ok(int n) const {{
{10}    return {11};
  }}
}};
)",
                    index, fmt::join(kernel.domain, ", "), device_axes(),
                    decompose(outer, kernel.domain, 0, "flat", "I"), loads.before, out.before,
                    inner_index, loads.in_loop, out.in_loop, out.after, axis_values("this->"),
                    vector ? loads.vector_ok + " && " + out.vector_ok : "false");
    return text;
  }

  // ---- reduce

  static int stage_pass(const PlanKernel& kernel, std::size_t j, std::vector<int>& passes) {
    if (passes[j] >= 0) return passes[j];
    int pass = 0;
    std::function<void(const PlanExpr&)> visit = [&](const PlanExpr& e) {
      if (e.op == "stage") {
        const PlanStage* used = kernel.find_stage(e.text);
        pass = std::max(pass, stage_pass(kernel, used - kernel.stages.data(), passes) + 1);
      }
      for (const PlanExpr& arg : e.args) visit(arg);
    };
    visit(kernel.stages[j].value);
    return passes[j] = pass;
  }

  static std::string identity(ReduceOp op, const std::string& type) {
    const bool is_float = type == "ka_pf_float";
    switch (op) {
      case ReduceOp::Sum:
        return "0";
      case ReduceOp::Prod:
        return "1";
      case ReduceOp::Any:
        return "0";
      case ReduceOp::All:
        return "1";
      case ReduceOp::Max:
      case ReduceOp::ArgMax:
        return is_float ? "-ka_pf_inf()" : "(-9223372036854775807LL - 1)";
      case ReduceOp::Min:
      case ReduceOp::ArgMin:
        return is_float ? "ka_pf_inf()" : "9223372036854775807LL";
    }
    return "0";
  }

  /// `into` = op(into, value) for stage j (the index field too for argmax/argmin).
  static std::string accumulate(ReduceOp op, std::size_t j, const std::string& into,
                                const std::string& value, const std::string& index) {
    switch (op) {
      case ReduceOp::Sum:
        return fmt::format("{0}.s{1} = {0}.s{1} + {2};", into, j, value);
      case ReduceOp::Prod:
        return fmt::format("{0}.s{1} = {0}.s{1} * {2};", into, j, value);
      case ReduceOp::Max:
        return fmt::format("{0}.s{1} = ka_red_max({0}.s{1}, {2});", into, j, value);
      case ReduceOp::Min:
        return fmt::format("{0}.s{1} = ka_red_min({0}.s{1}, {2});", into, j, value);
      case ReduceOp::Any:
        return fmt::format("{0}.s{1} = ({0}.s{1} != 0 || ({2}) != 0) ? 1 : 0;", into, j, value);
      case ReduceOp::All:
        return fmt::format("{0}.s{1} = ({0}.s{1} != 0 && ({2}) != 0) ? 1 : 0;", into, j, value);
      case ReduceOp::ArgMax:
        return fmt::format("ka_red_arg<true>({0}.s{1}, {0}.i{1}, {2}, {3});", into, j, value,
                           index);
      case ReduceOp::ArgMin:
        return fmt::format("ka_red_arg<false>({0}.s{1}, {0}.i{1}, {2}, {3});", into, j, value,
                           index);
    }
    return "";
  }

  std::string reduce_struct(std::size_t index, const PlanKernel& plain) const {
    const PlanKernel kernel = with_load_stages(plain);
    const std::size_t n_stages = plain.stages.size();
    const int kept_rank = static_cast<int>(kernel.domain.size());
    const int red_rank = static_cast<int>(kernel.reduce.size());
    const int dim = red_rank > 0 ? kept_rank + red_rank - 1 : -1;

    // The element's loads, as fields of Elem.
    std::map<std::string, std::string> elem_codes, elem_vector_codes, inline_codes;
    std::string elem_fields;
    for (std::size_t l = 0; l < kernel.loads.size(); ++l) {
      const auto& [name, access] = kernel.loads[l];
      const bool is_float = buffer(access.buffer).dtype == DType::Float32 ||
                            buffer(access.buffer).dtype == DType::Float64 ||
                            buffer(access.buffer).dtype == DType::Float16 ||
                            buffer(access.buffer).dtype == DType::BFloat16;
      elem_fields +=
          fmt::format("    {} l{};  // {}\n", is_float ? "ka_pf_float" : "long long", l, name);
      elem_codes[name] = fmt::format("e.l{}", l);
      elem_vector_codes[name] = fmt::format("e[ka_e].l{}", l);
    }
    const PlanCodeWriter plain_writer = writer(kernel, -1, &inline_codes);
    for (const auto& [name, access] : kernel.loads)
      inline_codes[name] = plain_writer.load(access).code;

    // Passes and the accumulator.
    std::vector<int> passes(n_stages, -1);
    int n_passes = 1;
    for (std::size_t j = 0; j < n_stages; ++j)
      n_passes = std::max(n_passes, stage_pass(plain, j, passes) + 1);
    std::string acc_fields, init, shuffle;
    std::vector<std::string> add(n_passes), combine(n_passes);
    const PlanCodeWriter elem_writer = writer(kernel, -1, &elem_codes);
    for (std::size_t j = 0; j < n_stages; ++j) {
      const PlanStage& stage = plain.stages[j];
      const bool arg = stage.op == ReduceOp::ArgMax || stage.op == ReduceOp::ArgMin;
      const bool logical = stage.op == ReduceOp::Any || stage.op == ReduceOp::All;
      const TypedCode value = elem_writer.expr(loads_as_values(stage.value));
      const std::string type = logical ? "long long" : value_type(arg ? value.type : stage.type);
      acc_fields +=
          fmt::format("    {} s{};  // {} {}\n", type, j, reduce_op_name(stage.op), stage.name);
      init += fmt::format("    acc.s{} = {};\n", j, identity(stage.op, type));
      shuffle += fmt::format("    r.s{0} = ka_shfl_xor(a.s{0}, mask, width);\n", j);
      if (arg) {
        acc_fields += fmt::format("    long long i{};\n", j);
        init += fmt::format("    acc.i{} = 9223372036854775807LL;\n", j);
        shuffle += fmt::format("    r.i{0} = ka_shfl_xor(a.i{0}, mask, width);\n", j);
      }
      const std::string as_type = type == "ka_pf_float" && value.type == ValueType::Int
                                      ? "(ka_pf_float)(" + value.code + ")"
                                      : "(" + value.code + ")";
      add[passes[j]] += "      " + accumulate(stage.op, j, "acc", as_type, "r") + "\n";
      combine[passes[j]] += "      " +
                            accumulate(stage.op, j, "into", fmt::format("other.s{}", j),
                                       fmt::format("other.i{}", j)) +
                            "\n";
    }
    if (n_stages == 0) acc_fields = "    int unused;\n";
    std::string add_code, combine_code;
    for (int p = 0; p < n_passes; ++p) {
      add_code += fmt::format("    if constexpr (P == {}) {{\n{}    }}\n", p, add[p]);
      combine_code += fmt::format("    if constexpr (P == {}) {{\n{}    }}\n", p, combine[p]);
    }

    // Stores.
    std::vector<const PlanStore*> full;
    std::string keep_code;
    for (const PlanStore& store : kernel.stores) {
      if (!store.over_keep) {
        full.push_back(&store);
        continue;
      }
      PlanStore rewritten = store;
      rewritten.value = loads_as_values(store.value);
      keep_code += "    " + plain_writer.store(rewritten) + "\n";
    }

    // fetch<N> and store_full<N>: vectors along the last reduced dimension.
    std::map<std::string, std::string> fetch_codes;
    const PlanCodeWriter outer = writer(kernel, -1, &fetch_codes);
    const PlanCodeWriter inner = writer(kernel, dim, &fetch_codes);
    const VectorLoads loads = vector_loads(kernel, outer, inner, dim);
    std::string fetch_assign;
    for (std::size_t l = 0; l < kernel.loads.size(); ++l)
      fetch_assign +=
          fmt::format("      e[ka_e].l{} = {};\n", l, loads.codes.at(kernel.loads[l].first));
    const PlanCodeWriter store_outer = writer(kernel, -1, &elem_vector_codes);
    const PlanCodeWriter store_inner = writer(kernel, dim, &elem_vector_codes);
    const VectorStores out = vector_stores(kernel, full, store_outer, store_inner, dim);
    const std::string inner_index =
        dim >= 0
            ? fmt::format("      [[maybe_unused]] const long long ka_j{0} = ka_i{0} + ka_e;\n", dim)
            : "";

    // Layout: 1 when some load walks the last reduced dimension contiguously (or none walks
    // anything contiguously), 2 when only the last kept dimension is.
    bool reduced_contiguous = false, kept_contiguous = false;
    for (const auto& [name, access] : kernel.loads) {
      if (dim >= 0 && classify(kernel, access, dim).kind == AccessClass::Contiguous)
        reduced_contiguous = true;
      if (kept_rank > 0 && classify(kernel, access, kept_rank - 1).kind == AccessClass::Contiguous)
        kept_contiguous = true;
    }
    const int layout = !reduced_contiguous && kept_contiguous ? 2 : 1;
    const bool vector = dim >= 0 && out.possible;

    std::vector<std::string> reduced_sizes = kernel.reduce;
    return fmt::format(R"(
// Kernel {0}: reduce, kept [{1}], reduced [{2}], {3} pass(es).
struct KaKernel{0} : KaArgs {{
  long long kept, reduced, red_inner;
  static constexpr int kPasses = {3};
  static constexpr bool kHasFull = {4};
  struct Acc {{
{5}  }};
  struct Elem {{
{6}  }};

  KA_DEV void init(Acc& acc) const {{
{7}  }}

  template <int N>
  KA_DEV void fetch(long long kept_point, long long r, Elem (&e)[N]) const {{
{8}{9}{10}{11}    KA_UNROLL_ELEMENTS
    for (int ka_e = 0; ka_e < N; ++ka_e) {{
{12}{13}{14}    }}
  }}

  template <int P>
  KA_DEV void add(Acc& acc, const Elem& e, long long kept_point, long long r) const {{
{8}{9}{10}{15}  }}

  template <int P>
  KA_DEV void combine(Acc& into, const Acc& other) const {{
{16}  }}

  static KA_DEV Acc shfl_xor(const Acc& a, int mask, int width) {{
    Acc r = a;
{17}    return r;
  }}

  KA_DEV void store_keep(const Acc& acc, long long kept_point) const {{
{8}{9}{18}  }}

  template <int N>
  KA_DEV void store_full(const Acc& acc, const Elem (&e)[N], long long kept_point, long long r) const {{
{8}{9}{10}{19}    KA_UNROLL_ELEMENTS
    for (int ka_e = 0; ka_e < N; ++ka_e) {{
{12}{20}    }}
{21}  }}

  int layout() const {{ return {22}; }}

  bool vector_ok(int n) const {{
{23}    return {24};
  }}
}};
)",
                       index, fmt::join(kernel.domain, ", "), fmt::join(reduced_sizes, ", "),
                       n_passes, full.empty() ? "false" : "true", acc_fields, elem_fields, init,
                       device_axes(), decompose(outer, kernel.domain, 0, "kept_point", "long long"),
                       decompose(outer, kernel.reduce, kept_rank, "r", "long long"), loads.before,
                       inner_index, loads.in_loop, fetch_assign, add_code, combine_code, shuffle,
                       keep_code, out.before, out.in_loop, out.after, layout, axis_values("this->"),
                       vector ? loads.vector_ok + " && " + out.vector_ok : "false");
  }

  // ---- scan

  std::string scan_struct(std::size_t index, const PlanKernel& kernel) const {
    const int rank = static_cast<int>(kernel.domain.size());
    std::vector<std::string> line_sizes;
    std::vector<int> line_dims;
    for (int d = 0; d < rank; ++d)
      if (d != kernel.axis) {
        line_sizes.push_back(kernel.domain[d]);
        line_dims.push_back(d);
      }
    const PlanCodeWriter w = writer(kernel, -1, nullptr);
    // The line index over the other dimensions, row-major.
    std::string line_code;
    if (!line_dims.empty()) {
      line_code += "    long long ka_rest = line;\n";
      for (int i = static_cast<int>(line_dims.size()) - 1; i >= 0; --i) {
        if (i == 0) {
          line_code +=
              fmt::format("    [[maybe_unused]] const long long ka_i{} = ka_rest;\n", line_dims[i]);
          break;
        }
        line_code += fmt::format(
            "    [[maybe_unused]] const long long ka_i{0} = ka_rest % {1};\n    ka_rest /= {1};\n",
            line_dims[i], w.size(line_sizes[i]));
      }
    }
    line_code += fmt::format("    [[maybe_unused]] const long long ka_i{} = j;\n", kernel.axis);
    std::string stores;
    for (const PlanStore& store : kernel.stores) stores += "    " + w.store(store) + "\n";
    bool lines_contiguous = false;
    if (kernel.axis != rank - 1)
      for (const auto& [name, access] : kernel.loads)
        if (classify(kernel, access, rank - 1).kind == AccessClass::Contiguous)
          lines_contiguous = true;
    static const std::map<ScanOp, std::string> ops = {{ScanOp::Sum, "ka_scan_sum"},
                                                      {ScanOp::Prod, "ka_scan_prod"},
                                                      {ScanOp::Max, "ka_scan_max"},
                                                      {ScanOp::Min, "ka_scan_min"},
                                                      {ScanOp::LogSumExp, "ka_scan_logsumexp"}};
    return fmt::format(R"(
// Kernel {0}: {1} scan over dimension {2} of [{3}]{4}{5}.
struct KaKernel{0} : KaArgs {{
  long long lines, length;
  typedef {6} V;
  typedef {7}<V> Op;
  static constexpr bool kReverse = {8}, kExclusive = {9};

  KA_DEV V value(long long line, long long j) const {{
{10}{11}    return {12};
  }}

  KA_DEV void store(long long line, long long j, V ka_scan) const {{
{10}{11}{13}  }}

  int layout() const {{ return {14}; }}
}};
)",
                       index, scan_op_name(kernel.scan_op), kernel.axis,
                       fmt::join(kernel.domain, ", "), kernel.reverse ? ", reverse" : "",
                       kernel.exclusive ? ", exclusive" : "", value_type(kernel.scan_type),
                       ops.at(kernel.scan_op), kernel.reverse ? "true" : "false",
                       kernel.exclusive ? "true" : "false", device_axes(), line_code,
                       kernel.scan_type == ValueType::Float ? w.float_code(kernel.scan_value)
                                                            : w.int_code(kernel.scan_value),
                       stores, lines_contiguous ? 2 : 1);
  }

  // ---- matmul

  std::string matmul_struct(std::size_t index, const PlanKernel& kernel) const {
    const int b_rank = static_cast<int>(kernel.batch.size());
    const int m_dim = b_rank, n_dim = b_rank + 1, k_dim = b_rank + 2;
    const PlanCodeWriter w = writer(kernel, -1, nullptr);
    const std::string batch_code = decompose(w, kernel.batch, 0, "batch", "long long");
    std::string stores;
    for (const PlanStore& store : kernel.stores) stores += "    " + w.store(store) + "\n";
    const PlanBuffer& a = buffer(kernel.a.buffer);
    const PlanBuffer& b = buffer(kernel.b.buffer);
    const Classified a_k = classify(kernel, kernel.a, k_dim);
    const Classified b_k = classify(kernel, kernel.b, k_dim);
    const bool half_types =
        (a.dtype == DType::BFloat16 || a.dtype == DType::Float16) && a.dtype == b.dtype;
    const bool mma = half_types && !plan_.float64 && a_k.kind == AccessClass::Contiguous &&
                     b_k.kind == AccessClass::Contiguous;
    std::string mma_code;
    if (mma) {
      mma_code = fmt::format(R"(
  typedef {0} T;
  KA_DEV const T* a_row(long long batch, long long m) const {{
{1}{2}    [[maybe_unused]] const long long ka_i{3} = m, ka_i{5} = 0;
    return {6} + {7};
  }}
  KA_DEV const T* b_col(long long batch, long long n) const {{
{1}{2}    [[maybe_unused]] const long long ka_i{4} = n, ka_i{5} = 0;
    return {8} + {9};
  }}
  bool mma_ok() const {{
{10}    const int n = 8;
    return k % 8 == 0 && {11} && {12};
  }}
)",
                             element_type(a), device_axes(), batch_code, m_dim, n_dim, k_dim,
                             pointer(a), w.address(kernel.a), pointer(b), w.address(kernel.b),
                             axis_values("this->"), pack_condition(w, kernel.a, a_k.coord),
                             pack_condition(w, kernel.b, b_k.coord));
    } else {
      mma_code = "  typedef unsigned short T;\n";
    }
    return fmt::format(R"(
// Kernel {0}: matmul, batch [{1}], m = {2}, n = {3}, k = {4}{5}.
struct KaKernel{0} : KaArgs {{
  long long batches, m, n, k;
  bool b_k_fastest;
  typedef ka_pf_float F;
  static constexpr bool kMma = {6};

  KA_DEV F a(long long batch, long long m, long long k) const {{
{7}{8}    [[maybe_unused]] const long long ka_i{9} = m, ka_i{11} = k;
    return {12};
  }}

  KA_DEV F b(long long batch, long long k, long long n) const {{
{7}{8}    [[maybe_unused]] const long long ka_i{10} = n, ka_i{11} = k;
    return {13};
  }}

  KA_DEV void store(long long batch, long long m, long long n, F ka_acc) const {{
{7}{8}    [[maybe_unused]] const long long ka_i{9} = m, ka_i{10} = n;
{14}  }}
{15}}};
)",
                       index, fmt::join(kernel.batch, ", "), kernel.m, kernel.n, kernel.k,
                       mma ? " (tensor cores when aligned)" : "", mma ? "true" : "false",
                       device_axes(), batch_code, m_dim, n_dim, k_dim, w.load(kernel.a).code,
                       w.load(kernel.b).code, stores, mma_code);
  }

  // ---- host

  std::string product(const PlanCodeWriter& w, const std::vector<std::string>& sizes) const {
    std::string code = "1LL";
    for (const std::string& s : sizes) code += " * " + w.size(s);
    return code;
  }

  /// The element stride of an affine access along index dim `dim`, as host code.
  std::string stride_code(const PlanCodeWriter& w, const PlanAccess& access, int dim) const {
    std::string code;
    for (std::size_t j = 0; j < access.coords.size(); ++j)
      if (access.coords[j].op == "idx" && access.coords[j].integer == dim)
        code += (code.empty() ? "" : " + ") + w.size(access.strides[j]);
    return code.empty() ? "0LL" : "(" + code + ")";
  }

  /// Where an affine access starts (its offset and literal coords), as a host pointer.
  std::string start_code(const PlanCodeWriter& w, const PlanAccess& access) const {
    std::string code =
        fmt::format("args.{} + {}", pointer(buffer(access.buffer)), w.size(access.offset));
    for (std::size_t j = 0; j < access.coords.size(); ++j)
      if (access.coords[j].op == "i" && access.coords[j].integer != 0)
        code += fmt::format(" + {} * {}LL", w.size(access.strides[j]), access.coords[j].integer);
    return code;
  }

  static std::string cuda_data_type(DType dtype) {
    return dtype == DType::BFloat16  ? "CUDA_R_16BF"
           : dtype == DType::Float16 ? "CUDA_R_16F"
                                     : "CUDA_R_32F";
  }

  /// A ka_lt_matmul call for a matmul's library route, as an expression that is true when
  /// cuBLASLt ran it.
  std::string library_call(const LibraryMatmul& route) const {
    const PlanKernel& kernel = plan_.kernels[route.kernel];
    const PlanCodeWriter w = writer(kernel, -1, nullptr);
    const int b_rank = static_cast<int>(kernel.batch.size());
    const int m = b_rank, n = b_rank + 1, k = b_rank + 2;
    std::string set = fmt::format(
        "KaLtMatmul c; c.type_ab = {}; c.type_d = {}; c.m = {}; c.n = {}; c.k = {}; "
        "c.batch_rank = {}; ",
        cuda_data_type(buffer(kernel.a.buffer).dtype), cuda_data_type(buffer(route.d.buffer).dtype),
        w.size(kernel.m), w.size(kernel.n), w.size(kernel.k), b_rank);
    for (int d = 0; d < b_rank; ++d) {
      set += fmt::format(
          "c.batch[{0}] = {1}; c.a_batch[{0}] = {2}; c.b_batch[{0}] = {3}; c.d_batch[{0}] = {4}; ",
          d, w.size(kernel.batch[d]), stride_code(w, kernel.a, d), stride_code(w, kernel.b, d),
          stride_code(w, route.d, d));
      if (route.c) set += fmt::format("c.c_batch[{}] = {}; ", d, stride_code(w, *route.c, d));
    }
    set += fmt::format(
        "c.a_m = {}; c.a_k = {}; c.b_k = {}; c.b_n = {}; c.d_m = {}; c.d_n = {}; c.a = {}; "
        "c.b = {}; c.d = {}; c.alpha = (float){}; ",
        stride_code(w, kernel.a, m), stride_code(w, kernel.a, k), stride_code(w, kernel.b, k),
        stride_code(w, kernel.b, n), stride_code(w, route.d, m), stride_code(w, route.d, n),
        start_code(w, kernel.a), start_code(w, kernel.b), start_code(w, route.d),
        fmt::format("{:.9g}", route.alpha));
    if (route.c)
      set += fmt::format("c.c_m = {}; c.c_n = {}; c.c = {}; ", stride_code(w, *route.c, m),
                         stride_code(w, *route.c, n), start_code(w, *route.c));
    return fmt::format(
        "[&] {{\n    {}\n    return ka_lt_matmul(c, scratch, (size_t)scratch_bytes, stream) == "
        "nullptr;\n  }}()",
        set);
  }

  /// The launch of kernel `index` in ka_plan_run, as a block.
  std::string launch(std::size_t index) const {
    const PlanKernel& kernel = plan_.kernels[index];
    const PlanCodeWriter w = writer(kernel, -1, nullptr);
    std::string text;
    text += fmt::format("  {{\n    KaKernel{0} k;\n    static_cast<KaArgs&>(k) = args;\n", index);
    switch (kernel.kind) {
      case PlanKernelKind::Pointwise:
        text += fmt::format(
            "    k.total = {};\n    k.inner = {};\n"
            "    ka_launch_pointwise<KaKernel{}, VEC, BLOCK_THREADS, ITEMS>(k, stream);\n",
            product(w, kernel.domain), kernel.domain.empty() ? "1LL" : w.size(kernel.domain.back()),
            index);
        break;
      case PlanKernelKind::Reduce:
        text += fmt::format(
            "    k.kept = {0};\n    k.reduced = {1};\n    k.red_inner = {2};\n"
            "    void* split = scratch_bytes >= ka_split_scratch_bytes<KaKernel{3}>() ? scratch "
            ": "
            "nullptr;\n"
            "    ka_launch_reduce<KaKernel{3}, VEC, BLOCK_THREADS, CACHE_VECS, ROW_MAPPING>(k, "
            "split, stream);\n",
            product(w, kernel.domain), product(w, kernel.reduce),
            kernel.reduce.empty() ? "1LL" : w.size(kernel.reduce.back()), index);
        break;
      case PlanKernelKind::Scan: {
        std::vector<std::string> others;
        for (std::size_t d = 0; d < kernel.domain.size(); ++d)
          if (static_cast<int>(d) != kernel.axis) others.push_back(kernel.domain[d]);
        text += fmt::format(
            "    k.lines = {};\n    k.length = {};\n"
            "    ka_launch_scan<KaKernel{}, BLOCK_THREADS>(k, stream);\n",
            product(w, others), w.size(kernel.domain[kernel.axis]), index);
        break;
      }
      case PlanKernelKind::Scatter:
        text += fmt::format(
            "    k.total = {};\n    ka_launch_scatter<KaKernel{}, BLOCK_THREADS>(k, stream);\n",
            product(w, kernel.domain), index);
        break;
      case PlanKernelKind::Topk:
        text += fmt::format(
            "    k.rows = {0};\n    k.n = {1};\n    k.k = {2};\n"
            "    if (const char* why = ka_launch_topk<KaKernel{3}, BLOCK_THREADS>(k, stream)) {{\n"
            "      std::snprintf(message, sizeof(message), \"kernels[{3}] (topk): %s\", why);\n"
            "      return message;\n    }}\n",
            product(w, kernel.domain), w.size(kernel.extent), w.size(kernel.k), index);
        break;
      case PlanKernelKind::Matmul: {
        const int k_dim = static_cast<int>(kernel.batch.size()) + 2;
        text += fmt::format(
            "    k.batches = {};\n    k.m = {};\n    k.n = {};\n    k.k = {};\n"
            "    k.b_k_fastest = {};\n"
            "    ka_launch_matmul<KaKernel{}, TILE_M, TILE_N, TILE_K, THREAD_M, THREAD_N, "
            "TENSOR_CORES>(k, stream);\n",
            product(w, kernel.batch), w.size(kernel.m), w.size(kernel.n), w.size(kernel.k),
            classify(kernel, kernel.b, k_dim).kind == AccessClass::Contiguous ? "true" : "false",
            index);
        break;
      }
    }
    text += "  }\n";
    return text;
  }

  std::string run_function() const {
    const FusedWorkspace workspace = fused_workspace(plan_);
    std::string body = axis_values("args.");
    body += fmt::format(
        "  const long long temp_bytes = {};\n"
        "  if ((long long)workspace_bytes < temp_bytes) {{\n"
        "    std::snprintf(message, sizeof(message), \"the workspace has %zu bytes, the plan's "
        "temps need %lld\", workspace_bytes, temp_bytes);\n"
        "    return message;\n  }}\n",
        axis_expression_code(workspace.total, axes_));
    for (std::size_t i = 0; i < plan_.buffers.size(); ++i) {
      const PlanBuffer& b = plan_.buffers[i];
      if (b.kind != PlanBufferKind::Temp) continue;
      body += fmt::format("  args.{} = reinterpret_cast<{}*>(workspace + {});\n", pointer(b),
                          element_type(b), axis_expression_code(workspace.offsets[i], axes_));
    }
    body +=
        "  // What is left past the temps (256-byte aligned) serves the split reductions.\n"
        "  const long long scratch_at = (temp_bytes + 255) / 256 * 256;\n"
        "  char* scratch = (long long)workspace_bytes > scratch_at ? workspace + scratch_at : "
        "nullptr;\n"
        "  const long long scratch_bytes = scratch ? (long long)workspace_bytes - scratch_at : 0;\n"
        "  (void)scratch_bytes;\n";
    for (std::size_t index = 0; index < library_.own_kernels; ++index) {
      const auto route = std::find_if(library_.matmuls.begin(), library_.matmuls.end(),
                                      [&](const LibraryMatmul& m) { return m.kernel == index; });
      if (route == library_.matmuls.end()) {
        body += launch(index);
        continue;
      }
      body += fmt::format("#if MATMUL_LIBRARY\n  if ({}) {{\n{}  }} else\n#endif\n",
                          library_call(*route),
                          route->epilogue ? launch(*route->epilogue) : std::string());
      body += launch(index);
    }
    return fmt::format(R"(
// Launches every kernel of the plan on `stream`; the temps are carved from the workspace.
// nullptr, or what went wrong.
inline const char* ka_plan_run(KaArgs args, cudaStream_t stream, char* workspace,
                               size_t workspace_bytes) {{
  static thread_local char message[256];
{}  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) {{
    std::snprintf(message, sizeof(message), "launching the plan's kernels: %s",
                  cudaGetErrorString(launched));
    return message;
  }}
  return nullptr;
}}
)",
                       body);
  }

  const KernelPlan& plan_;
  const LibraryPlan& library_;
  const Definition& def_;
  std::set<std::string> unreadable_;  ///< axes no tensor gives (unreadable_axes)
  std::vector<std::string> axes_;
};

}  // namespace

std::string generate_fused_header_cuda(const LibraryPlan& plan, const Definition& definition,
                                       const KernelTemplate& kernel) {
  if (kernel.target != DeviceKind::Cuda || kernel.build != TemplateBuild::SharedObject)
    throw TemplateMismatch(fmt::format(
        "template {}: the fused CUDA generator writes headers for CUDA shared objects only",
        kernel.name));
  try {
    return CudaFusedWriter(plan, definition).write();
  } catch (const ExprError& error) {
    throw TemplateMismatch(
        fmt::format("{}: kernelarc.op_params: {}", definition.name, error.what()));
  }
}

}  // namespace kernelarc
