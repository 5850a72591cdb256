// The binder of family "fused": kernelarc.op_params is a kernel plan (docs/RECOGNITION.md §2).
// It parses the plan, checks it against the definition (every input and output a buffer of its
// dtype, every SIZE over the definition's axes, accesses that stay inside their buffers) and
// has the template's target generate ka_problem.h.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "synth/family.h"
#include "synth/family_elementwise.h"
#include "synth/family_fused.h"
#include "synth/family_support.h"
#include "synth/kernel_plan_code.h"

namespace kernelarc {

namespace {

constexpr const char* kParams = "kernelarc.op_params";

std::string buffer_field(const KernelPlan& plan, const PlanBuffer& buffer) {
  return fmt::format("{}.buffers[{}]", kParams, &buffer - plan.buffers.data());
}

void check_buffers(const KernelPlan& plan, const Definition& def) {
  std::vector<const PlanBuffer*> inputs(def.inputs.size()), outputs(def.outputs.size());
  for (const PlanBuffer& buffer : plan.buffers) {
    if (buffer.kind == PlanBufferKind::Temp) {
      plan_element_type(buffer.dtype, false);  // rejects the float8 types
      continue;
    }
    const bool input = buffer.kind == PlanBufferKind::Input;
    auto& slots = input ? inputs : outputs;
    const std::string field = buffer_field(plan, buffer);
    if (buffer.index >= static_cast<int>(slots.size())) {
      mismatch(def, field + ".index",
               fmt::format("the definition has {} {}{}, got index {}", slots.size(),
                           input ? "input" : "output", slots.size() == 1 ? "" : "s", buffer.index));
    }
    const TensorSpec& spec = input ? def.inputs[buffer.index] : def.outputs[buffer.index];
    if (slots[buffer.index] != nullptr) {
      mismatch(def, field,
               fmt::format("{} \"{}\" is already buffer \"{}\"", input ? "input" : "output",
                           spec.name, slots[buffer.index]->name));
    }
    slots[buffer.index] = &buffer;
    if (buffer.dtype != spec.dtype) {
      mismatch(def, field + ".dtype",
               fmt::format("{} {} is {} in the definition, not {}", input ? "input" : "output",
                           spec.name, dtype_name(spec.dtype), dtype_name(buffer.dtype)));
    }
    plan_element_type(spec.dtype, false);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i])
      mismatch(def, fmt::format("{}.buffers", kParams),
               fmt::format("no buffer for input {} (index {})", def.inputs[i].name, i));
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i])
      mismatch(def, fmt::format("{}.buffers", kParams),
               fmt::format("no buffer for output {} (index {})", def.outputs[i].name, i));
}

void check_sizes(const KernelPlan& plan, const Definition& def) {
  const std::vector<std::string> axes = axis_names(def);
  for (const auto& [field, size] : plan.size_fields) {
    try {
      axis_expression_code(size, axes);
    } catch (const ExprError& error) {
      mismatch(def, field, fmt::format("\"{}\": {}", size, error.what()));
    }
  }
}

// The shape of a definition tensor (empty for scalars and 0-D tensors).
const std::vector<std::string>& tensor_shape(const Definition& def, const PlanBuffer& buffer) {
  static const std::vector<std::string> none;
  const TensorSpec& spec =
      buffer.kind == PlanBufferKind::Input ? def.inputs[buffer.index] : def.outputs[buffer.index];
  return spec.shape ? *spec.shape : none;
}

// Accesses with plain coordinates (["idx", d] or ["i", c]) and non-negative strides must stay
// inside their buffer; checked at two sample sizes of the var axes, where they evaluate.
class BoundsChecker {
 public:
  BoundsChecker(const KernelPlan& plan, const Definition& def) : plan_(plan), def_(def) {}

