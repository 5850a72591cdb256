// Mixture-of-experts forward for FP8 block-scaled problems (DeepSeek-V3: e4m3 hidden states with
// 1x128 scales, e4m3 weights with 128x128 scales, bfloat16 output; the call may hold only
// KA_LOCAL_EXPERTS of the routed experts, from the runtime ka.local_offset() on), host side: binds
// the tensors, checks the alignment the 16-byte copies need and the workspace, and launches on the
// caller's stream (moe_fp8_route.cuh, moe_fp8_gemm.cuh):
//
//   memset counts -> route -> permute (+ scan) -> GEMM 1 (gate/up + act -> h) -> GEMM 2 (down -> y)
//   -> combine
//
// The number of M tiles depends on the routing, which only the device knows, so both GEMM grids
// are launched for the upper bound ceil(T*K / BM) + min(LOCAL_EXPERTS, T*K) (each non-empty local
// expert adds at most one partial tile) and the CTAs past the real count return at once.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "ka_cuda_entry.h"
#include "ka_moe_grouped.cuh"
#include "ka_problem.h"
#include "kernelarc/abi.h"
#include "moe_fp8_gemm.cuh"
#include "moe_fp8_route.cuh"

#if !defined(BM) || !defined(WARPS_M) || !defined(BN) || !defined(BK) || !defined(WARPS_N) || \
    !defined(STAGES) || !defined(BN2) || !defined(BK2) || !defined(WARPS_N2) ||               \
    !defined(STAGES2) || !defined(M_GROUP)
#error "moe_fp8_grouped needs every knob of knobs.json as a -D macro"
#endif

namespace {

using ka_moe::kHidden;
using ka_moe::kInter;
using ka_moe::kTopK;
using ka_moe_fp8::kLocal;

// GEMM 1 (gate/up, activation) and GEMM 2 (down); they share BM and WARPS_M, so one M-tile
// schedule serves both.
constexpr auto kGemm1 = ka_moe_fp8::gate_up_kernel<BM, BN, BK, WARPS_M, WARPS_N, STAGES, M_GROUP>;
constexpr auto kGemm2 = ka_moe_fp8::down_kernel<BM, BN2, BK2, WARPS_M, WARPS_N2, STAGES2, M_GROUP>;
using Gemm1 = ka_moe_fp8::GateUpConfig<BM, BN, BK, WARPS_M, WARPS_N, STAGES>;
using Gemm2 = ka_moe_fp8::DownConfig<BM, BN2, BK2, WARPS_M, WARPS_N2, STAGES2>;

/// Byte offsets of the workspace's arrays, each 256-aligned, for T tokens. template.json's
/// workspace_bytes, TOKENS * TOP_K * (20 + (INTER + HIDDEN) * 2) + LOCAL_EXPERTS * 12 + 4096,
/// bounds `total` (10 arrays, under 256 bytes of padding each, and 8 bytes of the two L + 1
/// arrays).
struct Layout {
  size_t counts, offsets, tile_prefix, local_id, weights, rank, sorted_slot, pos_of_slot, h, y,
      total;
};

Layout layout_for(long long tokens) {
  const size_t slots = static_cast<size_t>(tokens) * kTopK;
  Layout l;
  ka_moe::WorkspaceCarver carver;
  l.counts = carver.take(sizeof(int) * kLocal);
  l.offsets = carver.take(sizeof(int) * (kLocal + 1));
  l.tile_prefix = carver.take(sizeof(int) * (kLocal + 1));
  l.local_id = carver.take(sizeof(int) * slots);
  l.weights = carver.take(sizeof(float) * slots);
  l.rank = carver.take(sizeof(int) * slots);
  l.sorted_slot = carver.take(sizeof(int) * slots);
  l.pos_of_slot = carver.take(sizeof(int) * slots);
  l.h = carver.take(sizeof(__nv_bfloat16) * slots * kInter);
  l.y = carver.take(sizeof(__nv_bfloat16) * slots * kHidden);
  l.total = carver.at;
  return l;
}

constexpr const char* kName = "moe_fp8_grouped";

int check_launch(const char* what) {
  return ka_moe::check_launch(kName, what);
}

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  long long tokens = 0, slots = 0;
  if (ka_moe::begin_call(kName, inputs, n_inputs, outputs, n_outputs, ka, tokens, slots) != 0)
    return 1;
  if (tokens <= 0) return 0;

