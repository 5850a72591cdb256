// Hopper forward attention (prefill) on wgmma, FlashAttention-3 style, for bfloat16 / float16
// q, k, v with head dim 64 or 128 and float32 accumulation (sm_90a):
//   O = softmax(scale * Q K^T [causal mask]) V   per query head, query head h reading kv head
//   h / KA_GROUP.
//
// Warp specialisation. A CTA is 1 + CONSUMERS warpgroups and owns 64 * CONSUMERS query rows of
// one sequence and one head. Warpgroup 0 is the producer: it copies the Q tile once and then
// the K and V tiles of BLOCK_N keys into a STAGES-deep ring, and gives most of its registers to
// the consumers (setmaxnreg). Consumer warpgroup c owns 64 query rows: S = Q K^T runs as
// wgmma m64nBLOCK_Nk16 with both operands in shared memory, the online softmax runs on the
// accumulators in registers (base-2 domain, scale * log2(e) folded in), P is rounded to the
// input type in registers and O += P V runs as wgmma m64nHEAD_DIMk16 with P as the register
// operand (an m64n16 accumulator slice is exactly the A fragment of a k16 step) and V read
// N-major from shared memory (its rows as they arrive, no transpose). The two consumer
// warpgroups run out of step (with PINGPONG, in turns), so one's softmax hides behind the other's
// tensor-core work.
//
// Loads. The producer copies rows with 16-byte cp.async from the header's row accessors
// (ka.k_row(b, j, kvh), ...): dense and ragged tiles from row 0 at the constant row pitch
// (KaArgs::q_pitch / kv_pitch), paged ones row by row through the page table (any page size),
// each row looked up once a tile ahead into a table in shared memory that K and V share;
// rows past the sequence's end are zero-filled (cp.async with a source size of 0).
// Shared memory holds every tile as 128-byte rows of 64 elements under the 128B swizzle (chunk
// c of row r at chunk c ^ (r % 8)), one such block per 64 columns of the head dim, which is
// the layout the wgmma descriptors describe. A tile is announced on its mbarrier by
// cp.async.mbarrier.arrive (one arrival per producer thread, each once its copies landed);
// consumers release a K or V buffer by an arrival per warp on its "empty" barrier once the
// wgmma that read it completed. A tensor whose base is not 16-byte aligned is copied by plain
// loads and stores instead, after which that producer thread waits for its own cp.asyncs and
// arrives normally.
//
// Masking. Query i of sequence b sees keys [0, ka.causal_limit(b, i)); limits never decrease
// with i, so a consumer's first and last rows bound its key range: tiles past its last row's
// limit are skipped (still waited for and released, which keeps the barriers' phases in step),
// and only tiles reaching past its first row's limit are masked. A row that sees no key gets a
// zero output and an lse of -inf.
//
// Grid: ka_attention_find_tile_at (ka_attention_common.cuh); blockIdx.y is the query head. With
// TILES_PER_CTA > 1 the grid is that many times smaller and a CTA takes the work items
// blockIdx.x, + gridDim.x, ... in turn: Q is double-buffered (released by the consumers once
// their output, staged in it, is written) and the ring's phases run on across the tiles, so the
// producer copies the next tile's Q and keys while the consumers finish the current one. Short
// CTAs (head dim 64, 1024 causal rows: a few key tiles each) otherwise start with nothing to
// hide their first loads behind (one CTA per SM, register-bound).
// Knobs: BLOCK_N (keys per tile), STAGES (ring depth), CONSUMERS (1, 2 or, at head dim 64, 3
// consumer warpgroups: FlashAttention-3's 192-row tile for that head dim, where one warpgroup's
// products are too short to hide another's softmax on their own), PINGPONG (two consumers issue
// their products in turns; one tile a CTA), TILES_PER_CTA (1, 2, 4), CTAS_PER_SM (with one
// consumer: 2, or 3 at head dim 64 and BLOCK_N 64, CTAs of 64 query rows share a
// multiprocessor, as cuDNN's 64 x 128 tiles do. Independent CTAs start and end at different
// times, so one's first loads and epilogue run under another's products, and a causal problem
// computes in 64-row steps along its diagonal).
#include "ka_problem.h"

#include "ka_attention_common.cuh"
#include "ka_mma_sync.cuh"
#include "ka_sm90.cuh"
#include "ka_wgmma.cuh"

