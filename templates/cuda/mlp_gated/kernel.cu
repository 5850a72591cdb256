// A dense gated MLP, out = down(act(x gate^T) * (x up^T)), host side: binds the tensors (ka_bind
// also refuses the unaligned ones the 16-byte copies cannot read), checks the workspace, and
// launches on the caller's stream.
//
//   FUSE_GATE_UP = 0:  cuBLASLt g = x gate^T, u = x up^T (each rounded to the element type, as a
//                      framework's two linear layers are) -> pointwise h = act(g) * u in float32,
//                      rounded -> cuBLASLt out = h down^T
//   FUSE_GATE_UP = 1:  one tensor-core GEMM, h = act(x . gate) * (x . up) from its float32
//                      accumulators, rounded (ka_moe_gemm.cuh, dense: the rows are the tokens)
//                      -> cuBLASLt out = h down^T
//
// The fused route reads x once and keeps g and u out of memory; cuBLASLt's GEMMs are the faster
// tensor-core GEMMs. Neither wins every shape: the search measures both per shape and composes
// them with kernelarc.variants.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "ka_cuda_entry.h"
#include "ka_moe_gemm.cuh"
#include "ka_moe_lt.cuh"
#include "ka_problem.h"
#include "kernelarc/abi.h"

namespace {

using ka_moe::kHidden;
using ka_moe::kInter;
using ka_moe::kLtScratchBytes;

constexpr auto kGateUp =
    ka_moe::grouped_gemm_kernel<BM, BN, BK, WARPS_M, WARPS_N, STAGES, true, M_GROUP, true>;
using GateUp = ka_moe::GemmConfig<BM, BN, BK, WARPS_M, WARPS_N, STAGES, true>;

constexpr const char* kName = "mlp_gated";

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  long long tokens = 0, slots = 0;
  if (ka_moe::begin_call(kName, inputs, n_inputs, outputs, n_outputs, ka, tokens, slots) != 0)
    return 1;
  if (tokens <= 0) return 0;

  // Workspace: h (and g in place), u, then cuBLASLt's scratch.
  ka_moe::WorkspaceCarver carver;
  const size_t activations = sizeof(ka_act_t) * static_cast<size_t>(tokens) * kInter;
  const size_t h_at = carver.take(activations);
  const size_t u_at = carver.take(FUSE_GATE_UP ? 0 : activations);
  const size_t scratch_at = carver.take(kLtScratchBytes);
  if (ka_moe::check_workspace(kName, workspace, workspace_bytes, carver.at, tokens) != 0) return 1;
  unsigned char* base = static_cast<unsigned char*>(workspace);
  ka_act_t* h = reinterpret_cast<ka_act_t*>(base + h_at);
  ka_act_t* u = reinterpret_cast<ka_act_t*>(base + u_at);
  void* scratch = base + scratch_at;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);

#if FUSE_GATE_UP
  int multiprocessors = 0;
  if (ka_prepare_device(multiprocessors, [](int device) {
        const cudaError_t status = cudaFuncSetAttribute(
            kGateUp, cudaFuncAttributeMaxDynamicSharedMemorySize, GateUp::kSharedBytes);
        if (status == cudaSuccess) return 0;
        return ka_fail(
            "%s: preparing the gate/up GEMM on device %d: %s (%d bytes of shared memory)", kName,
            device, cudaGetErrorString(status), GateUp::kSharedBytes);
      }) != 0)
    return 1;
  const long long m_tiles = (tokens + BM - 1) / BM;
  const long long ctas = m_tiles * ((kInter + BN - 1) / BN);
  if (ctas > INT_MAX) return ka_fail("%s: %lld tokens are too many for the grid", kName, tokens);
  ka_moe::Workspace ws = {};
  ws.h = h;
  kGateUp<<<static_cast<unsigned>(ctas), GateUp::kThreads, GateUp::kSharedBytes, s>>>(
      ka, ws, static_cast<int>(m_tiles));
  if (ka_moe::check_launch(kName, "gate/up GEMM") != 0) return 1;
#else
  if (ka_moe::run_lt_product(kName,
                             ka_moe::rows_times_weights(ka.x_row(0), kHidden, ka.gate_rows(0), h,
                                                        kInter, tokens, kInter, kHidden),
                             "gate", scratch, s) != 0 ||
      ka_moe::run_lt_product(kName,
                             ka_moe::rows_times_weights(ka.x_row(0), kHidden, ka.up_rows(0), u,
                                                        kInter, tokens, kInter, kHidden),
                             "up", scratch, s) != 0 ||
      ka_moe::gated_activation(kName, h, u, h, tokens, kInter, s) != 0)
    return 1;
#endif
  return ka_moe::run_lt_product(
      kName,
      ka_moe::rows_times_weights(h, kInter, ka.down_rows(0), ka.out_row(0), kHidden, tokens,
                                 kHidden, kInter),
      "down", scratch, s);
}