  void check() const {
    for (const int64_t sample : {17, 41}) {
      AxisValues axes = static_axes(def_);
      for (const Axis& axis : def_.axes)
        if (axis.kind == AxisKind::Var) axes[axis.name] = sample;
      if (!resolve_expr_axes(axes)) continue;
      for (std::size_t k = 0; k < plan_.kernels.size(); ++k) check_kernel(k, axes);
    }
  }

 private:
  bool resolve_expr_axes(AxisValues& axes) const {
    for (bool progress = true; progress;) {
      progress = false;
      for (const Axis& axis : def_.axes) {
        if (axis.kind != AxisKind::Expr || axes.contains(axis.name)) continue;
        try {
          axes[axis.name] = evaluate_expr(axis.expression, axes);
          progress = true;
        } catch (const ExprError&) {
        }
      }
    }
    for (const Axis& axis : def_.axes)
      if (!axes.contains(axis.name)) return false;
    return true;
  }

  std::optional<int64_t> evaluate(const std::string& size, const AxisValues& axes) const {
    try {
      return evaluate_expr(size, axes);
    } catch (const ExprError&) {
      return std::nullopt;  // e.g. a division that only holds at real sizes
    }
  }

  std::optional<int64_t> elements(const PlanBuffer& buffer, const AxisValues& axes) const {
    if (buffer.kind == PlanBufferKind::Temp) return evaluate(buffer.elements, axes);
    int64_t count = 1;
    for (const std::string& axis : tensor_shape(def_, buffer)) {
      const std::optional<int64_t> value = evaluate(axis, axes);
      if (!value) return std::nullopt;
      count *= *value;
    }
    return count;
  }

  void check_access(const PlanAccess& access, const std::vector<int64_t>& dims,
                    const AxisValues& axes, const std::string& field) const {
    const PlanBuffer& buffer = *plan_.find_buffer(access.buffer);
    std::optional<int64_t> last = evaluate(access.offset, axes);
    if (!last) return;
    for (std::size_t j = 0; j < access.coords.size(); ++j) {
      const PlanExpr& coord = access.coords[j];
      const std::optional<int64_t> stride = evaluate(access.strides[j], axes);
      if (!stride || *stride < 0) return;
      int64_t largest = 0;
      if (coord.op == "idx") {
        largest = dims[static_cast<std::size_t>(coord.integer)] - 1;
      } else if (coord.op == "i" && coord.integer >= 0) {
        largest = coord.integer;
      } else {
        return;
      }
      if (largest < 0) return;  // an empty index space reads nothing
      *last += *stride * largest;
    }
    const std::optional<int64_t> count = elements(buffer, axes);
    if (count && (*last >= *count || *last < 0)) {
      mismatch(def_, field,
               fmt::format("reaches element {} of buffer \"{}\", which has {} (at {})", *last,
                           buffer.name, *count, format_axes(axes)));
    }
  }

  void check_kernel(std::size_t k, const AxisValues& axes) const {
    const PlanKernel& kernel = plan_.kernels[k];
    std::vector<int64_t> dims;
    for (const std::string& size : kernel.index_sizes()) {
      const std::optional<int64_t> value = evaluate(size, axes);
      if (!value) return;
      dims.push_back(*value);
    }
    const std::string field = fmt::format("{}.kernels[{}]", kParams, k);
    for (const auto& [name, load] : kernel.loads)
      check_access(load, dims, axes, field + ".loads." + name);
    // A topk kernel's stores run over the k selected elements of each row, not all of it.
    if (kernel.kind == PlanKernelKind::Topk) {
      const std::optional<int64_t> selected = evaluate(kernel.k, axes);
      if (!selected) return;
      dims.back() = *selected;
    }
    for (std::size_t s = 0; s < kernel.stores.size(); ++s)
      check_access(kernel.stores[s].access, dims, axes, fmt::format("{}.stores[{}]", field, s));
    if (kernel.kind == PlanKernelKind::Matmul) {
      check_access(kernel.a, dims, axes, field + ".a");
      check_access(kernel.b, dims, axes, field + ".b");
    }
  }

  const KernelPlan& plan_;
  const Definition& def_;
};

