// Split-KV grouped-query attention decode over an NVFP4 key/value cache.
//
// decode_split_kernel: one CTA per (sequence b, kv head, split s). A key row is KA_HEAD_DIM E2M1
// values in KA_KV_ROW_BYTES bytes (two per byte, the first in the low nibble) plus one
// float8_e4m3fn scale per 16 values. kLanes = HEAD_DIM / 16 lanes share a row, lane gl holding
// the 16-value block gl (8 bytes of codes and one scale byte); a warp covers kRows = 32 / kLanes
// rows per step and loads UNROLL steps into registers before using them, so that each lane has
// several independent loads in flight (decode is bound by the cache's bytes). Warp w takes the
// split's row groups w, w + WARPS, ...
//
// The scale multiplies a block once, not each value: the lane's partial dot product of q with
// the 16 unscaled codes is scaled before the lanes' shuffle reduction, and in P V the lane adds
// (p * scale) * code. Each lane group keeps an online softmax per head (log2 units, float32),
// merged across lane groups by shuffles and across warps in shared memory; one split writes the
// output, several write float32 partials that a second kernel merges by the log-sum-exp rule
// (the split bookkeeping, the warps' merge and the combine are ka_split_kv.cuh's, shared with
// attention_decode).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "ka_problem.h"
#include "ka_split_kv.cuh"

namespace ka_fp4 {

constexpr int kWarps = WARPS;
constexpr int kThreads = kWarps * 32;
constexpr int kUnroll = UNROLL;
constexpr int kHeadDim = KA_HEAD_DIM;
constexpr int kGroup = KA_GROUP;
constexpr int kKvHeads = KA_KV_HEADS;
constexpr int kQHeads = KA_Q_HEADS;
constexpr int kBlock = 16;                  // values per scale
constexpr int kLanes = kHeadDim / kBlock;   // lanes sharing one row
constexpr int kRows = 32 / kLanes;          // rows a warp covers per step
constexpr int kStepKeys = kRows * kUnroll;  // keys a warp loads before computing
using WarpStates = ka_split_kv::WarpStates<kWarps, kGroup>;

static_assert(KA_DECODE == 1, "attention_decode_nvfp4 serves decode problems");
static_assert(KA_KV_FP4 == 1, "attention_decode_nvfp4 reads NVFP4 keys and values");
static_assert(kHeadDim % kBlock == 0 && 32 % kLanes == 0, "HEAD_DIM / 16 lanes must divide a warp");
static_assert(KA_KV_ROW_BYTES * 2 == kHeadDim && KA_KV_SCALES_PER_ROW == kLanes,
              "a row is HEAD_DIM / 2 bytes and HEAD_DIM / 16 scales");
static_assert(kQHeads == kKvHeads * kGroup, "Q_HEADS must be KV_HEADS * GROUP");

// The bits path places an E2M1 code into a half: sign to bit 15, the 3 magnitude bits to bits
// 9..11 (the exponent's low 2 bits and the mantissa's top bit). Every code then reads as its
// value times 2^-14 exactly (code 1, 0.5, becomes the subnormal 2^-15), and 2^14 goes into the
// block scale. The lut path reads the value from a 16-entry table instead.
constexpr float kBitsScale = DEQUANT == KA_DEQUANT_bits ? 16384.0f : 1.0f;

__constant__ float kE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

/// float8_e4m3fn to float: e4m3 sits in a half shifted by 7 bits (exponent bias 7 against 15,
/// subnormals included), so the half's value is the scale times 2^-8.
__device__ __forceinline__ float e4m3_to_float(unsigned char bits) {
  const unsigned short half_bits =
      static_cast<unsigned short>(((bits & 0x80u) << 8) | ((bits & 0x7Fu) << 7));
  return __half2float(__ushort_as_half(half_bits)) * 256.0f;
}

/// The 16 values of one block, unscaled (times 2^-14 on the bits path): `codes` holds 8 bytes,
/// value 2i in byte i's low nibble and value 2i + 1 in its high nibble.
__device__ __forceinline__ void decode_block(uint2 codes, const float* table, float (&out)[16]) {
  const uint32_t words[2] = {codes.x, codes.y};
#pragma unroll
  for (int w = 0; w < 2; ++w) {
#pragma unroll
    for (int byte = 0; byte < 4; ++byte) {
      const uint32_t x = (words[w] >> (8 * byte)) & 0xFFu;
      const int index = 8 * w + 2 * byte;
      if constexpr (DEQUANT == KA_DEQUANT_bits) {
        const uint32_t pair =
            ((x & 0x08u) << 12) | ((x & 0x07u) << 9) | ((x & 0x80u) << 24) | ((x & 0x70u) << 21);
        __half2 h;
        memcpy(&h, &pair, 4);
        const float2 f = __half22float2(h);
        out[index] = f.x;
        out[index + 1] = f.y;
      } else {
        out[index] = table[x & 15u];
        out[index + 1] = table[x >> 4];
      }
    }
  }
}

/// One row's block for this lane: codes and scale of K and of V.
struct RowLoad {
  uint2 k, v;
  unsigned char k_scale, v_scale;
};

// ---------------------------------------------------------------------------------------------
// One lane's share of a warp's online softmax.

/// The lane's block of each head (q, acc), the softmax state, and the block's dequantization.
struct LaneState : ka_split_kv::LaneSoftmax<kLanes, kGroup, kBlock> {
  __device__ __forceinline__ void init(const KaArgs& ka, long long b, int kvh, int gl,
                                       float scale_log2) {
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      const ka_qkv_t* row = ka.q_row(b, 0, kvh * kGroup + g) + gl * kBlock;
#pragma unroll
      for (int e = 0; e < kBlock; ++e) q[g][e] = ka_to_float(row[e]) * scale_log2;
    }
    reset();
  }

