// Pieces shared by the persistent Hopper GEMM templates (gemm_wgmma, scaled_gemm_wgmma): the TMA
// box load, the order in which CTAs walk the output tiles, and on the host the tensor maps of
// K-major operands and the split-K plan for small M.
//
// cuTensorMapEncodeTiled is a driver function; it is fetched through the runtime's entry-point
// query so that the shared objects do not link libcuda.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "ka_sm90.cuh"

namespace ka_sm90 {

/// Copies the box at (inner, outer) of a 2-D tensor map into shared memory; the barrier's
/// transaction count drops by the box's full byte size (out-of-bounds elements arrive as 0).
__device__ __forceinline__ void tma_load_2d(void* destination, const CUtensorMap* map,
                                            int32_t inner, int32_t outer,
                                            unsigned long long* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_address(destination)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(smem_address(barrier))
      : "memory");
}

/// tma_load_2d into the same shared-memory offset of every CTA of the cluster in `cta_mask`, each
/// of whose barriers at `barrier`'s offset the box's bytes complete.
__device__ __forceinline__ void tma_load_2d_multicast(void* destination, const CUtensorMap* map,
                                                      int32_t inner, int32_t outer,
                                                      unsigned long long* barrier,
                                                      uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::"
      "cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_address(destination)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(smem_address(barrier)),
      "h"(cta_mask)
      : "memory");
}

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

struct TileCoord {
  int m, n;
};

/// Output tile `tile` of a tiles_m x tiles_n grid. Swizzled: groups of kGroup M tiles walked
/// column by column, so that CTAs running at the same time share a few panels of A and of B in L2;
/// otherwise row by row.
template <bool kSwizzle, int kGroup = 8>
__device__ __forceinline__ TileCoord tile_coord(int tile, int tiles_m, int tiles_n) {
  if (kSwizzle) {
    const int group_span = kGroup * tiles_n;
    const int first_m = tile / group_span * kGroup;
    const int group_m = min(tiles_m - first_m, kGroup);
    const int in_group = tile % group_span;
    return {first_m + in_group % group_m, in_group / group_m};
  }
  return {tile / tiles_n, tile % tiles_n};
}

/// The shape of a persistent GEMM's shared-memory ring: kStages stages, each an A tile of kBlockM
/// rows and a B tile of kBlockN rows of kBlockK elements (one 128-byte swizzle row), guarded by a
/// "full" mbarrier (transaction bytes) and an "empty" one (one arrival per consumer warpgroup of
/// each CTA of the cluster). With kClusterM > 1 the cluster's CTAs take kClusterM adjacent tiles of
/// M on one tile of N and share its B tile: each CTA loads 1 / kClusterM of it into every CTA's
/// ring (TMA multicast), so L2 serves B once per cluster, not once per CTA.
template <int kStagesT, int kBlockMT, int kBlockNT, int kBlockKT, int kElementBytes, bool kSwizzleT,
          int kClusterMT = 1>
struct RingShape {
  static constexpr int kStages = kStagesT;
  static constexpr int kBlockM = kBlockMT;
  static constexpr int kBlockN = kBlockNT;
  static constexpr int kBlockK = kBlockKT;
  static constexpr int kRowBytes = kBlockK * kElementBytes;
  static constexpr int kTileBytesA = kBlockM * kRowBytes;
  static constexpr int kTileBytesB = kBlockN * kRowBytes;
  static constexpr int kStageBytes = kTileBytesA + kTileBytesB;
  static constexpr int kSharedBytes = kStages * kStageBytes + 1024;  // + slack for alignment
  static constexpr bool kSwizzle = kSwizzleT;
  static constexpr int kClusterM = kClusterMT;
  static constexpr int kSliceRowsB = kBlockN / kClusterM;  // the rows of B one CTA loads
  static_assert(kRowBytes == 128, "a tile row is one 128-byte swizzle row");
  // A slice starts on a 1024-byte swizzle atom, so that it lands as a whole tile's load would.
  static_assert(kBlockN % kClusterM == 0 && kSliceRowsB % 8 == 0, "B slices of whole atoms");
};

/// The work of one cluster's walk (a CTA's without clusters): a unit is one K range
/// (split_steps k-steps) of kClusterM adjacent output tiles of M on one tile of N, one per CTA of
/// the cluster (a tile past M, at an odd end, still loads its share of B and stores nothing);
/// units strided by the cluster count. The host picks splits > 1 only when there are too few
/// tiles to fill the GPU, and no range is empty.
template <class Ring>
struct WorkUnits {
  int tiles_m, tiles_n, groups_m, units, k_steps, splits, split_steps;