static_assert(sizeof(ka_qkv_t) == 2,
              "attention_prefill_wgmma serves bfloat16 and float16 q/k/v (ELEM_BYTES == 2)");
static_assert(KA_HEAD_DIM == 64 || KA_HEAD_DIM == 128,
              "attention_prefill_wgmma: HEAD_DIM must be 64 or 128");

template <typename T>
struct KaIsHalf {
  static constexpr bool value = false;
};
template <>
struct KaIsHalf<__half> {
  static constexpr bool value = true;
};

constexpr int kD = KA_HEAD_DIM;
constexpr bool kF16 = KaIsHalf<ka_qkv_t>::value;
constexpr int kConsumers = CONSUMERS;
constexpr bool kPingPong = PINGPONG != 0 && kConsumers == 2;
// Named barriers: 1 + c for consumer c's epilogue, kTurnBarrier + c for its turns (PINGPONG),
// kProducerBarrier for the producer's table of paged rows.
constexpr unsigned kTurnBarrier = 1 + kConsumers;
constexpr unsigned kProducerBarrier = kTurnBarrier + 2;
constexpr int kBlockM = 64 * CONSUMERS;
constexpr int kThreads = 128 * (CONSUMERS + 1);
constexpr int kChunks = kD / 8;  // 16-byte chunks of a row
constexpr int kQBytes = kBlockM * kD * 2;
constexpr int kTileBytes = BLOCK_N * kD * 2;  // one K or V buffer
constexpr int kSTiles = BLOCK_N / 8;          // n8 column groups of S
constexpr int kOTiles = kD / 8;               // n8 column groups of O
static_assert(BLOCK_N == 64 || BLOCK_N == 128 || BLOCK_N == 176, "BLOCK_N is 64, 128 or 176");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(TILES_PER_CTA >= 1, "TILES_PER_CTA >= 1");
static_assert(TILES_PER_CTA == 1 || !kPingPong, "PINGPONG takes one tile per CTA");
// With more than one tile a CTA the producer copies the next tile's Q into a second buffer while
// the consumers still read (and stage their output in) the current one.
constexpr int kQBuffers = TILES_PER_CTA > 1 ? 2 : 1;
// Shared memory: [kQBuffers Q][STAGES K][STAGES V], every tile 1024-byte aligned for the
// swizzle, then the barriers, then, for a paged cache only, two tiles' rows (launch.shared_bytes
// counts them where PAGED: at head dim 128 the three-stage ring leaves no room for them);
// launch.shared_bytes adds 1024 bytes to align the dynamic base.
constexpr int kBarrierOffset = kQBuffers * kQBytes + 2 * STAGES * kTileBytes;
constexpr int kRowTableOffset = kBarrierOffset + (4 + 4 * STAGES) * 8;

// Registers: a thread starts with the launch bound's share of the register file (ptxas allocates
// in steps of 8), and the producer hands most of its share to the consumers (setmaxnreg), which
// may take only what it releases: with two consumers 40 and 232 ((40 + 2 * 232) * 128 <= 64K),
// with three (head dim 64 only: O is half the size) 32 and 160, with one consumer and two CTAs a
// multiprocessor 40 and 216, with three CTAs 32 and 128. A paged producer keeps 56 for its row
// lookups (40 spilled) where the consumers can spare them (224 each with two; with three
// consumers or three CTAs it keeps 32 and may spill). One consumer alone in its multiprocessor
// has 255 from the start.
constexpr int kEntryRegisters = (65536 / (kThreads * CTAS_PER_SM) / 8 * 8) < 255
                                    ? 65536 / (kThreads * CTAS_PER_SM) / 8 * 8
                                    : 255;
constexpr bool kRebalanceRegisters = kConsumers >= 2 || CTAS_PER_SM > 1;
constexpr int kProducerRegisters = kConsumers == 3 || CTAS_PER_SM == 3 ? 32
                                   : KA_LAYOUT_PAGED                   ? 56
                                                                       : 40;
constexpr int kConsumerRegisters =
    (kEntryRegisters * (kConsumers + 1) - kProducerRegisters) / kConsumers / 8 * 8;
static_assert(!kRebalanceRegisters || (kConsumerRegisters >= 128 && kConsumerRegisters <= 256),
              "the consumers' register share is out of setmaxnreg's range or too small");
