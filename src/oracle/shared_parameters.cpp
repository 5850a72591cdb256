#include "oracle/shared_parameters.h"

#include <cctype>

#include "core/error.h"
#include "core/tensor.h"

namespace kernelarc {

namespace {

// Whether an axis has one value for every workload: a const axis, or an expression over such
// axes (the MoE problems' gate_up_size = 2 * intermediate_size). `depth` bounds a cyclic
// definition, which resolve_axes reports anyway.
bool axis_is_constant(const Definition& definition, const Axis& axis, int depth = 0) {
  if (axis.kind == AxisKind::Const) return true;
  if (axis.kind == AxisKind::Var || depth > 16) return false;
  const std::string& text = axis.expression;
  for (std::size_t at = 0; at < text.size();) {
    if (!std::isalpha(static_cast<unsigned char>(text[at])) && text[at] != '_') {
      ++at;
      continue;
    }
    std::size_t end = at;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) {
      ++end;
    }
    // A name that is no axis is a function of the expression language (min, max, ...).
    const Axis* used = definition.find_axis(text.substr(at, end - at));
    if (used != nullptr && !axis_is_constant(definition, *used, depth + 1)) return false;
    at = end;
  }
  return true;
}

bool shape_is_constant(const Definition& definition, const TensorSpec& spec) {
  for (const std::string& entry : *spec.shape) {
    if (literal_size(entry)) continue;
    const Axis* axis = definition.find_axis(entry);
    if (axis == nullptr || !axis_is_constant(definition, *axis)) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> shared_parameter_inputs(const Definition& definition,
                                                 const Workload& workload,
                                                 std::uint64_t threshold_bytes) {
  if (threshold_bytes == 0) return {};
  std::vector<std::string> shared;
  std::uint64_t total = 0;
  bool fresh_activation = false;
  try {
    const AxisValues axes = resolve_axes(definition, workload);
    for (const TensorSpec& spec : definition.inputs) {
      if (spec.is_scalar()) continue;
      const std::uint64_t bytes =
          static_cast<std::uint64_t>(shape_numel(resolve_shape(spec, axes))) *
          dtype_size(spec.dtype);
      total += bytes;
      // Drawn by the oracle: at random, or by the definition's make_inputs (a custom draw is made
      // twice, once from each seed, and each keeps its own names).
      auto given = workload.inputs.find(spec.name);
      if (given != workload.inputs.end() && given->second.kind != InputKind::Random &&
          given->second.kind != InputKind::Custom) {
        continue;
      }
      if (!shape_is_constant(definition, spec)) {
        fresh_activation = true;
      } else if (bytes >= kMinSharedParameterBytes) {
        shared.push_back(spec.name);
      }
    }
  } catch (const InputError&) {
    // A workload the oracle cannot size (packed dtypes, a failing axis) is drawn as before; its
    // draw reports the problem.
    return {};
  }
  if (total <= threshold_bytes || !fresh_activation) return {};
  return shared;
}

}  // namespace kernelarc