  __device__ WorkUnits(long long m, long long n, long long k, int unit_splits, int steps)
      : tiles_m(static_cast<int>((m + Ring::kBlockM - 1) / Ring::kBlockM)),
        tiles_n(static_cast<int>((n + Ring::kBlockN - 1) / Ring::kBlockN)),
        groups_m((tiles_m + Ring::kClusterM - 1) / Ring::kClusterM),
        units(groups_m * tiles_n * unit_splits),
        k_steps(static_cast<int>((k + Ring::kBlockK - 1) / Ring::kBlockK)),
        splits(unit_splits),
        split_steps(steps) {}

  /// The walk: units first(), first() + stride(), ... below `units`.
  __device__ int first() const { return static_cast<int>(blockIdx.x) / Ring::kClusterM; }
  __device__ int stride() const { return static_cast<int>(gridDim.x) / Ring::kClusterM; }

  /// This CTA's output tile of the unit.
  __device__ TileCoord tile(int unit) const {
    const TileCoord group = tile_coord<Ring::kSwizzle>(unit / splits, groups_m, tiles_n);
    if constexpr (Ring::kClusterM == 1) return group;
    return {group.m * Ring::kClusterM + static_cast<int>(cluster_rank()), group.n};
  }
  __device__ int k_begin(int unit) const { return unit % splits * split_steps; }
  __device__ int k_end(int unit) const { return min(k_steps, k_begin(unit) + split_steps); }
};

/// The ring in dynamic shared memory (1024-byte aligned for the 128B swizzle) and its barriers.
template <class Ring>
struct RingTiles {
  uint8_t* a;
  uint8_t* b;

  __device__ explicit RingTiles(uint8_t* shared_raw)
      : a(reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(shared_raw) + 1023) &
                                     ~static_cast<uintptr_t>(1023))),
        b(a + Ring::kStages * Ring::kTileBytesA) {}
};

/// Thread 0 initialises the barriers ("empty" expects `consumers` arrivals from each CTA of the
/// cluster); the whole CTA, and with clusters the whole cluster, then synchronises, so that no
/// multicast or remote arrival reaches a barrier before it is initialised.
template <class Ring>
__device__ __forceinline__ void init_ring(unsigned long long* full, unsigned long long* empty,
                                          unsigned consumers) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < Ring::kStages; ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], consumers * Ring::kClusterM);
    }
    fence_barrier_init();
  }
  __syncthreads();
  if constexpr (Ring::kClusterM > 1) cluster_sync();
}

/// A consumer warpgroup's release of stage s (by one thread): to its own CTA's producer and, with
/// clusters, to every other CTA's, whose multicast writes this CTA's stage too.
template <class Ring>
__device__ __forceinline__ void release_stage(unsigned long long* empty, int s) {
  mbarrier_arrive(&empty[s]);
  if constexpr (Ring::kClusterM > 1) {
    const unsigned self = cluster_rank();
#pragma unroll
    for (unsigned rank = 0; rank < Ring::kClusterM; ++rank)
      if (rank != self) mbarrier_arrive_cluster(&empty[s], rank);
  }
}