static_assert(CTAS_PER_SM >= 1 && CTAS_PER_SM <= 3, "CTAS_PER_SM is 1, 2 or 3");
static_assert(CTAS_PER_SM == 1 || kConsumers == 1, "several CTAs a multiprocessor: one consumer");
static_assert(kConsumers >= 1 && kConsumers <= 3, "CONSUMERS is 1, 2 or 3");
static_assert(kConsumers < 3 || kD == 64,
              "three consumer warpgroups fit their registers at head dim 64 only");

// Copies kRows rows (row r from row_of(r), or zeros for r >= valid) into a swizzled tile, the
// producer's 128 threads sharing the 16-byte chunks; returns whether it copied by plain loads and
// stores (a tensor whose base is not 16-byte aligned). Every row starts a whole number of
// KA_HEAD_DIM elements from its tensor's base, so row 0 tells the alignment of all of them. The
// producer is one warp per scheduler, so its instruction count per tile bounds the kernel: the
// dense and ragged layouts issue one cp.async per chunk; the paged layout looks up each row once
// per chunk.
template <int kRows, long long kPitch, typename RowOf>
__device__ __forceinline__ bool ka_copy_tile(unsigned char* tile, long long valid, RowOf row_of,
                                             int thread) {
  constexpr int kRowsPerPass = 128 / kChunks;  // 8 or 16: a multiple of the swizzle's 8 rows
  const int chunk = thread % kChunks;
  const int first_row = thread / kChunks;
  unsigned char* dst =
      tile + (chunk / 8) * kRows * 128 + ka_sm90::swizzle_128b_offset(first_row, chunk % 8);
  const ka_qkv_t* row0 = row_of(0);
  if ((reinterpret_cast<unsigned long long>(row0) & 15) != 0) {
#pragma unroll 1
    for (int r = first_row; r < kRows; r += kRowsPerPass, dst += kRowsPerPass * 128) {
      if (r < valid) {
        ka_copy_chunk_16(dst, row_of(r) + chunk * 8);
      } else {
        *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
      }
    }
    return true;
  }
  if constexpr (!KA_LAYOUT_PAGED) {
    // Rows are kPitch elements apart, so a whole tile's copies address by immediate offsets
    // from two registers.
    const ka_qkv_t* src = row0 + first_row * kPitch + chunk * 8;
    if (valid >= kRows) {
#pragma unroll
      for (int pass = 0; pass < kRows / kRowsPerPass; ++pass)
        ka_cp_async_16(dst + pass * kRowsPerPass * 128, src + pass * kRowsPerPass * kPitch, 16);
    } else {
#pragma unroll 1
      for (int pass = 0; pass < kRows / kRowsPerPass; ++pass) {
        // Rows past the end are zero-filled (source size 0) from a valid address.
        const bool in = first_row + pass * kRowsPerPass < valid;
        ka_cp_async_16(dst + pass * kRowsPerPass * 128,
                       in ? src + pass * kRowsPerPass * kPitch : row0, in ? 16 : 0);
      }
    }
  } else {
#pragma unroll 4
    for (int r = first_row; r < kRows; r += kRowsPerPass, dst += kRowsPerPass * 128) {
      ka_cp_async_16(dst, r < valid ? row_of(r) + chunk * 8 : row0, r < valid ? 16 : 0);
    }
  }
  return false;
}

// Announces this thread's part of a tile on `barrier`: asynchronously once its cp.asyncs land,
// or, when it stored some chunks itself, after waiting for them (plain stores cannot be tracked
// by the barrier's asynchronous arrival).
__device__ __forceinline__ void ka_announce(unsigned long long* barrier, bool plain) {
  if (plain) {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    ka_sm90::mbarrier_arrive(barrier);
  } else {
    ka_sm90::cp_async_mbarrier_arrive(barrier);
  }
}

// One query tile of one sequence, as a CTA's warpgroups all see it.
struct KaPrefillItem {
  long long b, row0, q_len, kv_len;
  int kv_tiles;  // key tiles its last row sees
};

