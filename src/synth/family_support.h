// Helpers shared by the family binders (family_row*, family_elementwise*, family_gemm*,
// family_rope): the mismatch error they all raise, the dtype classes and names of their generated
// headers, and the pack helpers of CUDA headers.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "synth/family.h"

namespace kernelarc {

/// Throws TemplateMismatch "<definition path, or name when it has none>: <field>: <problem>".
[[noreturn]] void mismatch(const Definition& def, std::string_view field, std::string_view problem);

/// Mismatch unless `kernel` serves the problem's op family and is a CUDA kernel launched by the
/// backend (nvrtc): what the families whose headers only that form reads (rope, transpose) need.
void require_nvrtc_template(const Definition& def, const KernelTemplate& kernel,
                            std::string_view binder);

/// The axis values every workload shares: const axes, and expr axes over them.
AxisValues static_axes(const Definition& def);

/// A tensor of rank 2 (not a scalar): what the GEMM families take as a matrix.
bool is_matrix(const TensorSpec& spec);

/// `value` as a C++ float literal ("2.5f", "1.0f", "1e-05f").
std::string float_literal(double value);

/// "[a, b, c]": a shape as the mismatch messages quote it.
std::string shape_text(const std::vector<std::string>& shape);

/// float32, float16 or bfloat16: the tensor dtypes the templates load and store in packs.
bool is_packed_float_dtype(DType dtype);

/// The packed float dtypes plus float64, int32 and int64: what a scalar operand may be.
bool is_scalar_operand_dtype(DType dtype);

/// The element type of a tensor in generated code: CUDA's __half / __nv_bfloat16 on CUDA,
/// ka_cpu_types.h's ka_f16 / ka_bf16 on the CPU; "void" for a dtype the binders reject.
std::string header_element_type(DType dtype, bool cuda);

/// The ka_dtype enumerator of abi.h ("KA_BFLOAT16").
std::string abi_dtype_name(DType dtype);

/// The parameter list of a kernel the backend launches (nvrtc), as its `#define
/// KA_KERNEL_PARAMS` line with a comment: `const T* ka_in_<name>` per input and `T* ka_out_<name>`
/// per output in definition order (T = element_type(dtype)), then `long long ka_axis_<name>` per
/// axis of the definition, in declaration order.
std::string kernel_params_define(const Definition& def,
                                 const std::function<std::string(DType)>& element_type);

/// ka_bind's checks of one tensor (`slot` is "inputs[i]" or "outputs[j]"): its dtype, its rank
/// and, for rank > 0, a contiguous row-major layout (ka_contiguous, from ka_bind_definition).
std::string bind_tensor_checks(const TensorSpec& tensor, const std::string& slot);

/// ka_bind's check of every dimension of one tensor against its axis, once the local
/// ka_axis_<name> values exist: "<name>: expected shape [a, b]". Empty for scalars and 0-D.
std::string bind_shape_checks(const TensorSpec& tensor, const std::string& slot);

/// ka_bind's opening checks for a definition's every tensor: the counts of inputs and outputs,
/// then bind_tensor_checks of each input and output.
std::string bind_every_tensor_check(const Definition& def);

/// ka_bind's `const long long ka_axis_<name>` locals: const axes by value, the others read from
/// the first tensor shape naming them (axis_shape_source); axes no shape names are left out.
std::string bind_axis_locals(const Definition& def);

/// bind_shape_checks of each input and output, once the ka_axis_<name> locals exist.
std::string bind_every_shape_check(const Definition& def);

/// ka_contiguous and `const char* ka_bind(inputs, n_inputs, outputs, n_outputs, args)` around
/// `body`, which ends in a return statement. `what` finishes the comment "Checks the tensors
/// against the definition and ...".
std::string ka_bind_definition(const std::string& body, std::string_view what);

/// The start of a ka_problem.h for shared objects and NVRTC kernels alike (the gemm and attention
/// families): KA_TARGET_CUDA or KA_TARGET_CPU, KA_HD, the includes (abi.h outside NVRTC), and
/// ka_to_float / ka_from_float<T> of float32, float16 and bfloat16 (ka_cpu_types.h's on the CPU).
std::string float_conversion_prelude(bool cuda);

/// Where ka_bind reads `axis` from: "inputs[i].shape[d]" or "outputs[j].shape[d]" of the first
/// tensor whose shape names it; nullopt when none does.
std::optional<std::string> axis_shape_source(const Definition& def, const std::string& axis);

/// The start of a CUDA ka_problem.h with aligned packs (the row and rope families): KA_HD,
/// the float conversions of float, __half and __nv_bfloat16, ka_row_load<N> / ka_row_store<N>
/// of N elements as one aligned unit, and ka_row_aligned(p, n).
std::string cuda_pack_prelude();

}  // namespace kernelarc
