// moe_fp8_grouped's sizes and checks, the workspace as its kernels see it, and the kernels around
// the two grouped GEMMs (moe_fp8_gemm.cuh):
//
//  route_kernel    a thread per token: its KA_EXPERTS logits, ka_moe_route (the family's one
//                  routing rule, over every routed expert), then for each of its top-k slots the
//                  local expert le = id - ka.local_offset() when 0 <= le < KA_LOCAL_EXPERTS (else
//                  -1: the slot has no rows and adds nothing), the weight, and a local slot's rank
//                  in its expert (an int atomicAdd on the expert's count).
//  permute_kernel  every CTA scans the KA_LOCAL_EXPERTS counts (scan_expert_counts,
//                  ka_moe_grouped.cuh: offsets and the M-tile prefix of ceil(count / BM)); CTA 0
//                  writes them for the GEMMs; each local slot goes to offsets[le] + rank:
//                  sorted_slot[pos] = slot, pos_of_slot[slot] = pos (-1 for a slot not local).
//  combine_kernel  out[t] = sum over the token's local slots, in k order, of weight_k * y[pos],
//                  float32, rounded once (zeros for a token with no local slot); a thread per 8
//                  output elements (combine_pack8, ka_moe_grouped.cuh).
//
// Sorted positions count local slots only. Within an expert their order depends on the atomics,
// but no result does: every GEMM row is computed on its own, in one K order, and the combine is
// per token.
#pragma once

#include <cuda_bf16.h>

#include "ka_moe_grouped.cuh"
#include "ka_moe_routing.h"
#include "ka_problem.h"

#if !defined(KA_FP8) || !KA_FP8
#error "moe_fp8_grouped serves FP8 block-scaled problems only (knobs.json: FP8 == 1)"
#endif
#if KA_ROUTER_WEIGHT
#error "moe_fp8_grouped reads router logits (knobs.json: ROUTER_WEIGHT == 0)"
#endif

namespace ka_moe_fp8 {

using ka_moe::kExperts;
using ka_moe::kHidden;
using ka_moe::kInter;
using ka_moe::kTopK;

constexpr int kLocal = KA_LOCAL_EXPERTS;  // experts whose weights this call holds
constexpr int kBlock = KA_SCALE_BLOCK;    // the scale blocks' edge

static_assert(sizeof(ka_act_t) == 1 && sizeof(ka_w_t) == 1,
              "moe_fp8_grouped: hidden states and weights are float8_e4m3fn bytes");
static_assert(sizeof(ka_out_t) == 2 || sizeof(ka_out_t) == 4,
              "moe_fp8_grouped: the output is a 16- or 32-bit float (combine_pack8's packs)");
static_assert(kBlock == 128, "moe_fp8_grouped: 128x128 weight blocks and 1x128 activation blocks");
static_assert(kHidden % kBlock == 0 && kInter % kBlock == 0,
              "moe_fp8_grouped: whole scale blocks (knobs.json: HIDDEN % 128 == 0 and INTER % 128 "
              "== 0)");
static_assert(kLocal >= 1 && kLocal <= kExperts, "1 <= LOCAL_EXPERTS <= EXPERTS");
static_assert(kTopK >= 1 && kTopK <= kExperts, "1 <= TOP_K <= EXPERTS");

constexpr int kRouteThreads = 128;
constexpr int kScanThreads = 256;
constexpr int kCombineThreads = 256;

/// The workspace as the kernels see it (kernel.cu's Layout places it). Sorted positions ("rows")
/// number the local (token, k) slots expert by expert: local expert le owns the segment
/// [offsets[le], offsets[le + 1]) and the M tiles [tile_prefix[le], tile_prefix[le + 1]).
struct Workspace {
  int* counts;       // [L] local slots routed to each local expert (zeroed by the host)
  int* offsets;      // [L + 1] exclusive prefix sums of counts
  int* tile_prefix;  // [L + 1] exclusive prefix sums of ceil(counts / BM): the M-tile schedule
  int* local_id;     // [T * K] local expert of slot t * K + k, -1 when it is not local
  float* weights;    // [T * K] routing weight of the slot
  int* rank;         // [T * K] a local slot's place inside its expert's segment
  int* sorted_slot;  // [T * K] slot at each sorted position (the first offsets[L] are used)
  int* pos_of_slot;  // [T * K] sorted position of each slot, -1 when it is not local
  __nv_bfloat16* h;  // [T * K, I] act(x W_gate^T) * (x W_up^T), by sorted position
  __nv_bfloat16* y;  // [T * K, H] h W_down^T, by sorted position
};

__global__ void __launch_bounds__(kRouteThreads)
    route_kernel(KaArgs ka, Workspace ws, long long tokens) {
  const long long t = static_cast<long long>(blockIdx.x) * kRouteThreads + threadIdx.x;
  if (t >= tokens) return;
  float logits[kExperts];
  for (int e = 0; e < kExperts; ++e) logits[e] = ka.logit(t, e);
  int ids[kTopK];
  float weights[kTopK];
  ka_moe_route(ka, logits, ids, weights);
  const int offset = ka.local_offset();
#pragma unroll
  for (int k = 0; k < kTopK; ++k) {
    const long long slot = t * kTopK + k;
    const int le = ids[k] - offset;
    const bool local = le >= 0 && le < kLocal;
    ws.local_id[slot] = local ? le : -1;
    ws.weights[slot] = weights[k];
    ws.rank[slot] = local ? atomicAdd(&ws.counts[le], 1) : 0;
  }
}

template <int kBM>
__global__ void __launch_bounds__(kScanThreads) permute_kernel(Workspace ws, long long slots) {
  __shared__ int s_offset[kLocal + 1];
  ka_moe::scan_expert_counts<kLocal, kBM, kScanThreads>(ws.counts, s_offset, ws.offsets,
                                                        ws.tile_prefix, blockIdx.x == 0);
  for (long long s = static_cast<long long>(blockIdx.x) * kScanThreads + threadIdx.x; s < slots;
       s += static_cast<long long>(gridDim.x) * kScanThreads) {
    const int le = ws.local_id[s];
    if (le < 0) {
      ws.pos_of_slot[s] = -1;
      continue;
    }
    const int pos = s_offset[le] + ws.rank[s];
    ws.sorted_slot[pos] = static_cast<int>(s);
    ws.pos_of_slot[s] = pos;
  }
}

__global__ void __launch_bounds__(kCombineThreads)
    combine_kernel(KaArgs ka, Workspace ws, long long tokens) {
  ka_moe::combine_pack8<kCombineThreads>(
      tokens,
      [&](long long slot, int c, float(&acc)[8]) {
        const int pos = ws.pos_of_slot[slot];
        if (pos < 0) return;  // not a local expert: nothing to add
        const float weight = ws.weights[slot];
        const ka_moe::Pack8<__nv_bfloat16> y =
            *reinterpret_cast<const ka_moe::Pack8<__nv_bfloat16>*>(
                ws.y + static_cast<long long>(pos) * kHidden + c);
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[j] += weight * __bfloat162float(y.v[j]);
      },
      [&](long long t) { return ka.out_row(t); });
}

}  // namespace ka_moe_fp8