// Calls visit(item, qb, n, ring0) for each of the CTA's work items with rows (find(index, item)
// true), in order: n counts them, qb is their Q buffer, ring0 their first key tile's use of the
// ring.
template <class Find, class Visit>
__device__ __forceinline__ void ka_for_each_item(int items, Find find, Visit visit) {
  int n = 0;
  int ring0 = 0;
#pragma unroll 1
  for (int index = blockIdx.x; index < items; index += gridDim.x) {
    KaPrefillItem it;
    if (!find(index, it)) continue;
    visit(static_cast<const KaPrefillItem&>(it), n % kQBuffers, n, ring0);
    ring0 += it.kv_tiles;
    ++n;
    // One tile a CTA: the counters stay compile-time zeros (no registers, no divisions).
    if constexpr (TILES_PER_CTA == 1) break;
  }
}

extern "C" __global__ void __launch_bounds__(kThreads, CTAS_PER_SM)
    ka_attention_prefill_wgmma(KA_KERNEL_PARAMS) {
  const KaArgs ka = KA_ARGS;
  extern __shared__ unsigned char ka_smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(ka_smem_raw) + 1023) & ~1023ull);
  unsigned char* q_tiles = smem;
  unsigned char* k_tiles = smem + kQBuffers * kQBytes;
  unsigned char* v_tiles = k_tiles + STAGES * kTileBytes;
  unsigned long long* barriers = reinterpret_cast<unsigned long long*>(smem + kBarrierOffset);
  unsigned long long* q_full = barriers;  // [2]: one per Q buffer
  unsigned long long* q_empty = barriers + 2;
  unsigned long long* k_full = barriers + 4;
  unsigned long long* v_full = k_full + STAGES;
  unsigned long long* k_empty = v_full + STAGES;
  unsigned long long* v_empty = k_empty + STAGES;

  const int tid = threadIdx.x;
  // Broadcast from lane 0 so that ptxas sees a warp-uniform value: branches on a value it thinks
  // divergent make it serialise every wgmma of the kernel (C7520).
  const int warpgroup = __shfl_sync(0xffffffffu, tid / 128, 0);
  const int thread = tid % 128;
  const int h = static_cast<int>(blockIdx.y);
  const int kvh = h / KA_GROUP;

  if (tid == 0) {
    for (int i = 0; i < 2; ++i) {
      ka_sm90::mbarrier_init(&q_full[i], 128);
      ka_sm90::mbarrier_init(&q_empty[i], 4 * kConsumers);
    }
    for (int s = 0; s < STAGES; ++s) {
      ka_sm90::mbarrier_init(&k_full[s], 128);
      ka_sm90::mbarrier_init(&v_full[s], 128);
      ka_sm90::mbarrier_init(&k_empty[s], 4 * kConsumers);
      ka_sm90::mbarrier_init(&v_empty[s], 4 * kConsumers);
    }
    ka_sm90::fence_barrier_init();
  }
  __syncthreads();

  // The CTA's work items: blockIdx.x, + gridDim.x, ... of the grid's numbering (the launch
  // divides it by TILES_PER_CTA). Every warpgroup walks the same items; `item` counts those with
  // rows, which take Q buffer item % kQBuffers, and the key tiles of all of them go through the
  // ring in one sequence, tile j of an item being the ring's use `ring0 + j`. Items number in
  // the thousands: int indices keep the consumers' loop state small.
  const int items = static_cast<int>(ka_attention_tile_count(ka, 1, kBlockM));
  auto find_item = [&](int index, KaPrefillItem& it) {
    long long tile = 0;
    if (!ka_attention_find_tile_at(ka, 1, kBlockM, index, items, it.b, tile)) return false;
    it.q_len = ka.q_len(it.b);
    it.row0 = tile * kBlockM;
    if (it.row0 >= it.q_len) return false;
    it.kv_len = ka.kv_len(it.b);
    // The CTA needs the keys its last row sees (limits never decrease with the row).
    const long long last_row = (it.row0 + kBlockM < it.q_len ? it.row0 + kBlockM : it.q_len) - 1;
    const long long cta_limit = ka.causal_limit(it.b, last_row);
    it.kv_tiles = static_cast<int>((cta_limit + BLOCK_N - 1) / BLOCK_N);
    return true;
  };

  if (warpgroup == 0) {
    // ---- Producer.
    if constexpr (kRebalanceRegisters) ka_sm90::setmaxnreg_dec<kProducerRegisters>();
    // A paged key's row is two dependent loads away (kv_indptr, then kv_indices), and a copy
    // that looked its row up waited for both, row by row. Instead each of a tile's rows is looked
    // up once, by one thread, a tile ahead, into a table of two tiles in shared memory, as its
    // element offset into k; K's and V's rows share it (the header indexes both alike).
    long long* row_table = reinterpret_cast<long long*>(smem + kRowTableOffset);
    auto look_up_rows = [&](const KaPrefillItem& it, int j, int use) {
      long long* rows = row_table + (use & 1) * BLOCK_N;
      const long long n0 = static_cast<long long>(j) * BLOCK_N;
#pragma unroll
      for (int r = thread; r < BLOCK_N; r += 128)
        if (n0 + r < it.kv_len) rows[r] = ka.k_row(it.b, n0 + r, kvh) - ka.k;
    };
    ka_for_each_item(items, find_item, [&](const KaPrefillItem& it, int qb, int item, int ring0) {
      // Use u = item / kQBuffers of Q buffer qb waits for the consumers' release of use u - 1.
      if (item >= kQBuffers) ka_sm90::mbarrier_wait(&q_empty[qb], ((item / kQBuffers) - 1) & 1);
      const bool q_plain = ka_copy_tile<kBlockM, KaArgs::q_pitch>(
          q_tiles + qb * kQBytes, it.q_len - it.row0,
          [&](int r) { return ka.q_row(it.b, it.row0 + r, h); }, thread);
      ka_announce(&q_full[qb], q_plain);
      if constexpr (KA_LAYOUT_PAGED) {
        if (it.kv_tiles > 0) look_up_rows(it, 0, ring0);
      }
#pragma unroll 1
      for (int j = 0; j < it.kv_tiles; ++j) {
        const int use = ring0 + j;
        const int s = use % STAGES;
        const long long n0 = static_cast<long long>(j) * BLOCK_N;
        // Paged: every thread's rows of tile j are in the table. A thread writes tile j + 1's
        // into the other half only after this barrier, which every thread reaches once done
        // with tile j - 1's, the half's previous tile.
        if constexpr (KA_LAYOUT_PAGED) ka_sm90::named_barrier_sync(kProducerBarrier, 128);
        const long long* rows = row_table + (use & 1) * BLOCK_N;
        auto k_row = [&](int r) {
          if constexpr (KA_LAYOUT_PAGED) return ka.k + rows[r];
          return ka.k_row(it.b, n0 + r, kvh);
        };
        auto v_row = [&](int r) {
          if constexpr (KA_LAYOUT_PAGED) return ka.v + rows[r];
          return ka.v_row(it.b, n0 + r, kvh);
        };
        // Use u = use / STAGES of buffer s waits for the consumers' release of use u - 1.
        const unsigned parity = static_cast<unsigned>(((use / STAGES) - 1) & 1);
        if (use >= STAGES) ka_sm90::mbarrier_wait(&k_empty[s], parity);
        const bool k_plain = ka_copy_tile<BLOCK_N, KaArgs::kv_pitch>(k_tiles + s * kTileBytes,
                                                                     it.kv_len - n0, k_row, thread);
        ka_announce(&k_full[s], k_plain);
        if (use >= STAGES) ka_sm90::mbarrier_wait(&v_empty[s], parity);
        const bool v_plain = ka_copy_tile<BLOCK_N, KaArgs::kv_pitch>(v_tiles + s * kTileBytes,
                                                                     it.kv_len - n0, v_row, thread);
        ka_announce(&v_full[s], v_plain);
        // The next tile's lookups wait on their loads here, while this tile's copies fly and
        // the ring is full, not in front of the next tile's copies.
        if constexpr (KA_LAYOUT_PAGED) {
          if (j + 1 < it.kv_tiles) look_up_rows(it, j + 1, use + 1);
        }
      }
    });
    // A CTA must not exit while its cp.asyncs are in flight.
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    return;
  }

  // ---- Consumer warpgroup c: rows [64 c, 64 c + 64) of each of the CTA's tiles.
  if constexpr (kRebalanceRegisters) ka_sm90::setmaxnreg_inc<kConsumerRegisters>();
  const int consumer = warpgroup - 1;
  const int warp = thread / 32;
  const int lane = thread % 32;
  const int g = lane / 4;
  const int c4 = lane % 4;
  const unsigned full_mask = 0xffffffffu;
  const float scale_log2 = ka.scale() * ka_log2e;
  const unsigned k_base = ka_sm90::smem_address(k_tiles);
  const unsigned v_base = ka_sm90::smem_address(v_tiles);
  ka_for_each_item(items, find_item, [&](const KaPrefillItem& it, int qb, int item, int ring0) {
    unsigned char* q_tile = q_tiles + qb * kQBytes;
    const long long b = it.b, row0 = it.row0, q_len = it.q_len;
    const int kv_tiles = it.kv_tiles;
    // This thread's two rows (accumulator rows 16 warp + g and + 8 of the warpgroup's 64).
    long long query[2];
    int limit[2];
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      query[hf] = row0 + consumer * 64 + warp * 16 + g + 8 * hf;
      limit[hf] = query[hf] < q_len ? static_cast<int>(ka.causal_limit(b, query[hf])) : 0;
    }
    const long long first_query = row0 + consumer * 64;
    const long long last_query = (first_query + 64 < q_len ? first_query + 64 : q_len) - 1;
    const bool has_rows = first_query < q_len;
    const int min_limit = has_rows ? static_cast<int>(ka.causal_limit(b, first_query)) : 0;
    const int max_limit = has_rows ? static_cast<int>(ka.causal_limit(b, last_query)) : 0;
    // The key tiles this warpgroup computes; the CTA's later ones it only waits for and releases.
    const int my_tiles = (max_limit + BLOCK_N - 1) / BLOCK_N;

    float o_acc[kD / 2];
    float s_acc[BLOCK_N / 2];
    unsigned p_frag[BLOCK_N / 16][4];
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) o_acc[i] = 0.0f;
    float row_max[2] = {ka_neg_inf(), ka_neg_inf()};
    float row_sum[2] = {0.0f, 0.0f};  // this thread's part (4 lanes share a row)

    const unsigned q_base = ka_sm90::smem_address(q_tile) + consumer * 64 * 128;
    // The ring's buffer and phase of this item's key tile j.
    auto slot = [&](int j) { return (ring0 + j) % STAGES; };
    auto phase = [&](int j) { return static_cast<unsigned>(((ring0 + j) / STAGES) & 1); };

    // S = Q K_j^T into s_acc, issued and committed (not waited for).
    auto issue_scores = [&](int j) {
      const unsigned k_tile = k_base + slot(j) * kTileBytes;
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        // k16 step kk: column block kk / 4 (rows x 128 bytes each), 32 bytes per step inside it.
        const unsigned block = kk / 4, offset = (kk % 4) * 32;
        ka_wgmma::Mma<BLOCK_N, kF16>::run(
            s_acc, ka_sm90::smem_descriptor_128b(q_base + block * kBlockM * 128 + offset),
            ka_sm90::smem_descriptor_128b(k_tile + block * BLOCK_N * 128 + offset), kk > 0);
      }
      ka_sm90::wgmma_commit();
    };
    // O += P V_j, issued and committed. V's rows kk * 16 .. + 16 are 2048 bytes into each 64-column
    // block; the column blocks are BLOCK_N * 128 bytes apart.
    auto issue_values = [&](int j) {
      const unsigned v_tile = v_base + slot(j) * kTileBytes;
#pragma unroll
      for (int kk = 0; kk < BLOCK_N / 16; ++kk)
        ka_wgmma::MmaRs<kD, kF16>::run(
            o_acc, p_frag[kk], ka_sm90::smem_descriptor_128b_mn(v_tile + kk * 2048, BLOCK_N * 128),
            1);
      ka_sm90::wgmma_commit();
    };
    auto wait_tile = [&](unsigned long long* full, int j) {
      ka_sm90::mbarrier_wait(&full[slot(j)], phase(j));
      ka_sm90::fence_proxy_async_shared();
    };
    auto release_tile = [&](unsigned long long* empty, int j) {
      __syncwarp();
      if (lane == 0) ka_sm90::mbarrier_arrive(&empty[slot(j)]);
    };
    // Online softmax of tile j's scores in s_acc (accumulator layout: column group n holds
    // s_acc[4 n + 2 hf + e] = (row g + 8 hf, column 8 n + 2 c4 + e)): s_acc := exp2(S - new max)
    // (unnormalised probabilities), the running sums updated; returns nothing but leaves in
    // alpha[] the factors O must be scaled by, which the caller applies once O is not in flight.
    float alpha[2];
    auto softmax = [&](int j) {
      const int n0 = j * BLOCK_N;
      const bool masked = n0 + BLOCK_N > min_limit;
#pragma unroll
      for (int hf = 0; hf < 2; ++hf)
        alpha[hf] = ka_online_softmax_row<kSTiles>(
            [&](int n, int e) -> float& { return s_acc[4 * n + 2 * hf + e]; }, n0, c4, masked,
            limit[hf], scale_log2, row_max[hf], row_sum[hf]);
    };
    auto rescale_output = [&]() {
#pragma unroll
      for (int n = 0; n < kOTiles; ++n) {
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          o_acc[4 * n + 2 * hf] *= alpha[hf];
          o_acc[4 * n + 2 * hf + 1] *= alpha[hf];
        }
      }
    };
    // P as the A fragments of P V's k16 steps: step kk covers column groups 2 kk and 2 kk + 1.
    auto pack_probabilities = [&]() {
#pragma unroll
      for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
#pragma unroll
        for (int r = 0; r < 4; ++r)
          p_frag[kk][r] =
              ka_pack_pair(s_acc[8 * kk + 2 * r], s_acc[8 * kk + 2 * r + 1], ka_qkv_t());
      }
    };
    auto fence_scores = [&]() {
#pragma unroll
      for (int i = 0; i < BLOCK_N / 2; ++i) ka_sm90::fence_register(s_acc[i]);
    };
    auto fence_output = [&]() {
#pragma unroll
      for (int i = 0; i < kD / 2; ++i) ka_sm90::fence_register(o_acc[i]);
    };

    // PINGPONG (FlashAttention-3's inter-warpgroup schedule): the consumers take turns at issuing
    // their products, so that one's softmax runs under the other's. Turn t of consumer c waits on
    // barrier kTurnBarrier + c, on which the other consumer arrives once it has issued its turn
    // t - 1 (consumer 1 arrives once at the start, so consumer 0 goes first). Both take kv_tiles +
    // 1 turns, a consumer whose rows see fewer key tiles passing one as it releases each tile it
    // skips (not after them: the producer's ring needs those releases to go on), and consumer 1
    // skips its last arrival: every barrier's arrivals then match its waits.
    [[maybe_unused]] const int turns = kv_tiles > 0 ? kv_tiles + 1 : 0;
    [[maybe_unused]] int turn = 0;
    auto take_turn = [&]() {
      if constexpr (kPingPong) ka_sm90::named_barrier_sync(kTurnBarrier + consumer, 256);
    };
    auto pass_turn = [&]() {
      if constexpr (kPingPong) {
        ++turn;
        if (consumer == 0 || turn < turns)
          ka_sm90::named_barrier_arrive(kTurnBarrier + 1 - consumer, 256);
      }
    };
    if constexpr (kPingPong) {
      if (consumer == 1 && turns > 0) ka_sm90::named_barrier_arrive(kTurnBarrier, 256);
    }

    // The pipeline (FlashAttention-3's intra-warpgroup overlap): S_j = Q K_j^T and O += P_{j-1}
    // V_{j-1} are issued together; the softmax of S_j runs while P_{j-1} V_{j-1} is still on the
    // tensor cores, and only the rescaling of O waits for it.
    ka_sm90::mbarrier_wait(&q_full[qb], (item / kQBuffers) & 1);
    if (my_tiles > 0) {
      wait_tile(k_full, 0);
      take_turn();
      ka_sm90::wgmma_fence();
      issue_scores(0);
      pass_turn();
      ka_sm90::wgmma_wait<0>();
      fence_scores();
      release_tile(k_empty, 0);
      softmax(0);
      pack_probabilities();
    }
