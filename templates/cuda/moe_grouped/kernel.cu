// Mixture-of-experts forward with grouped tensor-core GEMMs, host side: binds the tensors,
// checks the alignment the 16-byte copies need and the workspace, and launches on the caller's
// stream (moe_route.cuh, ka_moe_gemm.cuh):
//
//   memset counts -> [router_logits] -> route -> permute (+ scan) -> GEMM 1 (gate/up + act)
//   -> GEMM 2 (down) -> combine
//
// The number of M tiles depends on the routing, which only the device knows, so both GEMM grids
// are launched for the upper bound ceil(T*K / BM) + min(E, T*K) (each non-empty expert adds at
// most one partial tile) and the CTAs past the real count return at once.
//
// MATMUL_LIBRARY = 1 replaces the two grouped GEMMs with cuBLASLt's, expert by expert:
//
//   ... permute -> gather x by sorted position -> (the segments' offsets to the host: the
//   stream is synchronized here, as an eager loop over experts is) -> per expert gu = xs w13^T
//   -> h = act(g) * u in place over all rows -> per expert y = h w_down^T -> combine
//
// which pays where each expert holds many rows (prefill over a few large experts): cuBLASLt's
// GEMMs run near the tensor cores' peak there, and the host's wait and the per-expert calls cost
// microseconds against milliseconds. The search measures both routes per shape.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "ka_cuda_entry.h"
#include "ka_moe_gemm.cuh"
#include "ka_problem.h"
#if MATMUL_LIBRARY
// Every expert's two (three when gate and up rows lie apart) products have their own M.
#define KA_LT_MAX_PLANS (3 * KA_EXPERTS + 16)
#include "ka_moe_lt.cuh"
#endif
#include "kernelarc/abi.h"
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
/// workspace_bytes, TOKENS * TOP_K * (24 + ((1 + MATMUL_LIBRARY) * INTER + HIDDEN) * ELEM_BYTES)
/// + ROUTER_WEIGHT * TOKENS * EXPERTS * 4 + EXPERTS * 12 + 4096 + MATMUL_LIBRARY * (32 MiB +
/// 1024), bounds `total` (12 arrays, under 256 bytes of padding each). The library route's h
/// holds both products, [T * K, 2 I] (h is formed in place over g), and its y first holds the
/// gathered x, [T * K, H].
struct Layout {
  size_t counts, offsets, tile_prefix, topk_ids, topk_weights, rank, sorted_slot, pos_of_slot,
      logits, h, y, lt_scratch, total;
};

Layout layout_for(long long tokens) {
  const size_t slots = static_cast<size_t>(tokens) * kTopK;
  Layout l;
  ka_moe::WorkspaceCarver carver;
  l.counts = carver.take(sizeof(int) * kExperts);
  l.offsets = carver.take(sizeof(int) * (kExperts + 1));
  l.tile_prefix = carver.take(sizeof(int) * (kExperts + 1));
  l.topk_ids = carver.take(sizeof(int) * slots);
  l.topk_weights = carver.take(sizeof(float) * slots);
  l.rank = carver.take(sizeof(int) * slots);
  l.sorted_slot = carver.take(sizeof(int) * slots);
  l.pos_of_slot = carver.take(sizeof(int) * slots);
  l.logits =
      carver.take(KA_ROUTER_WEIGHT ? sizeof(float) * static_cast<size_t>(tokens) * kExperts : 0);
  l.h = carver.take(sizeof(ka_act_t) * slots * kInter * (MATMUL_LIBRARY ? 2 : 1));
  l.y = carver.take(sizeof(ka_act_t) * slots * kHidden);
#if MATMUL_LIBRARY
  l.lt_scratch = carver.take(ka_moe::kLtScratchBytes);
#else
  l.lt_scratch = 0;
#endif
  l.total = carver.at;
  return l;
}

constexpr const char* kName = "moe_grouped";

int check_launch(const char* what) {
  return ka_moe::check_launch(kName, what);
}

#if MATMUL_LIBRARY
constexpr int kGatherThreads = 256;

/// xs[pos] = x[token of the slot at sorted position pos], a thread per 8 elements.
__global__ void __launch_bounds__(kGatherThreads)
    gather_rows_kernel(KaArgs ka, ka_moe::Workspace ws, ka_act_t* xs, long long slots) {
  using Pack = ka_moe::Pack8<ka_act_t>;
  constexpr long long kPacksPerRow = kHidden / 8;
  const long long i = static_cast<long long>(blockIdx.x) * kGatherThreads + threadIdx.x;
  if (i >= slots * kPacksPerRow) return;
  const long long pos = i / kPacksPerRow, c = (i % kPacksPerRow) * 8;
  const long long token = ws.sorted_slot[pos] / kTopK;
  *reinterpret_cast<Pack*>(xs + pos * kHidden + c) =
      *reinterpret_cast<const Pack*>(ka.x_row(token) + c);
}

