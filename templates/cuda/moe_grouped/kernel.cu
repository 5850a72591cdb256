// Mixture-of-experts forward with grouped tensor-core GEMMs, host side: binds the tensors,
// checks the alignment the 16-byte copies need and the workspace, and launches on the caller's
// stream (moe_route.cuh, moe_gemm.cuh):
//
//   memset counts -> [router_logits] -> route -> permute (+ scan) -> GEMM 1 (gate/up + act)
//   -> GEMM 2 (down) -> combine
//
// The number of M tiles depends on the routing, which only the device knows, so both GEMM grids
// are launched for the upper bound ceil(T*K / BM) + min(E, T*K) (each non-empty expert adds at
// most one partial tile) and the CTAs past the real count return at once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <cstdio>

#include "ka_cuda_entry.h"
#include "ka_problem.h"
#include "kernelarc/abi.h"
#include "moe_gemm.cuh"
#include "moe_route.cuh"

namespace {

using ka_moe::kExperts;
using ka_moe::kHidden;
using ka_moe::kInter;
using ka_moe::kTopK;

// GEMM 1 (gate/up, activation) and GEMM 2 (down); they share BM and WARPS_M, so one M-tile
// schedule serves both.
constexpr auto kGemm1 =
    ka_moe::grouped_gemm_kernel<BM, BN, BK, WARPS_M, WARPS_N, STAGES, true, M_GROUP>;
constexpr auto kGemm2 =
    ka_moe::grouped_gemm_kernel<BM, BN2, BK2, WARPS_M, WARPS_N2, STAGES2, false, M_GROUP>;
using Gemm1 = ka_moe::GemmConfig<BM, BN, BK, WARPS_M, WARPS_N, STAGES, true>;
using Gemm2 = ka_moe::GemmConfig<BM, BN2, BK2, WARPS_M, WARPS_N2, STAGES2, false>;

/// Byte offsets of the workspace's arrays, each 256-aligned, for T tokens. template.json's
/// workspace_bytes, TOKENS * TOP_K * (24 + (INTER + HIDDEN) * ELEM_BYTES) + ROUTER_WEIGHT *
/// TOKENS * EXPERTS * 4 + EXPERTS * 12 + 4096, bounds `total` (11 arrays, under 256 bytes of
/// padding each).
struct Layout {
  size_t counts, offsets, tile_prefix, topk_ids, topk_weights, rank, sorted_slot, pos_of_slot,
      logits, h, y, total;
};

Layout layout_for(long long tokens) {
  const size_t slots = static_cast<size_t>(tokens) * kTopK;
  Layout l;
  size_t at = 0;
  auto take = [&at](size_t bytes) {
    const size_t offset = at;
    at = ka_align256(at + bytes);
    return offset;
  };
  l.counts = take(sizeof(int) * kExperts);
  l.offsets = take(sizeof(int) * (kExperts + 1));
  l.tile_prefix = take(sizeof(int) * (kExperts + 1));
  l.topk_ids = take(sizeof(int) * slots);
  l.topk_weights = take(sizeof(float) * slots);
  l.rank = take(sizeof(int) * slots);
  l.sorted_slot = take(sizeof(int) * slots);
  l.pos_of_slot = take(sizeof(int) * slots);
  l.logits = take(KA_ROUTER_WEIGHT ? sizeof(float) * static_cast<size_t>(tokens) * kExperts : 0);
  l.h = take(sizeof(ka_act_t) * slots * kInter);
  l.y = take(sizeof(ka_act_t) * slots * kHidden);
  l.total = at;
  return l;
}

bool aligned16(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
}

int check_launch(const char* what) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    return ka_fail("moe_grouped: %s launch: %s", what, cudaGetErrorString(status));
  return 0;
}

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  if (const char* message = ka_bind(inputs, n_inputs, outputs, n_outputs, &ka))
    return ka_fail("%s", message);
  (void)cudaGetLastError();  // an earlier call's error is not this call's launch failure
  const long long tokens = ka.tokens();
  if (tokens <= 0) return 0;
  const long long slots = tokens * kTopK;
  if (slots > INT_MAX / 2)
    return ka_fail("moe_grouped: %lld tokens x top_k %d is too many (positions are int)", tokens,
                   kTopK);

  // Rows are copied in 16-byte chunks: every row start must be 16-byte aligned (HIDDEN and
  // INTER are multiples of 8, so the bases decide).
  if (!aligned16(ka.x_row(0)) || !aligned16(ka.out_row(0)))
    return ka_fail("moe_grouped: the hidden states and the output must be 16-byte aligned");
  for (int e = 0; e < kExperts; ++e) {
    if (!aligned16(ka.gate_rows(e)) || !aligned16(ka.up_rows(e)) || !aligned16(ka.down_rows(e)))
      return ka_fail("moe_grouped: expert %d's weights are not 16-byte aligned", e);
#if KA_ROUTER_WEIGHT
    if (!aligned16(ka.router_row(e)))
      return ka_fail("moe_grouped: router row %d is not 16-byte aligned", e);
#endif
  }

  const Layout layout = layout_for(tokens);
  if (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 256 != 0)
    return ka_fail("moe_grouped: the workspace must be 256-byte aligned (got %p)", workspace);
  if (workspace_bytes < layout.total)
    return ka_fail("moe_grouped: the workspace has %zu bytes, %zu are needed for %lld tokens",
                   workspace_bytes, layout.total, tokens);

  int multiprocessors = 0;
  if (ka_prepare_device(multiprocessors, [](int device) {
        cudaError_t status = cudaFuncSetAttribute(
            kGemm1, cudaFuncAttributeMaxDynamicSharedMemorySize, Gemm1::kSharedBytes);
        if (status == cudaSuccess)
          status = cudaFuncSetAttribute(kGemm2, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        Gemm2::kSharedBytes);
        if (status == cudaSuccess) return 0;
        return ka_fail(
            "moe_grouped: preparing the kernels on device %d: %s (%d and %d bytes of shared "
            "memory)",
            device, cudaGetErrorString(status), Gemm1::kSharedBytes, Gemm2::kSharedBytes);
      }) != 0)
    return 1;

  unsigned char* base = static_cast<unsigned char*>(workspace);
  ka_moe::Workspace ws;
  ws.counts = reinterpret_cast<int*>(base + layout.counts);
  ws.offsets = reinterpret_cast<int*>(base + layout.offsets);
  ws.tile_prefix = reinterpret_cast<int*>(base + layout.tile_prefix);
  ws.topk_ids = reinterpret_cast<int*>(base + layout.topk_ids);
  ws.topk_weights = reinterpret_cast<float*>(base + layout.topk_weights);
  ws.rank = reinterpret_cast<int*>(base + layout.rank);
  ws.sorted_slot = reinterpret_cast<int*>(base + layout.sorted_slot);
  ws.pos_of_slot = reinterpret_cast<int*>(base + layout.pos_of_slot);
  ws.logits = KA_ROUTER_WEIGHT ? reinterpret_cast<float*>(base + layout.logits) : nullptr;
  ws.h = reinterpret_cast<ka_act_t*>(base + layout.h);
  ws.y = reinterpret_cast<ka_act_t*>(base + layout.y);

  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // The counts start from zero every call: the workspace's contents are unknown.
  cudaError_t status = cudaMemsetAsync(ws.counts, 0, sizeof(int) * kExperts, s);
  if (status != cudaSuccess)
    return ka_fail("moe_grouped: clearing the counts: %s", cudaGetErrorString(status));