#pragma unroll 1
    for (int j = 1; j < my_tiles; ++j) {
      // V_{j-1} was copied before K_j, so waiting for it first costs nothing, and both waits
      // before the fence keep the two products back to back (a wait between them makes ptxas
      // inject a warpgroup arrive, C7519).
      wait_tile(v_full, j - 1);
      wait_tile(k_full, j);
      take_turn();
      ka_sm90::wgmma_fence();
      issue_scores(j);
      issue_values(j - 1);
      pass_turn();
      ka_sm90::wgmma_wait<1>();  // S_j has landed (groups complete in order)
      fence_scores();
      release_tile(k_empty, j);
      softmax(j);
      ka_sm90::wgmma_wait<0>();  // P_{j-1} V_{j-1} has landed
      fence_output();
      release_tile(v_empty, j - 1);
      rescale_output();
      pack_probabilities();
    }
    if (my_tiles > 0) {
      wait_tile(v_full, my_tiles - 1);
      take_turn();
      ka_sm90::wgmma_fence();
      issue_values(my_tiles - 1);
      pass_turn();
      ka_sm90::wgmma_wait<0>();
      fence_output();
      release_tile(v_empty, my_tiles - 1);
    }
    // Tiles the CTA loads for its other warpgroup only.
#pragma unroll 1
    for (int j = my_tiles; j < kv_tiles; ++j) {
      ka_sm90::mbarrier_wait(&k_full[slot(j)], phase(j));
      release_tile(k_empty, j);
      ka_sm90::mbarrier_wait(&v_full[slot(j)], phase(j));
      release_tile(v_empty, j);
      take_turn();
      pass_turn();
    }
    if constexpr (kPingPong) {
      while (turn < turns) {
        take_turn();
        pass_turn();
      }
    }

    // ---- Epilogue: O / l, lse = (m + log2 l) * ln 2; zero and -inf for rows that saw no key.
    float inv_sum[2];
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      float sum = row_sum[hf];
      sum += __shfl_xor_sync(full_mask, sum, 1);
      sum += __shfl_xor_sync(full_mask, sum, 2);
      inv_sum[hf] = sum > 0.0f ? 1.0f / sum : 0.0f;
      if (KA_HAS_LSE && c4 == 0 && query[hf] < q_len) {
        const float lse = ka_softmax_lse(row_max[hf], sum, scale_log2);
        ka.store_lse(b, query[hf], h, lse);
      }
    }

    if constexpr (sizeof(ka_o_t) == 2) {
      // Stage the warpgroup's 64 rows in its own rows of Q's tile (same swizzled layout: element
      // (r, d) in column block d / 64, chunk (d % 64) / 8 of row 64 c + r), once every warp's last
      // S = Q K^T has read them, then write whole 16-byte chunks of each output row.
      auto staged = [&](int r, int chunk) {
        return q_tile + (chunk / 8) * kBlockM * 128 +
               ka_sm90::swizzle_128b_offset(consumer * 64 + r, chunk % 8);
      };
      ka_sm90::named_barrier_sync(1 + consumer, 128);
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = warp * 16 + g + 8 * hf;
#pragma unroll
        for (int n = 0; n < kOTiles; ++n) {
          *reinterpret_cast<unsigned*>(staged(r, n) + 4 * c4) =
              ka_pack_pair(o_acc[4 * n + 2 * hf] * inv_sum[hf],
                           o_acc[4 * n + 2 * hf + 1] * inv_sum[hf], ka_o_t());
        }
      }
      ka_sm90::named_barrier_sync(1 + consumer, 128);
