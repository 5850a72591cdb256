// Target-neutral C code of a kernel plan's parts (synth/kernel_plan.h), shared by the CPU and
// CUDA generators of family "fused": SIZEs as int64 code over the axes, EXPR trees, the
// addresses and conversions of loads and stores.
//
// The emitted code relies on:
//   - plan_code_prelude(): `ka_pf_float` (float, or double in float64 plans) and the ka_pf_*
//     helpers (math, NaN-propagating min/max, ka_pf_logaddexp, Python's floor division and modulo,
//     rounding through bfloat16/float16, the element conversions of loads and stores). It needs
//     KA_HD defined before it and, on the CPU, ka_math.h and ka_cpu_types.h reachable by include.
//   - a variable `long long ka_axis_<name>` in scope for every axis a SIZE names, and
//     ka_floordiv / ka_floormod (Python's // and % on long long, as axis_expression_code emits
//     them), which the target's header defines;
//   - the names PlanCodeNames gives for index dimensions, buffer pointers, stage results, the
//     matmul accumulator and the scan value (pointers typed plan_element_type(dtype, cuda)*,
//     const for inputs).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "synth/kernel_plan.h"

namespace kernelarc {

/// How generated code spells what an EXPR refers to; the defaults are the ones below.
struct PlanCodeNames {
  std::function<std::string(int dim)> index;                     ///< "ka_i<d>"
  std::function<std::string(const PlanBuffer& buffer)> pointer;  ///< "ka_b<position in plan>"
  std::function<std::string(const PlanStage& stage)> stage;      ///< "ka_s<position in kernel>"
  std::string acc = "ka_acc";
  std::string scan = "ka_scan";
  std::string topk_value = "ka_topk_value";
  std::string topk_index = "ka_topk_index";
};

/// The defaults of PlanCodeNames for `plan` and `kernel`.
PlanCodeNames default_plan_code_names(const KernelPlan& plan, const PlanKernel& kernel);

/// C code of an expression and its type.
struct TypedCode {
  std::string code;
  ValueType type = ValueType::Float;
};

/// The element type of a buffer in generated code: float, double, ka_bf16 / __nv_bfloat16,
/// ka_f16 / __half, int8..int64 as (un)signed char, short, int, long long, bool as unsigned
/// char. Throws TemplateMismatch for the float8 types.
std::string plan_element_type(DType dtype, bool cuda);

/// The helpers every emitted expression may call (see the top of this file).
std::string plan_code_prelude(bool cuda, bool float64);

class PlanCodeWriter {
 public:
  /// `axes`: the definition's axis names (SIZEs may name only these); `cuda` picks the element
  /// types and conversions.
  PlanCodeWriter(const KernelPlan& plan, const PlanKernel& kernel, std::vector<std::string> axes,
                 PlanCodeNames names, bool cuda);

  /// A SIZE as int64 C code over ka_axis_<name> (axis_expression_code). ExprError when it is
  /// malformed or names an unknown axis.
  std::string size(const std::string& size) const;
  TypedCode expr(const PlanExpr& expr) const;
  /// The expression converted to ka_pf_float, or to long long.
  std::string float_code(const PlanExpr& expr) const;
  std::string int_code(const PlanExpr& expr) const;
  /// The element index (long long) of an access: offset + sum strides[j] * coords[j].
  std::string address(const PlanAccess& access) const;
  /// The loaded element converted to ka_pf_float (float buffers) or long long (integer and bool
  /// buffers).
  TypedCode load(const PlanAccess& access) const;
  /// "<pointer>[<address>] = <value rounded to the buffer's dtype>;"
  std::string store(const PlanStore& store) const;
  /// A scatter kernel's store (docs/RECOGNITION.md §2) as a block: the element at the store's
  /// address, which is first checked against `elements` (a SIZE, the buffer's element count):
  /// an address outside it (an index out of range) writes nothing and runs `on_stray`. With
  /// `accumulate` the value is added to the element (on CUDA through ka_atomic_add, which the
  /// target defines for the element types).
  std::string scatter_store(const PlanStore& store, bool accumulate, const std::string& elements,
                            const std::string& on_stray) const;
  /// The write (or addition) of a scatter store's value at element `at` (code of an element
  /// index already known to be inside the buffer).
  std::string scatter_update(const PlanStore& store, bool accumulate, const std::string& at) const;
  /// `value` (code of type `type`) converted to buffer dtype `dtype`'s element type.
  std::string to_element(const std::string& value, ValueType type, DType dtype) const;

 private:
  const KernelPlan& plan_;
  const PlanKernel& kernel_;
  /// The C element `element` (an lvalue of `buffer`) read as ka_pf_float or long long.
  TypedCode element_value(const PlanBuffer& buffer, const std::string& element) const;

  std::vector<std::string> axes_;
  PlanCodeNames names_;
  bool cuda_;
};

}  // namespace kernelarc
