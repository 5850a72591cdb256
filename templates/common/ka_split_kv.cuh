// Split-KV ("flash decoding") pieces shared by the CUDA decode templates (attention_decode,
// attention_decode_nvfp4): a CTA per (sequence, kv head, split), float32 partials of the splits
// in the workspace, merged by the log-sum-exp rule. Here: the workspace's layout and the host's
// bound S on the splits, a sequence's real split count (the host does not read kv_len, so every
// kernel derives it on the device, and they all must agree), the online softmax of a warp's
// lane groups on the CUDA cores, the merge of a CTA's warps into its split's result, and the
// combine of a head's splits, with the combine kernel.
//
// Include after ka_problem.h (KaArgs, the KA_ shape macros) in the template's one translation
// unit; it reads the templates' common knobs CTAS_PER_SM, MIN_SPLIT_TOKENS and MAX_REGS.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "ka_cuda_entry.h"
#include "ka_problem.h"
#include "ka_softmax_base2.cuh"

/// The split kernels' __launch_bounds__. MAX_REGS > 0 asks for as many CTAs per multiprocessor as
/// the register file holds at MAX_REGS registers a thread, which holds the compiler to about that
/// many (spilling if it must); 0 leaves the count to the compiler. CTAS_PER_SM sets only the split
/// count, and occupancy is whatever the registers allow, so the search needs this lever to trade
/// registers for more CTAs in flight on a memory-bound decode.
#if MAX_REGS > 0
#define KA_SPLIT_KERNEL_BOUNDS(threads) \
  __launch_bounds__(threads, 65536 / ((threads)*MAX_REGS) > 1 ? 65536 / ((threads)*MAX_REGS) : 1)
#else
#define KA_SPLIT_KERNEL_BOUNDS(threads) __launch_bounds__(threads)
#endif