std::string workspace_expression(const PlanBuffer& buffer) {
  return fmt::format("((({}) * {} + 255) // 256 * 256)", buffer.elements, dtype_size(buffer.dtype));
}

class FusedBinder : public FamilyBinder {
 public:
  std::vector<std::string> families() const override { return {"fused"}; }

  FamilyBinding bind(const Definition& definition, const KernelTemplate& kernel) const override {
    const std::string file = definition.path.empty() ? definition.name : definition.path.string();
    KernelPlan plan;
    try {
      plan = parse_kernel_plan(definition.ext.op_params, file, kParams);
    } catch (const TemplateMismatch&) {
      throw;
    } catch (const InputError& error) {
      throw TemplateMismatch(error.what());
    }
    check_buffers(plan, definition);
    check_sizes(plan, definition);
    BoundsChecker(plan, definition).check();

    FamilyBinding binding;
    std::string workspace = fused_workspace(plan).total;
    switch (kernel.target) {
      case DeviceKind::Cuda: {
        const LibraryPlan library = with_library_matmuls(plan);
        binding.header = generate_fused_header_cuda(library, definition, kernel);
        workspace = fused_workspace(library.plan).total;
        break;
      }
      case DeviceKind::Cpu:
        binding.header = generate_fused_header_cpu(plan, definition, kernel);
        break;
    }
    binding.sizes["WORKSPACE_BYTES"] = workspace;
    bool matmul = false;
    for (const PlanKernel& k : plan.kernels) matmul = matmul || k.kind == PlanKernelKind::Matmul;
    binding.constants["HAS_MATMUL"] = matmul ? 1 : 0;
    binding.constants["KERNELS"] = static_cast<int64_t>(plan.kernels.size());
    return binding;
  }
};

}  // namespace

FusedWorkspace fused_workspace(const KernelPlan& plan) {
  FusedWorkspace workspace;
  for (const PlanBuffer& buffer : plan.buffers) {
    if (buffer.kind != PlanBufferKind::Temp) {
      workspace.offsets.emplace_back();
      continue;
    }
    workspace.offsets.push_back(workspace.total);
    workspace.total = workspace.total == "0"
                          ? workspace_expression(buffer)
                          : workspace.total + " + " + workspace_expression(buffer);
  }
  return workspace;
}

std::set<std::string> unreadable_axes(const KernelPlan& plan, const Definition& definition) {
  std::set<std::string> readable;
  for (const Axis& axis : definition.axes)
    if (axis.kind == AxisKind::Const || axis_shape_source(definition, axis.name))
      readable.insert(axis.name);
  for (bool progress = true; progress;) {
    progress = false;
    for (const Axis& axis : definition.axes) {
      if (axis.kind != AxisKind::Expr || readable.contains(axis.name)) continue;
      const std::set<std::string> needs = expr_variables(axis.expression);
      if (std::includes(readable.begin(), readable.end(), needs.begin(), needs.end()))
        progress = readable.insert(axis.name).second;
    }
  }
  std::set<std::string> unreadable;
  for (const Axis& axis : definition.axes)
    if (!readable.contains(axis.name)) unreadable.insert(axis.name);
  for (const auto& [field, size] : plan.size_fields)
    for (const std::string& name : expr_variables(size))
      if (unreadable.contains(name))
        mismatch(definition, field,
                 fmt::format("\"{}\" names axis {}, which no tensor's shape gives (nor an expr "
                             "axis a shape names)",
                             size, name));
  return unreadable;
}

std::string plan_buffer_elements(const PlanBuffer& buffer, const Definition& definition) {
  if (buffer.kind == PlanBufferKind::Temp) return buffer.elements;
  std::string product = "1";
  for (const std::string& size : tensor_shape(definition, buffer))
    product += fmt::format(" * ({})", size);
  return product;
}

std::unique_ptr<FamilyBinder> make_fused_binder() {
  return std::make_unique<FusedBinder>();
}

}  // namespace kernelarc