/// GEMM 1 and 2 through cuBLASLt, expert by expert, after the permute: ws.y first holds the
/// gathered rows of x, ws.h is [slots, 2 I] (the gate and up products, h formed over g).
int library_gemms(const KaArgs& ka, const ka_moe::Workspace& ws, long long slots, void* scratch,
                  cudaStream_t s) {
  ka_act_t* xs = ws.y;
  {
    const long long blocks = (slots * (kHidden / 8) + kGatherThreads - 1) / kGatherThreads;
    if (blocks > INT_MAX) return ka_fail("%s: %lld slots are too many", kName, slots);
    gather_rows_kernel<<<static_cast<unsigned>(blocks), kGatherThreads, 0, s>>>(ka, ws, xs, slots);
    if (check_launch("gather") != 0) return 1;
  }
  // cuBLASLt takes each product's M from the host.
  int offsets[kExperts + 1];
  cudaError_t status =
      cudaMemcpyAsync(offsets, ws.offsets, sizeof(offsets), cudaMemcpyDeviceToHost, s);
  if (status == cudaSuccess) status = cudaStreamSynchronize(s);
  if (status != cudaSuccess)
    return ka_fail("%s: reading the experts' segments: %s", kName, cudaGetErrorString(status));

  // Every expert's products run the kernels cuBLASLt picks for the mean rows an expert gets, a
  // count fixed by the token count: the routing moves each product's M (its grid), not its code.
  const long long typical_rows = (slots + kExperts - 1) / kExperts;
  const auto product = [typical_rows](const ka_act_t* a, long long lda, const ka_w_t* b,
                                      ka_act_t* d, long long ldd, long long rows, long long n,
                                      long long k) {
    KaLtMatmul call = ka_moe::rows_times_weights(a, lda, b, d, ldd, rows, n, k);
    call.algo_m = typical_rows;
    return call;
  };
  constexpr long long kWide = 2LL * kInter;
  const long long expert_rows = static_cast<long long>(kInter) * kHidden;
  // Columns [0, I) and [I, 2I) of a row hold g and u, in w13's order where expert 0's gate and up
  // rows are one block. An expert whose rows lie that way takes one product; any other, two.
  const long long gate_at = ka.gate_rows(0) == ka.up_rows(0) + expert_rows ? kInter : 0;
  const long long up_at = kInter - gate_at;
  for (int e = 0; e < kExperts; ++e) {
    const long long begin = offsets[e], rows = offsets[e + 1] - offsets[e];
    if (rows <= 0) continue;
    const ka_act_t* a = xs + begin * kHidden;
    ka_act_t* d = ws.h + begin * kWide;
    const ka_w_t* first = gate_at == 0 ? ka.gate_rows(e) : ka.up_rows(e);
    const ka_w_t* second = gate_at == 0 ? ka.up_rows(e) : ka.gate_rows(e);
    int failed = 0;
    if (second == first + expert_rows) {
      failed = ka_moe::run_lt_product(
          kName, product(a, kHidden, first, d, kWide, rows, kWide, kHidden), "gate/up", scratch, s);
    } else {
      failed =
          ka_moe::run_lt_product(
              kName,
              product(a, kHidden, ka.gate_rows(e), d + gate_at, kWide, rows, kInter, kHidden),
              "gate", scratch, s) ||
          ka_moe::run_lt_product(
              kName, product(a, kHidden, ka.up_rows(e), d + up_at, kWide, rows, kInter, kHidden),
              "up", scratch, s);
    }
    if (failed) return 1;
  }
  ka_act_t* h = ws.h + gate_at;
  if (ka_moe::gated_activation(kName, h, ws.h + up_at, h, slots, kWide, s) != 0) return 1;
  for (int e = 0; e < kExperts; ++e) {
    const long long begin = offsets[e], rows = offsets[e + 1] - offsets[e];
    if (rows <= 0) continue;
    if (ka_moe::run_lt_product(kName,
                               product(h + begin * kWide, kWide, ka.down_rows(e),
                                       ws.y + begin * kHidden, kHidden, rows, kHidden, kInter),
                               "down", scratch, s) != 0)
      return 1;
  }
  return 0;
}
#endif

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  long long tokens = 0, slots = 0;
  if (ka_moe::begin_call(kName, inputs, n_inputs, outputs, n_outputs, ka, tokens, slots) != 0)
    return 1;
  if (tokens <= 0) return 0;

  // Rows are copied in 16-byte chunks (HIDDEN and INTER are multiples of 8).
  if (ka_moe::check_rows_aligned<kExperts>(kName, ka) != 0) return 1;
#if KA_ROUTER_WEIGHT
  for (int e = 0; e < kExperts; ++e)
    if (!ka_moe::aligned16(ka.router_row(e)))
      return ka_fail("moe_grouped: router row %d is not 16-byte aligned", e);
#endif

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

#if MATMUL_LIBRARY
  if (library_gemms(ka, ws, slots, base + layout.lt_scratch, s) != 0) return 1;
#else
  long long m_tiles = 0;
  unsigned ctas1 = 0, ctas2 = 0;
  if (ka_moe::grouped_gemm_grids<BM>(kName, tokens, slots, (kInter + BN - 1) / BN,
                                     (kHidden + BN2 - 1) / BN2, m_tiles, ctas1, ctas2) != 0)
    return 1;
  kGemm1<<<ctas1, Gemm1::kThreads, Gemm1::kSharedBytes, s>>>(ka, ws, static_cast<int>(m_tiles));
  if (check_launch("gate/up GEMM") != 0) return 1;
  kGemm2<<<ctas2, Gemm2::kThreads, Gemm2::kSharedBytes, s>>>(ka, ws, static_cast<int>(m_tiles));
  if (check_launch("down GEMM") != 0) return 1;
#endif

  unsigned combine_grid = 0;
  if (ka_moe::combine_blocks<ka_moe::kCombineThreads>(kName, tokens, combine_grid) != 0) return 1;
  ka_moe::combine_kernel<<<combine_grid, ka_moe::kCombineThreads, 0, s>>>(ka, ws, tokens);
  return check_launch("combine");
}