namespace ka_split_kv {

constexpr int kMaxSplits = 128;  // splits per sequence (the workspace_bytes expressions assume it)

constexpr int kCombineThreads = 128;

/// Where the partial results go; `splits` is the host's split bound S (the partials' stride).
struct Workspace {
  unsigned* counters;  // one per (sequence, kv head), for a merge by the last CTA to finish
  float* lse;  // [B][Q_HEADS][S]: log2-domain lse of the split's scaled logits, -inf if empty
  float* o;    // [B][Q_HEADS][S][HEAD_DIM]: the split's normalised output acc / l
  int splits;
};

// ---------------------------------------------------------------------------------------------
// Host side.

/// The workspace layout for `splits` splits: the counters (when asked for), then lse, then o,
/// each 256-aligned.
struct Layout {
  size_t lse_offset, o_offset, total;
};

inline Layout layout_for(long long batch, bool counters, int splits) {
  const size_t heads = static_cast<size_t>(batch) * KA_Q_HEADS;
  Layout layout;
  layout.lse_offset =
      counters ? ka_align256(static_cast<size_t>(batch) * KA_KV_HEADS * sizeof(unsigned)) : 0;
  layout.o_offset = layout.lse_offset + ka_align256(heads * splits * sizeof(float));
  layout.total = layout.o_offset + heads * splits * KA_HEAD_DIM * sizeof(float);
  return layout;
}

/// The split bound S: CTAS_PER_SM CTAs per multiprocessor over batch x KV_HEADS heads, at most
/// kMaxSplits, and only as many as the workspace holds (1 = no partials, no combine).
inline int plan_splits(long long batch, bool counters, int multiprocessors, const void* workspace,
                       size_t workspace_bytes) {
  if (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 16 != 0) return 1;
  const long long heads = batch * KA_KV_HEADS;
  const long long target = static_cast<long long>(multiprocessors) * CTAS_PER_SM;
  long long splits = (target + heads - 1) / heads;
  if (splits > kMaxSplits) splits = kMaxSplits;
  while (splits > 1 &&
         layout_for(batch, counters, static_cast<int>(splits)).total > workspace_bytes)
    --splits;
  return splits < 1 ? 1 : static_cast<int>(splits);
}

/// Plans a call: the split bound S (ws.splits), the partials' places in `workspace` (none with
/// S = 1: the split kernel then writes the output itself) and the split kernel's CTA count,
/// batch x KV_HEADS x S. 0, or ka_fail's 1 naming `template_name` when that grid or the combine
/// kernel's (batch x Q_HEADS) is too large.
inline int plan(long long batch, bool counters, int multiprocessors, void* workspace,
                size_t workspace_bytes, const char* template_name, Workspace& ws,
                unsigned& split_ctas) {
  const int splits = plan_splits(batch, counters, multiprocessors, workspace, workspace_bytes);
  ws = Workspace{nullptr, nullptr, nullptr, splits};
  if (splits > 1) {
    const Layout layout = layout_for(batch, counters, splits);
    unsigned char* base = static_cast<unsigned char*>(workspace);
    if (counters) ws.counters = reinterpret_cast<unsigned*>(base);
    ws.lse = reinterpret_cast<float*>(base + layout.lse_offset);
    ws.o = reinterpret_cast<float*>(base + layout.o_offset);
  }
  const long long ctas = batch * KA_KV_HEADS * splits;
  if (ctas > INT32_MAX || batch * KA_Q_HEADS > INT32_MAX)
    return ka_fail("%s: batch %lld is too large for the grid", template_name, batch);
  split_ctas = static_cast<unsigned>(ctas);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Device side.

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

/// One lane's share of a warp's online softmax (log2 units, float32) over kGroup query heads,
/// on the CUDA cores: groups of kLanes lanes take a key row each, and every lane holds the same
/// kElems elements of its group's rows. q is the caller's (its elements times softmax scale
/// times log2(e)); reset() starts the rest.
template <int kLanes, int kGroup, int kElems>
struct LaneSoftmax {
  float q[kGroup][kElems];
  float acc[kGroup][kElems];  // unnormalised output
  float m[kGroup];
  float l[kGroup];

  __device__ __forceinline__ void reset() {
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
#pragma unroll
      for (int e = 0; e < kElems; ++e) acc[g][e] = 0.f;
      m[g] = -INFINITY;
      l[g] = 0.f;
    }
  }

  /// The row's logits q . k * k_scale, summed over the group's lanes. Every lane calls it
  /// (the shuffles need the whole warp), also a group whose row does not exist.
  __device__ __forceinline__ void logits(const float (&k)[kElems], float k_scale,
                                         float (&dot)[kGroup]) const {
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      float sum = 0.f;
#pragma unroll
      for (int e = 0; e < kElems; ++e) sum = fmaf(q[g][e], k[e], sum);
      dot[g] = sum * k_scale;
    }
    // Xor offsets < kLanes stay inside the group.
#pragma unroll
    for (int offset = kLanes / 2; offset > 0; offset /= 2)
#pragma unroll
      for (int g = 0; g < kGroup; ++g) dot[g] += __shfl_xor_sync(0xffffffffu, dot[g], offset);
  }

  /// Adds a key with logits `dot` and value row v * v_scale.
  __device__ __forceinline__ void add(const float (&dot)[kGroup], const float (&v)[kElems],
                                      float v_scale) {
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      const float s = dot[g];
      if (s > m[g]) {  // new max: rescale (m = -inf gives alpha = 0 with l and acc still 0)
        const float alpha = ka_fast_exp2(m[g] - s);
        l[g] *= alpha;
#pragma unroll
        for (int e = 0; e < kElems; ++e) acc[g][e] *= alpha;
        m[g] = s;
      }
      const float p = ka_fast_exp2(s - m[g]);
      l[g] += p;
      const float weight = p * v_scale;
#pragma unroll
      for (int e = 0; e < kElems; ++e) acc[g][e] = fmaf(weight, v[e], acc[g][e]);
    }
  }

  /// Merges the warp's lane groups (xor offsets >= kLanes pair lanes holding the same
  /// elements): every group then holds the warp's state.
  __device__ __forceinline__ void merge_groups() {
#pragma unroll
    for (int offset = kLanes; offset < 32; offset *= 2) {
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m[g], offset);
        const float l2 = __shfl_xor_sync(0xffffffffu, l[g], offset);
        const float mx = fmaxf(m[g], m2);
        const float w1 = m[g] == -INFINITY ? 0.f : ka_fast_exp2(m[g] - mx);
        const float w2 = m2 == -INFINITY ? 0.f : ka_fast_exp2(m2 - mx);
        l[g] = l[g] * w1 + l2 * w2;
#pragma unroll
        for (int e = 0; e < kElems; ++e) {
          const float a2 = __shfl_xor_sync(0xffffffffu, acc[g][e], offset);
          acc[g][e] = acc[g][e] * w1 + a2 * w2;
        }
        m[g] = mx;
      }
    }
  }
};