#pragma unroll
      for (int i = 0; i < 64 * kChunks / 128; ++i) {
        const int idx = thread + i * 128;
        const int r = idx / kChunks;
        const int chunk = idx % kChunks;
        const long long q = first_query + r;
        if (q >= q_len) continue;
        ka_o_t* dst = ka.o_row(b, q, h) + chunk * 8;
        const uint4 packed = *reinterpret_cast<const uint4*>(staged(r, chunk));
        if ((reinterpret_cast<unsigned long long>(dst) & 15) == 0) {
          *reinterpret_cast<uint4*>(dst) = packed;
        } else {
          const ka_o_t* src = reinterpret_cast<const ka_o_t*>(&packed);
#pragma unroll
          for (int e = 0; e < 8; ++e) dst[e] = src[e];
        }
      }
    } else {
      // float32 output: straight from the accumulators.
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        if (query[hf] >= q_len) continue;
        ka_o_t* out = ka.o_row(b, query[hf], h);
#pragma unroll
        for (int n = 0; n < kOTiles; ++n) {
          out[n * 8 + 2 * c4] = ka_from_float<ka_o_t>(o_acc[4 * n + 2 * hf] * inv_sum[hf]);
          out[n * 8 + 2 * c4 + 1] = ka_from_float<ka_o_t>(o_acc[4 * n + 2 * hf + 1] * inv_sum[hf]);
        }
      }
    }

    // The staged output has been read back: the producer may copy a later tile's Q here.
    __syncwarp();
    if (lane == 0) ka_sm90::mbarrier_arrive(&q_empty[qb]);
  });
}