/// The producer (one thread): streams every unit's A and B tiles through the ring with TMA.
template <class Ring>
__device__ __forceinline__ void produce(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                        const RingTiles<Ring>& tiles, unsigned long long* full,
                                        unsigned long long* empty, const WorkUnits<Ring>& work) {
  prefetch_tensor_map(map_a);
  prefetch_tensor_map(map_b);
  int step = 0;
  for (int unit = work.first(); unit < work.units; unit += work.stride()) {
    const TileCoord t = work.tile(unit);
    for (int k = work.k_begin(unit); k < work.k_end(unit); ++k, ++step) {
      const int s = step % Ring::kStages;
      // A fresh barrier counts as having completed the phase before phase 0, so the first
      // pass over the ring does not wait. With clusters the stage is free once every CTA's
      // consumers released it, since this CTA's share of B lands in all of them.
      mbarrier_wait(&empty[s], ((step / Ring::kStages) & 1) ^ 1);
      // The whole stage: A, this CTA's share of B and the shares the others multicast here (a
      // share may land before this count is set; the phase still waits for this arrival).
      mbarrier_arrive_expect_tx(&full[s], Ring::kStageBytes);
      tma_load_2d(tiles.a + s * Ring::kTileBytesA, map_a, k * Ring::kBlockK, t.m * Ring::kBlockM,
                  &full[s]);
      if constexpr (Ring::kClusterM == 1) {
        tma_load_2d(tiles.b + s * Ring::kTileBytesB, map_b, k * Ring::kBlockK, t.n * Ring::kBlockN,
                    &full[s]);
      } else {
        const int rank = static_cast<int>(cluster_rank());
        tma_load_2d_multicast(
            tiles.b + s * Ring::kTileBytesB + rank * Ring::kSliceRowsB * Ring::kRowBytes, map_b,
            k * Ring::kBlockK, t.n * Ring::kBlockN + rank * Ring::kSliceRowsB, &full[s],
            static_cast<uint16_t>((1u << Ring::kClusterM) - 1));
      }
    }
  }
}

/// The warp-specialised body of a persistent GEMM: warpgroup 0's first thread produces, and
/// warpgroups 1.. run consume(consumer index); with two consumers the registers move from the
/// producer to them. With clusters every thread then waits for the whole cluster: no CTA leaves
/// while another still arrives on its barriers or needs its share of B.
template <class Ring, int kConsumers, class Consume>
__device__ __forceinline__ void run_warp_specialised(
    const CUtensorMap* map_a, const CUtensorMap* map_b, const RingTiles<Ring>& tiles,
    unsigned long long* full, unsigned long long* empty, const WorkUnits<Ring>& work,
    Consume&& consume) {
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    if constexpr (kConsumers == 2) setmaxnreg_dec<40>();
    if (threadIdx.x == 0) produce<Ring>(map_a, map_b, tiles, full, empty, work);
  } else {
    if constexpr (kConsumers == 2) setmaxnreg_inc<232>();
    consume(warpgroup - 1);
  }
  if constexpr (Ring::kClusterM > 1) cluster_sync();
}

/// The driver's cuTensorMapEncodeTiled, looked up once; null when the driver lacks it.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function,
                                                                12000, cudaEnableDefault, &query);
    return status == cudaSuccess && query == cudaDriverEntryPointSuccess
               ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function)
               : nullptr;
  }();
  return encode;
}

/// The tensor map of one K-major operand ([rows, k], row pitch k elements) in boxes of
/// box_rows x box_k elements, 128-byte swizzled. The last map per operand is kept: pointers change
/// between calls (the guard moves inputs), but repeated calls on the same buffers skip encoding.
struct KMajorMap {
  const void* pointer = nullptr;
  long long rows = -1, k = -1;
  CUtensorMap map;

  /// True, or false with the reason in `error` (naming the operand `name`).
  bool encode(const void* operand, long long operand_rows, long long operand_k,
              CUtensorMapDataType type, int element_bytes, int box_rows, int box_k,
              const char* name, char* error, size_t error_bytes) {
    if (pointer == operand && rows == operand_rows && k == operand_k) return true;
    pointer = nullptr;
    if (operand_k == 0) {  // no K step runs, so the map is never read
      std::memset(&map, 0, sizeof map);
    } else {
      const PFN_cuTensorMapEncodeTiled_v12000 encoder = tensor_map_encoder();
      if (encoder == nullptr) {
        std::snprintf(error, error_bytes, "cannot get cuTensorMapEncodeTiled from the driver");
        return false;
      }
      const cuuint64_t dims[2] = {static_cast<cuuint64_t>(operand_k),
                                  static_cast<cuuint64_t>(operand_rows)};
      const cuuint64_t strides[1] = {static_cast<cuuint64_t>(operand_k) * element_bytes};
      const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_k), static_cast<cuuint32_t>(box_rows)};
      const cuuint32_t element_strides[2] = {1, 1};
      const CUresult result =
          encoder(&map, type, 2, const_cast<void*>(operand), dims, strides, box, element_strides,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (result != CUDA_SUCCESS) {
        std::snprintf(error, error_bytes,
                      "%s: cuTensorMapEncodeTiled failed (CUresult %d) for [%lld, %lld]", name,
                      static_cast<int>(result), operand_rows, operand_k);
        return false;
      }
    }
    pointer = operand;
    rows = operand_rows;
    k = operand_k;
    return true;
  }
};