  // Rows are copied in 16-byte chunks (HIDDEN and INTER are multiples of 128); only the local
  // experts' weights are read.
  if (ka_moe::check_rows_aligned<kLocal>(kName, ka) != 0) return 1;

  const Layout layout = layout_for(tokens);
  if (ka_moe::check_workspace(kName, workspace, workspace_bytes, layout.total, tokens) != 0)
    return 1;

  int multiprocessors = 0;
  if (ka_prepare_device(multiprocessors, [](int device) {
        const ka_moe::SharedKernel kernels[] = {
            {reinterpret_cast<const void*>(kGemm1), Gemm1::kSharedBytes},
            {reinterpret_cast<const void*>(kGemm2), Gemm2::kSharedBytes}};
        return ka_moe::prepare_kernels(kName, device, kernels);
      }) != 0)
    return 1;

  unsigned char* base = static_cast<unsigned char*>(workspace);
  ka_moe_fp8::Workspace ws;
  ws.counts = reinterpret_cast<int*>(base + layout.counts);
  ws.offsets = reinterpret_cast<int*>(base + layout.offsets);
  ws.tile_prefix = reinterpret_cast<int*>(base + layout.tile_prefix);
  ws.local_id = reinterpret_cast<int*>(base + layout.local_id);
  ws.weights = reinterpret_cast<float*>(base + layout.weights);
  ws.rank = reinterpret_cast<int*>(base + layout.rank);
  ws.sorted_slot = reinterpret_cast<int*>(base + layout.sorted_slot);
  ws.pos_of_slot = reinterpret_cast<int*>(base + layout.pos_of_slot);
  ws.h = reinterpret_cast<__nv_bfloat16*>(base + layout.h);
  ws.y = reinterpret_cast<__nv_bfloat16*>(base + layout.y);

  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // The counts start from zero every call: the workspace's contents are unknown.
  cudaError_t status = cudaMemsetAsync(ws.counts, 0, sizeof(int) * kLocal, s);
  if (status != cudaSuccess)
    return ka_fail("%s: clearing the counts: %s", kName, cudaGetErrorString(status));

  const long long route_blocks =
      (tokens + ka_moe_fp8::kRouteThreads - 1) / ka_moe_fp8::kRouteThreads;
  ka_moe_fp8::
      route_kernel<<<static_cast<unsigned>(route_blocks), ka_moe_fp8::kRouteThreads, 0, s>>>(
          ka, ws, tokens);
  if (check_launch("route") != 0) return 1;

  long long permute_blocks = (slots + ka_moe_fp8::kScanThreads - 1) / ka_moe_fp8::kScanThreads;
  if (permute_blocks > 4LL * multiprocessors) permute_blocks = 4LL * multiprocessors;
  if (permute_blocks < 1) permute_blocks = 1;
  ka_moe_fp8::permute_kernel<BM>
      <<<static_cast<unsigned>(permute_blocks), ka_moe_fp8::kScanThreads, 0, s>>>(ws, slots);
  if (check_launch("permute") != 0) return 1;

  long long m_tiles = 0;
  unsigned ctas1 = 0, ctas2 = 0;
  if (ka_moe::grouped_gemm_grids<BM, kLocal>(kName, tokens, slots, Gemm1::kNTiles, Gemm2::kNTiles,
                                             m_tiles, ctas1, ctas2) != 0)
    return 1;
  kGemm1<<<ctas1, Gemm1::kThreads, Gemm1::kSharedBytes, s>>>(ka, ws, static_cast<int>(m_tiles));
  if (check_launch("gate/up GEMM") != 0) return 1;
  kGemm2<<<ctas2, Gemm2::kThreads, Gemm2::kSharedBytes, s>>>(ka, ws, static_cast<int>(m_tiles));
  if (check_launch("down GEMM") != 0) return 1;

  unsigned combine_grid = 0;
  if (ka_moe::combine_blocks<ka_moe_fp8::kCombineThreads>(kName, tokens, combine_grid) != 0)
    return 1;
  ka_moe_fp8::combine_kernel<<<combine_grid, ka_moe_fp8::kCombineThreads, 0, s>>>(ka, ws, tokens);
  return check_launch("combine");
}
