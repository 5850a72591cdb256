// The experts' backward pass of a mixture-of-experts layer with grouped tensor-core GEMMs, host
// side: binds the tensors, checks the workspace, and launches on the caller's stream
// (moe_bwd_route.cuh, moe_bwd_gemm.cuh, moe_bwd_wgrad.cuh):
//
//   count -> place (stable sort of the routed slots by expert, M-tile schedule)
//   -> GEMM 1 (g, u recomputed and d = dy W_down at once; the activation's backward in the
//      epilogue gives dg, du, w h and the routing-gradient partials)
//   -> GEMM 2 (dx per slot = dg W_gate + du W_up) -> GEMM 3 (dW_gate, dW_up; then dW_down)
//   -> combine (dx per token, k order) -> routing gradient
//
// No float atomics anywhere and every sum in one order, so every run gives the same bits. The
// number of M tiles of GEMM 1 and 2 depends on the routing, which only the device knows, so
// their grids are launched for the upper bound ceil(S / BM) + min(E, S) and the CTAs past the
// real count return at once (ka_moe_grouped.cuh).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "ka_cuda_entry.h"
#include "ka_problem.h"
#include "kernelarc/abi.h"
#include "moe_bwd_route.cuh"
#include "moe_bwd_wgrad.cuh"

namespace {

using ka_moe::kExperts;
using ka_moe::kHidden;
using ka_moe::kInter;
using ka_moe::kTopK;

using Gemm1 = ka_moe::Gemm1Config<BM, BN, BK, WARPS_M, WARPS_N, STAGES>;
using Gemm2 = ka_moe::Gemm2Config<BM, BN2, BK2, WARPS_M, WARPS_N2, STAGES2>;
using WgradGateUp = ka_moe::WgradConfig<false, BM3, BN3, BK3, WARPS_M3, WARPS_N3, STAGES3>;
using WgradDown = ka_moe::WgradConfig<true, BM3, BN3, BK3, WARPS_M3, WARPS_N3, STAGES3>;
constexpr auto kGemm1 = ka_moe::dgrad_act_kernel<BM, BN, BK, WARPS_M, WARPS_N, STAGES, M_GROUP>;
constexpr auto kGemm2 = ka_moe::dx_kernel<BM, BN2, BK2, WARPS_M, WARPS_N2, STAGES2, M_GROUP>;
constexpr auto kWgradGateUp =
    ka_moe::wgrad_kernel<false, BM3, BN3, BK3, WARPS_M3, WARPS_N3, STAGES3>;
constexpr auto kWgradDown = ka_moe::wgrad_kernel<true, BM3, BN3, BK3, WARPS_M3, WARPS_N3, STAGES3>;

/// Byte offsets of the workspace's arrays, each 256-aligned, for T tokens. template.json's
/// workspace_bytes bounds `total`: TOKENS * TOP_K * (20 + 6 * INTER * ELEM_BYTES + HIDDEN * 4 +
/// (INTER // 32 + 1) * 4) for the per-slot arrays (dg, du and w h in two 16-bit parts each;
/// GEMM 1's N tiles are at most INTER // 32 + 1, BN >= 32), (TOKENS * TOP_K // 256 + 1) *
/// EXPERTS * 4 for the chunk counts, EXPERTS * 8 + 8 for the segments and 4096 for the padding
/// (16 arrays, under 256 bytes each).
struct Layout {
  size_t offsets, tile_prefix, chunk_counts, topk_ids, topk_weights, chunk_rank, sorted_slot,
      pos_of_slot, dg, du, hw, dg_lo, du_lo, hw_lo, dx_part, route_part, total;
};

Layout layout_for(long long slots, long long chunks) {
  const size_t s = static_cast<size_t>(slots);
  Layout l;
  ka_moe::WorkspaceCarver carver;
  l.offsets = carver.take(sizeof(int) * (kExperts + 1));
  l.tile_prefix = carver.take(sizeof(int) * (kExperts + 1));
  l.chunk_counts = carver.take(sizeof(int) * static_cast<size_t>(chunks) * kExperts);
  l.topk_ids = carver.take(sizeof(int) * s);
  l.topk_weights = carver.take(sizeof(float) * s);
  l.chunk_rank = carver.take(sizeof(int) * s);
  l.sorted_slot = carver.take(sizeof(int) * s);
  l.pos_of_slot = carver.take(sizeof(int) * s);
  l.dg = carver.take(sizeof(ka_act_t) * s * kInter);
  l.du = carver.take(sizeof(ka_act_t) * s * kInter);
  l.hw = carver.take(sizeof(ka_act_t) * s * kInter);
  l.dg_lo = carver.take(sizeof(ka_act_t) * s * kInter);
  l.du_lo = carver.take(sizeof(ka_act_t) * s * kInter);
  l.hw_lo = carver.take(sizeof(ka_act_t) * s * kInter);
  l.dx_part = carver.take(sizeof(float) * s * kHidden);
  l.route_part = carver.take(KA_HAS_GRAD_ROUTING ? sizeof(float) * s * Gemm1::kNTiles : 0);
  l.total = carver.at;
  return l;
}

constexpr const char* kName = "moe_backward";

int check_launch(const char* what) {
  return ka_moe::check_launch(kName, what);
}

int prepare(int device) {
  const ka_moe::SharedKernel kernels[] = {
      {reinterpret_cast<const void*>(kGemm1), Gemm1::kSharedBytes},
      {reinterpret_cast<const void*>(kGemm2), Gemm2::kSharedBytes},
      {reinterpret_cast<const void*>(kWgradGateUp), WgradGateUp::kSharedBytes},
      {reinterpret_cast<const void*>(kWgradDown), WgradDown::kSharedBytes}};
  return ka_moe::prepare_kernels(kName, device, kernels);
}

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  long long tokens = 0, slots = 0;
  if (ka_moe::begin_call(kName, inputs, n_inputs, outputs, n_outputs, ka, tokens, slots) != 0)
    return 1;
  if (tokens <= 0) return 0;
  const long long chunks = (slots + ka_moe::kChunk - 1) / ka_moe::kChunk;