/// The lse output is in natural-log units; the kernels keep log2 units.
__device__ __forceinline__ void store_lse(const KaArgs& ka, long long b, int h, float lse2) {
  ka.store_lse(b, 0, h, lse2 == -INFINITY ? -INFINITY : lse2 * ka_ln2);
}

/// How many splits a sequence with `len` keys gets, and the keys per split: at least
/// MIN_SPLIT_TOKENS keys a split, in whole kStep-key steps of the split kernel. chunk >=
/// ceil(len / max_splits), hence the result is <= max_splits; every split s < result has at
/// least one key (s * chunk < len) unless len == 0, where the single split is empty.
template <int kStep>
__device__ __forceinline__ int splits_of(long long len, int max_splits, long long& chunk) {
  long long c = (len + max_splits - 1) / max_splits;
  if (c < MIN_SPLIT_TOKENS) c = MIN_SPLIT_TOKENS;
  c = (c + kStep - 1) / kStep * kStep;
  chunk = c;
  return len <= c ? 1 : static_cast<int>((len + c - 1) / c);
}

/// The split a CTA of the split kernel computes: keys [k0, k1) of (sequence b, kv head kvh).
struct Split {
  long long b;
  int kvh;
  int s;       // the split
  int nsplit;  // the sequence's split count
  long long k0, k1;
};

/// blockIdx.x = (b * KV_HEADS + kvh) * ws.splits + s. False for a CTA past its sequence's split
/// count: the whole CTA must leave.
template <int kStep>
__device__ __forceinline__ bool find_split(const KaArgs& ka, const Workspace& ws, Split& split) {
  split.s = static_cast<int>(blockIdx.x % ws.splits);
  const long long rest = blockIdx.x / ws.splits;
  split.kvh = static_cast<int>(rest % KA_KV_HEADS);
  split.b = rest / KA_KV_HEADS;
  const long long len = ka.kv_len(split.b);
  long long chunk;
  split.nsplit = splits_of<kStep>(len, ws.splits, chunk);
  if (split.s >= split.nsplit) return false;
  split.k0 = split.s * chunk;
  split.k1 = split.k0 + chunk < len ? split.k0 + chunk : len;  // k0 < k1 unless len == 0
  return true;
}

/// The warps' final online-softmax states in shared memory, float32, for the CTA's merge:
/// m and l of each (warp, head) slot, then its acc[HEAD_DIM].
template <int kWarps, int kGroup>
struct WarpStates {
  static constexpr int kSlots = kWarps * kGroup;
  static constexpr int kBytes = kSlots * (KA_HEAD_DIM + 2) * 4;
  float* m;
  float* l;
  float* acc;

  __device__ __forceinline__ explicit WarpStates(float* base)
      : m(base), l(base + kSlots), acc(base + 2 * kSlots) {}
};

/// Merges the warps' states of split.kvh's GROUP heads, weights 2^(m_w - M) (a warp that saw
/// no key has m = -inf and weight 0), and writes the output and lse when the sequence has a
/// single split, else the split's partial. All kWarps * 32 threads call it, after a barrier
/// behind the states' stores.
template <int kWarps, int kGroup>
__device__ __forceinline__ void write_split(const KaArgs& ka, const Workspace& ws,
                                            const WarpStates<kWarps, kGroup>& states,
                                            const Split& split) {
  const bool direct = split.nsplit == 1;
  for (int idx = threadIdx.x; idx < kGroup * KA_HEAD_DIM; idx += kWarps * 32) {
    const int g = idx / KA_HEAD_DIM;
    const int d = idx % KA_HEAD_DIM;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, states.m[w * kGroup + g]);
    float lsum = 0.f, a = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float mw = states.m[w * kGroup + g];
      const float weight = mw == -INFINITY ? 0.f : exp2f(mw - mx);
      lsum = fmaf(states.l[w * kGroup + g], weight, lsum);
      a = fmaf(states.acc[(w * kGroup + g) * KA_HEAD_DIM + d], weight, a);
    }
    const float o = lsum > 0.f ? a / lsum : 0.f;
    const float lse2 = lsum > 0.f ? mx + log2f(lsum) : -INFINITY;
    const int h = split.kvh * kGroup + g;
    if (direct) {
      ka.o_row(split.b, 0, h)[d] = ka_from_float<ka_o_t>(o);
      if (d == 0) store_lse(ka, split.b, h, lse2);
    } else {
      const long long part = (split.b * KA_Q_HEADS + h) * ws.splits + split.s;
      ws.o[part * KA_HEAD_DIM + d] = o;
      if (d == 0) ws.lse[part] = lse2;
    }
  }
}