  /// One row: every lane calls it (the reduction shuffles need the whole warp); `valid` says
  /// whether this lane group's row exists.
  __device__ __forceinline__ void row(const RowLoad& in, bool valid, const float* table) {
    float values[kBlock];
    decode_block(in.k, table, values);
    float dot[kGroup];
    logits(values, valid ? e4m3_to_float(in.k_scale) * kBitsScale : 0.f, dot);
    if (!valid) return;
    decode_block(in.v, table, values);
    add(dot, values, e4m3_to_float(in.v_scale) * kBitsScale);
  }

  /// Merges the warp's lane groups and writes the merged state from lane group 0 into the
  /// CTA's warp states.
  __device__ __forceinline__ void store(float* cm, float* cl, float* cacc, int warp, int lane) {
    merge_groups();
    if (lane >= kLanes) return;
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      const int slot = warp * kGroup + g;
      if (lane == 0) {
        cm[slot] = m[g];
        cl[slot] = l[g];
      }
#pragma unroll
      for (int e = 0; e < kBlock; ++e) cacc[slot * kHeadDim + lane * kBlock + e] = acc[g][e];
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Kernels.

/// blockIdx.x = (b * KV_HEADS + kvh) * ws.splits + s.
__global__ void KA_SPLIT_KERNEL_BOUNDS(kThreads)
    decode_split_kernel(const KaArgs ka, const ka_split_kv::Workspace ws) {
  __shared__ __align__(16) float merge[WarpStates::kBytes / 4];
  __shared__ float table[16];
  if (threadIdx.x < 16) table[threadIdx.x] = kE2M1[threadIdx.x];
  __syncthreads();

  ka_split_kv::Split split;
  // The whole CTA leaves, after its only earlier barrier.
  if (!ka_split_kv::find_split<kStepKeys>(ka, ws, split)) return;
  const long long b = split.b;
  const int kvh = split.kvh;
  const long long k0 = split.k0;
  const long long k1 = split.k1;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int gi = lane / kLanes;  // the lane's row within a step
  const int gl = lane % kLanes;  // the lane's 16-value block within a row
  LaneState state;
  state.init(ka, b, kvh, gl, ka.scale() * ka_log2e);

  for (long long base = k0 + static_cast<long long>(warp) * kStepKeys; base < k1;
       base += static_cast<long long>(kWarps) * kStepKeys) {
    RowLoad loads[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long key = base + u * kRows + gi;
      if (key < k1) {
        loads[u].k = __ldg(reinterpret_cast<const uint2*>(ka.k_row(b, key, kvh)) + gl);
        loads[u].v = __ldg(reinterpret_cast<const uint2*>(ka.v_row(b, key, kvh)) + gl);
        loads[u].k_scale = __ldg(ka.k_scale_row(b, key, kvh) + gl);
        loads[u].v_scale = __ldg(ka.v_scale_row(b, key, kvh) + gl);
      } else {
        loads[u] = RowLoad{make_uint2(0u, 0u), make_uint2(0u, 0u), 0, 0};
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) state.row(loads[u], base + u * kRows + gi < k1, table);
  }

  const WarpStates states(merge);
  state.store(states.m, states.l, states.acc, warp, lane);
  __syncthreads();
  ka_split_kv::write_split(ka, ws, states, split);
}

}  // namespace ka_fp4