  const Layout layout = layout_for(slots, chunks);
  if (ka_moe::check_workspace(kName, workspace, workspace_bytes, layout.total, tokens) != 0)
    return 1;

  int multiprocessors = 0;
  if (ka_prepare_device(multiprocessors, prepare) != 0) return 1;

  unsigned char* base = static_cast<unsigned char*>(workspace);
  ka_moe::Workspace ws;
  ws.offsets = reinterpret_cast<int*>(base + layout.offsets);
  ws.tile_prefix = reinterpret_cast<int*>(base + layout.tile_prefix);
  ws.chunk_counts = reinterpret_cast<int*>(base + layout.chunk_counts);
  ws.topk_ids = reinterpret_cast<int*>(base + layout.topk_ids);
  ws.topk_weights = reinterpret_cast<float*>(base + layout.topk_weights);
  ws.chunk_rank = reinterpret_cast<int*>(base + layout.chunk_rank);
  ws.sorted_slot = reinterpret_cast<int*>(base + layout.sorted_slot);
  ws.pos_of_slot = reinterpret_cast<int*>(base + layout.pos_of_slot);
  ws.dg = reinterpret_cast<ka_act_t*>(base + layout.dg);
  ws.du = reinterpret_cast<ka_act_t*>(base + layout.du);
  ws.hw = reinterpret_cast<ka_act_t*>(base + layout.hw);
  ws.dg_lo = reinterpret_cast<ka_act_t*>(base + layout.dg_lo);
  ws.du_lo = reinterpret_cast<ka_act_t*>(base + layout.du_lo);
  ws.hw_lo = reinterpret_cast<ka_act_t*>(base + layout.hw_lo);
  ws.dx_part = reinterpret_cast<float*>(base + layout.dx_part);
  ws.route_part = reinterpret_cast<float*>(base + layout.route_part);

  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  ka_moe::count_kernel<<<static_cast<unsigned>(chunks), ka_moe::kChunk, 0, s>>>(ka, ws, slots);
  if (check_launch("count") != 0) return 1;
  ka_moe::place_kernel<<<static_cast<unsigned>(chunks), ka_moe::kChunk, 0, s>>>(
      ws, slots, static_cast<int>(chunks));
  if (check_launch("place") != 0) return 1;

  long long m_tiles = 0;
  unsigned ctas1 = 0, ctas2 = 0;
  if (ka_moe::grouped_gemm_grids<BM>(kName, tokens, slots, Gemm1::kNTiles, Gemm2::kNTiles, m_tiles,
                                     ctas1, ctas2) != 0)
    return 1;
  kGemm1<<<ctas1, Gemm1::kThreads, Gemm1::kSharedBytes, s>>>(ka, ws, static_cast<int>(m_tiles));
  if (check_launch("GEMM 1 (d(down) input and the activation's backward)") != 0) return 1;
  kGemm2<<<ctas2, Gemm2::kThreads, Gemm2::kSharedBytes, s>>>(ka, ws, static_cast<int>(m_tiles));
  if (check_launch("GEMM 2 (dx)") != 0) return 1;

  const dim3 grid_gate_up(WgradGateUp::kMTiles * WgradGateUp::kNTiles, kExperts);
  kWgradGateUp<<<grid_gate_up, WgradGateUp::kThreads, WgradGateUp::kSharedBytes, s>>>(ka, ws);
  if (check_launch("GEMM 3 (dW_gate, dW_up)") != 0) return 1;
  const dim3 grid_down(WgradDown::kMTiles * WgradDown::kNTiles, kExperts);
  kWgradDown<<<grid_down, WgradDown::kThreads, WgradDown::kSharedBytes, s>>>(ka, ws);
  if (check_launch("GEMM 3 (dW_down)") != 0) return 1;

  unsigned combine_grid = 0;
  if (ka_moe::combine_blocks<ka_moe::kCombineThreads>(kName, tokens, combine_grid) != 0) return 1;
  ka_moe::combine_kernel<<<combine_grid, ka_moe::kCombineThreads, 0, s>>>(ka, ws, tokens);
  if (check_launch("combine") != 0) return 1;
#if KA_HAS_GRAD_ROUTING
  const long long route_blocks =
      (slots + ka_moe::kRouteGradThreads - 1) / ka_moe::kRouteGradThreads;
  ka_moe::route_grad_kernel<Gemm1::kNTiles>
      <<<static_cast<unsigned>(route_blocks), ka_moe::kRouteGradThreads, 0, s>>>(ka, ws, slots);
  if (check_launch("routing gradient") != 0) return 1;
#endif
  return 0;
}