/// Combines the splits of query head h of sequence b from the workspace (log-sum-exp rule)
/// and writes its output row and lse. Called by a whole CTA (any multiple of 32 threads);
/// s_w holds kMaxSplits + 1 floats. Partials are read with ld.global.cg: a caller may merge
/// in the last CTA of the split kernel to finish, whose partials other CTAs of that kernel
/// wrote, and L1 is not coherent.
__device__ __forceinline__ void combine_head(const KaArgs& ka, const Workspace& ws, long long b,
                                             int h, int nsplit, float* s_w) {
  const long long base = (b * KA_Q_HEADS + h) * ws.splits;
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    float mx = -INFINITY;
    for (int s = lane; s < nsplit; s += 32) {
      const float x = __ldcg(ws.lse + base + s);
      s_w[s] = x;
      mx = fmaxf(mx, x);
    }
    mx = warp_max(mx);
    // Each lane rewrites only the entries it wrote itself: no race inside the warp.
    float den = 0.f;
    for (int s = lane; s < nsplit; s += 32) {
      const float x = s_w[s];
      const float w = x == -INFINITY ? 0.f : exp2f(x - mx);
      s_w[s] = w;
      den += w;
    }
    den = warp_sum(den);
    const float inv = den > 0.f ? 1.f / den : 0.f;
    for (int s = lane; s < nsplit; s += 32) s_w[s] *= inv;
    if (lane == 0) s_w[kMaxSplits] = den > 0.f ? mx + log2f(den) : -INFINITY;
  }
  __syncthreads();
  ka_o_t* out = ka.o_row(b, 0, h);
  for (int d = threadIdx.x; d < KA_HEAD_DIM; d += blockDim.x) {
    float o = 0.f;
    for (int s = 0; s < nsplit; ++s)
      o = fmaf(s_w[s], __ldcg(ws.o + (base + s) * KA_HEAD_DIM + d), o);
    out[d] = ka_from_float<ka_o_t>(o);
  }
  if (threadIdx.x == 0) store_lse(ka, b, h, s_w[kMaxSplits]);
  __syncthreads();  // s_w is reused by the next head
}

/// blockIdx.x = b * Q_HEADS + h; kCombineThreads threads. kStep is the split kernel's, so that
/// both find the same split count.
template <int kStep>
__global__ void __launch_bounds__(kCombineThreads)
    combine_kernel(const KaArgs ka, const Workspace ws) {
  __shared__ float s_w[kMaxSplits + 1];
  const long long b = blockIdx.x / KA_Q_HEADS;
  const int h = static_cast<int>(blockIdx.x % KA_Q_HEADS);
  long long chunk;
  const int nsplit = splits_of<kStep>(ka.kv_len(b), ws.splits, chunk);
  if (nsplit == 1) return;  // the split kernel wrote this head directly
  combine_head(ka, ws, b, h, nsplit, s_w);
}

/// Launches combine_kernel<kStep> over batch x Q_HEADS CTAs; 0, or ka_fail's 1 naming
/// `template_name`.
template <int kStep>
int launch_combine(const KaArgs& ka, const Workspace& ws, long long batch, cudaStream_t stream,
                   const char* template_name) {
  combine_kernel<kStep>
      <<<static_cast<unsigned>(batch * KA_Q_HEADS), kCombineThreads, 0, stream>>>(ka, ws);
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return 0;
  return ka_fail("%s: combine kernel launch: %s", template_name, cudaGetErrorString(status));
}

}  // namespace ka_split_kv