/// Per device, once: a kernel's dynamic shared-memory limit raised, the multiprocessor count read
/// and how many of its CTAs can run at once in whole clusters. One per kernel, owned by its
/// template's host code.
struct KernelSetup {
  static constexpr int kMaxDevices = 64;
  int multiprocessors[kMaxDevices] = {};  // 0: not prepared on that device yet
  int resident_ctas[kMaxDevices] = {};

  /// cudaSuccess with `count` (multiprocessors) and `resident` set, or the error
  /// (cudaErrorInvalidDevice past kMaxDevices). `resident`: one CTA a multiprocessor, or with
  /// clusters of `cluster` CTAs what the occupancy API says can run at once (a GPC whose free
  /// multiprocessors do not make a whole cluster leaves them idle; a persistent grid larger than
  /// this would run its last clusters after the others).
  template <class Kernel>
  cudaError_t prepare(Kernel* kernel, int shared_bytes, int threads, int cluster, int& count,
                      int& resident) {
    int device = 0;
    cudaError_t status = cudaGetDevice(&device);
    if (status != cudaSuccess) return status;
    if (device >= kMaxDevices) return cudaErrorInvalidDevice;
    if (multiprocessors[device] == 0) {
      int value = 0;
      status = cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device);
      if (status == cudaSuccess)
        status =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
      int ctas = value;
      if (status == cudaSuccess && cluster > 1) {
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(static_cast<unsigned>(value / cluster * cluster));
        config.blockDim = dim3(static_cast<unsigned>(threads));
        config.dynamicSmemBytes = static_cast<size_t>(shared_bytes);
        int clusters = 0;
        status = cudaOccupancyMaxActiveClusters(&clusters, kernel, &config);
        if (status == cudaSuccess && clusters < 1) status = cudaErrorInvalidConfiguration;
        ctas = clusters * cluster;
      }
      if (status != cudaSuccess) return status;
      resident_ctas[device] = ctas;
      multiprocessors[device] = value;
    }
    count = multiprocessors[device];
    resident = resident_ctas[device];
    return cudaSuccess;
  }
};

/// Fewest k-steps a split-K range gets, so that the stage ring still has work to overlap.
constexpr int kMinSplitSteps = 4;
/// The float32 partials may add at most 1/kPartialShare of the operands' bytes in traffic: on
/// the H200, M = 127 ran 25 us with 8 splits and 20 us with 4 (N = K = 4096, 128 x 256 tiles).
constexpr size_t kPartialShare = 4;

/// The persistent grid: whole clusters of `cluster` CTAs, no more than can run at once
/// (KernelSetup's `resident`) and one cluster a unit (`cluster` adjacent tiles of M on a tile of
/// N, times the K splits).
inline int persistent_grid(long long tiles_m, long long tiles_n, int splits, int resident,
                           int cluster) {
  const long long units = (tiles_m + cluster - 1) / cluster * tiles_n * splits;
  const long long clusters = resident / cluster;
  return static_cast<int>(cluster * (units < clusters ? units : clusters));
}

struct SplitPlan {
  int splits = 1;
  int steps = 0;  // k-steps per split
};

/// Splits K when the output tiles alone would leave more than half of the multiprocessors idle
/// (small M), as far as the workspace (float32 [M, N] slices) and the partials' traffic allow.
inline SplitPlan plan_splits(long long tiles, long long m, long long n, int k_steps,
                             size_t operand_bytes, int multiprocessors, void* workspace,
                             size_t workspace_bytes) {
  const SplitPlan none{1, k_steps};
  if (tiles * 2 > multiprocessors || k_steps < 2 * kMinSplitSteps) return none;
  if (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 16 != 0) return none;
  const size_t slice_bytes = static_cast<size_t>(m) * n * sizeof(float);
  long long wanted = multiprocessors / tiles;
  wanted = std::min<long long>(wanted, k_steps / kMinSplitSteps);
  wanted = std::min<long long>(wanted, workspace_bytes / slice_bytes);
  wanted = std::min<long long>(wanted, operand_bytes / kPartialShare / slice_bytes);
  if (wanted < 2) return none;
  const int steps = static_cast<int>((k_steps + wanted - 1) / wanted);
  return {(k_steps + steps - 1) / steps, steps};  // every split gets a non-empty range
}

}  // namespace ka_sm90
