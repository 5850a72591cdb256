// Binding a problem to a template of its op family. A binder reads the definition (tensors,
// dtypes, axes, kernelarc.op_params) and produces what a template needs to serve that exact
// problem: the generated header "ka_problem.h" (typed accessors, the kernel parameter list,
// the fused element-wise code) and named size expressions for launch specs and constraints.
//
// Conventions every generated header follows (templates rely on them):
//   KA_HD                  "__host__ __device__ __forceinline__" on CUDA, "inline" on the CPU.
//   KA_TARGET_CUDA / KA_TARGET_CPU   1 for the target the header was generated for.
//   struct KaArgs          the problem's pointers and axes with the family's accessors.
//   CUDA, nvrtc templates:   KA_KERNEL_PARAMS  the parameter list of the device-only ABI (input
//                            pointers, output pointers, one long long per axis), and KA_ARGS,
//                            an expression building KaArgs from those parameters:
//                              extern "C" __global__ void ka_x(KA_KERNEL_PARAMS) {
//                                const KaArgs ka = KA_ARGS; ... }
//   CUDA shared objects and CPU templates: `const char* ka_bind(const ka_tensor* inputs,
//                            int n_inputs, ka_tensor* outputs, int n_outputs, KaArgs* args)`
//                            checks the tensors (dtype, rank, contiguity) and fills args;
//                            returns nullptr or a message for ka_last_error.
// Each family documents its KaArgs in docs/TEMPLATES.md.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/expr.h"
#include "core/problem.h"
#include "synth/kernel_template.h"

namespace kernelarc {

/// The problem cannot be served by this template or family; what() says why, naming the
/// definition field at fault (e.g. "inputs.weight: expected shape [hidden_size]").
class TemplateMismatch : public InputError {
 public:
  using InputError::InputError;
};

struct FamilyBinding {
  std::string header;  ///< content of the generated ka_problem.h
  /// Names usable in launch expressions, mapped to expressions over the definition's axes,
  /// e.g. {"ROWS": "batch_size", "COLS": "hidden_size"}.
  std::map<std::string, std::string> sizes;
  /// Workload-independent values knob constraints may name, e.g. {"ELEM_BYTES": 2}.
  AxisValues constants;
};

class FamilyBinder {
 public:
  virtual ~FamilyBinder() = default;
  /// The op families this binder serves (op_family values).
  virtual std::vector<std::string> families() const = 0;
  /// Throws TemplateMismatch when the problem does not fit (wrong tensors, unsupported dtype,
  /// malformed op_params) and InputError for a malformed element-wise expression.
  virtual FamilyBinding bind(const Definition& definition, const KernelTemplate& kernel) const = 0;
};

std::unique_ptr<FamilyBinder> make_row_binder();           // rmsnorm, layernorm, softmax, logsumexp
std::unique_ptr<FamilyBinder> make_elementwise_binder();   // elementwise, activation
std::unique_ptr<FamilyBinder> make_gemm_binder();          // gemm
std::unique_ptr<FamilyBinder> make_rope_binder();          // rope
std::unique_ptr<FamilyBinder> make_transpose_binder();     // transpose
std::unique_ptr<FamilyBinder> make_fused_binder();         // fused (a kernel plan)
std::unique_ptr<FamilyBinder> make_attention_binder();     // attention
std::unique_ptr<FamilyBinder> make_scaled_gemm_binder();   // scaled_gemm (FP8 with scales)
std::unique_ptr<FamilyBinder> make_moe_binder();           // moe (mixture-of-experts forward)
std::unique_ptr<FamilyBinder> make_moe_backward_binder();  // moe_backward (its experts' backward)
std::unique_ptr<FamilyBinder> make_mlp_binder();           // mlp (a dense gated MLP)

/// The binder serving `family`, or nullptr.
const FamilyBinder* find_family_binder(std::string_view family);

}  // namespace kernelarc