#if KA_ROUTER_WEIGHT
  {
    const long long token_blocks = (tokens + ROUTER_TOKENS - 1) / ROUTER_TOKENS;
    const dim3 grid(static_cast<unsigned>(token_blocks),
                    (kExperts + ka_moe::kRouterWarps - 1) / ka_moe::kRouterWarps);
    ka_moe::router_logits_kernel<<<grid, ka_moe::kRouterWarps * 32, 0, s>>>(ka, ws, tokens);
    if (check_launch("router logits") != 0) return 1;
  }
#endif

  const long long route_blocks = (tokens + ka_moe::kRouteThreads - 1) / ka_moe::kRouteThreads;
  ka_moe::route_kernel<<<static_cast<unsigned>(route_blocks), ka_moe::kRouteThreads, 0, s>>>(
      ka, ws, tokens);
  if (check_launch("route") != 0) return 1;

  long long permute_blocks = (slots + ka_moe::kScanThreads - 1) / ka_moe::kScanThreads;
  if (permute_blocks > 4LL * multiprocessors) permute_blocks = 4LL * multiprocessors;
  if (permute_blocks < 1) permute_blocks = 1;
  ka_moe::permute_kernel<<<static_cast<unsigned>(permute_blocks), ka_moe::kScanThreads, 0, s>>>(
      ws, slots);
  if (check_launch("permute") != 0) return 1;

  const long long m_tiles = (slots + BM - 1) / BM + (slots < kExperts ? slots : kExperts);
  const long long ctas1 = m_tiles * ((kInter + BN - 1) / BN);
  const long long ctas2 = m_tiles * ((kHidden + BN2 - 1) / BN2);
  if (ctas1 > INT_MAX || ctas2 > INT_MAX)
    return ka_fail("moe_grouped: %lld tokens are too many for the GEMM grids", tokens);
  kGemm1<<<static_cast<unsigned>(ctas1), Gemm1::kThreads, Gemm1::kSharedBytes, s>>>(
      ka, ws, static_cast<int>(m_tiles));
  if (check_launch("gate/up GEMM") != 0) return 1;
  kGemm2<<<static_cast<unsigned>(ctas2), Gemm2::kThreads, Gemm2::kSharedBytes, s>>>(
      ka, ws, static_cast<int>(m_tiles));
  if (check_launch("down GEMM") != 0) return 1;

  const long long combine_threads = tokens * (kHidden / 8);
  const long long combine_blocks =
      (combine_threads + ka_moe::kCombineThreads - 1) / ka_moe::kCombineThreads;
  if (combine_blocks > INT_MAX) return ka_fail("moe_grouped: %lld tokens are too many", tokens);
  ka_moe::combine_kernel<<<static_cast<unsigned>(combine_blocks), ka_moe::kCombineThreads, 0, s>>>(
      ka, ws, tokens);
  return check_launch("combine");
}
