// Helpers shared by the family binders (family_row*, family_elementwise*, family_gemm*): the
// mismatch error they all raise, and the dtype classes and names of their generated headers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "synth/family.h"

namespace kernelarc {

/// Throws TemplateMismatch "<definition path, or name when it has none>: <field>: <problem>".
[[noreturn]] void mismatch(const Definition& def, std::string_view field, std::string_view problem);

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

}  // namespace kernelarc
