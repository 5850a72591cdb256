// A mixture-of-experts layer on the CPU (family moe): routing, the experts' gated MLPs, and the
// weighted combine, in float32 arithmetic.
//
//   1. Routing, over blocks of TOKEN_BLOCK tokens: the E logits of each token are read (logit) or
//      computed as x . router_row(e) in float32 (the block's x rows converted once, the same tiled
//      dot products as the experts use), and ka_moe_route (ka_moe_routing.h) picks the KA_TOP_K
//      experts and their weights.
//   2. The (token, k) slots are grouped by expert with a counting sort (within an expert in token
//      order, so every run groups alike), and each expert's slots cut into tasks of TOKEN_BLOCK.
//   3. A task (expert e, up to TOKEN_BLOCK tokens) converts its x rows to float once. For the
//      intermediate columns in blocks of N_BLOCK it computes the TOKEN_BLOCK x N_BLOCK tiles of
//      x W_gate^T and x W_up^T, h = act(g) * u rounded to ka_act_t (as the eager reference in the
//      hidden states' dtype rounds it); then y = h W_down^T over the hidden columns in blocks of
//      N_BLOCK, rounded likewise, into a per-slot buffer [T * top_k, H] of ka_act_t.
//      Every product is a tile of dot products (the weights' rows run along the reduced axis):
//      ROW_TILE tokens x COL_TILE weight rows in registers, SIMD_WIDTH float lanes along the
//      reduced axis, folded once at the end; the reduced axis goes in K_BLOCK chunks, so the
//      tokens' and the weight rows' chunks stay in cache while the tile sweeps them. With STAGE_W,
//      16-bit weights are converted to float once per task and chunk (each weight element once
//      per TOKEN_BLOCK tokens, not once per ROW_TILE: the better choice when experts get many
//      tokens); otherwise (and always for float32 weights) they are read in place and converted
//      in the inner loop (no staging pass: the better choice for a token or two per expert).
//      SPLIT > 1 (or SPLIT 0, automatically, when there are fewer than two tasks per thread, as
//      in decoding) cuts each task's columns into that many chunks, as separate tasks in two
//      passes: gate/up (h stored as ka_act_t, exact, since h is rounded to it anyway), then down.
//   4. Combine, over tokens: out[t] = sum_k weight_k * y_k in float32, in k order, rounded once.
//
// The phases run in one OpenMP region of THREADS threads (0: all), with dynamic scheduling for
// the expert tasks (their sizes differ). Below PARALLEL_MIN_WORK multiply-adds the call stays on
// one thread.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "ka_cpu_dot_tiles.h"
#include "ka_cpu_entry.h"
#include "ka_moe_routing.h"

namespace {

using ka_tiles::block_dot;

constexpr int kExperts = KA_EXPERTS;
constexpr int kHidden = KA_HIDDEN;
constexpr int kInter = KA_INTER;
constexpr int kTopK = KA_TOP_K;
constexpr int kTokenBlock = TOKEN_BLOCK;
constexpr int kNBlock = N_BLOCK;
constexpr int kKBlock = K_BLOCK;
constexpr int kMaxDepth = kHidden > kInter ? kHidden : kInter;
constexpr int kStageDepth = kKBlock < kMaxDepth ? kKBlock : kMaxDepth;
// float32 weights are always read in place; STAGE_W converts 16-bit ones once per task.
constexpr bool kStageWeights = STAGE_W && !std::is_same_v<ka_w_t, float>;
// The router's logits are computed in column blocks of at most this many experts.
constexpr int kRouterBlock = kNBlock < kExperts ? kNBlock : kExperts;

/// One group of up to TOKEN_BLOCK slots of one expert: order[first, first + rows).
struct Task {
  int expert;
  int rows;
  long long first;
};

/// Per-thread buffers, sized once per thread (the OpenMP workers persist, so later calls fault in
/// no fresh pages).
struct Workspace {
  std::vector<float> x;       // kTokenBlock x kHidden: the task's tokens, as float
  std::vector<float> h;       // kTokenBlock x kInter: act(g) * u, rounded to ka_act_t
  std::vector<float> gate;    // kTokenBlock x kNBlock
  std::vector<float> up;      // kTokenBlock x kNBlock (also the down projection's tile)
  std::vector<float> stage;   // kNBlock x kStageDepth: converted weight rows (STAGE_W)
  std::vector<float> logits;  // kTokenBlock x kExperts
  std::vector<float> acc;     // kHidden: the combine's row

  void reserve() {
    if (!x.empty()) return;
    x.assign(static_cast<size_t>(kTokenBlock) * kHidden, 0.0f);
    h.assign(static_cast<size_t>(kTokenBlock) * kInter, 0.0f);
    gate.assign(static_cast<size_t>(kTokenBlock) * kNBlock, 0.0f);
    up.assign(static_cast<size_t>(kTokenBlock) * kNBlock, 0.0f);
    if (kStageWeights) stage.assign(static_cast<size_t>(kNBlock) * kStageDepth, 0.0f);
    logits.assign(static_cast<size_t>(kTokenBlock) * kExperts, 0.0f);
    acc.assign(kHidden, 0.0f);
  }
};

Workspace& workspace() {
  thread_local Workspace ws;
  ws.reserve();
  return ws;
}

/// The calling thread's buffers for one call (grown, never shrunk).
struct CallBuffers {
  std::vector<int> ids;          // T x top_k: the chosen experts
  std::vector<float> weights;    // T x top_k: their weights
  std::vector<long long> order;  // the slots (t * top_k + k) grouped by expert
  std::vector<long long> start;  // kExperts + 1: each expert's range of order
  std::vector<Task> tasks;
  std::vector<ka_act_t> h;  // (split passes) slots in `order` x kInter
  std::vector<ka_act_t> y;  // slots (t * top_k + k) x kHidden: each expert's output
};

CallBuffers& call_buffers() {
  thread_local CallBuffers buffers;
  return buffers;
}

/// c[i][j] = a[i] . w[j] for i < rows, j < cols, where w[j] = rows_of + j * depth (cols
/// consecutive weight rows of `depth` elements): the depth in K_BLOCK chunks, each chunk of
/// the weight rows converted to float first when staging.
template <typename W>
void project(const float* a, int rows, const W* rows_of, int cols, int depth, float* c,
             long long ldc, float* stage) {
  for (int d0 = 0; d0 < depth; d0 += kKBlock) {
    const int chunk = depth - d0 < kKBlock ? depth - d0 : kKBlock;
    if (kStageWeights && stage != nullptr) {
      for (int j = 0; j < cols; ++j) {
        const W* src = rows_of + static_cast<long long>(j) * depth + d0;
        float* dst = stage + static_cast<long long>(j) * kStageDepth;
#pragma omp simd
        for (int d = 0; d < chunk; ++d) dst[d] = ka_to_float(src[d]);
      }
      block_dot<float>(
          a + d0, depth, rows,
          [&](int j) { return stage + static_cast<long long>(j) * kStageDepth; }, cols, chunk, c,
          ldc, d0 > 0);
    } else {
      block_dot<W>(
          a + d0, depth, rows,
          [&](int j) { return rows_of + static_cast<long long>(j) * depth + d0; }, cols, chunk, c,
          ldc, d0 > 0);
    }
  }
}

/// Routes tokens [t0, t0 + rows): ids and weights of their slots.
void route_block(const KaArgs& ka, long long t0, int rows, int* ids, float* weights,
                 Workspace& ws) {
  float* logits = ws.logits.data();
#if KA_ROUTER_WEIGHT
  float* x = ws.x.data();
  for (int i = 0; i < rows; ++i) {
    const ka_act_t* src = ka.x_row(t0 + i);
    float* dst = x + static_cast<long long>(i) * kHidden;
#pragma omp simd
    for (int d = 0; d < kHidden; ++d) dst[d] = ka_to_float(src[d]);
  }
  for (int e0 = 0; e0 < kExperts; e0 += kRouterBlock) {
    const int cols = kExperts - e0 < kRouterBlock ? kExperts - e0 : kRouterBlock;
    for (int d0 = 0; d0 < kHidden; d0 += kKBlock) {
      const int chunk = kHidden - d0 < kKBlock ? kHidden - d0 : kKBlock;
      block_dot<ka_logit_t>(
          x + d0, kHidden, rows, [&](int j) { return ka.router_row(e0 + j) + d0; }, cols, chunk,
          logits + e0, kExperts, d0 > 0);
    }
  }
#else
  for (int i = 0; i < rows; ++i)
    for (int e = 0; e < kExperts; ++e) logits[i * kExperts + e] = ka.logit(t0 + i, e);
#endif
  for (int i = 0; i < rows; ++i) {
    const long long slot = (t0 + i) * kTopK;
    ka_moe_route(ka, logits + i * kExperts, ids + slot, weights + slot);
  }
}

/// The task's tokens as float rows of ws.x.
void load_tokens(const KaArgs& ka, const Task& task, const long long* order, Workspace& ws) {
  for (int i = 0; i < task.rows; ++i) {
    const ka_act_t* src = ka.x_row(order[task.first + i] / kTopK);
    float* dst = ws.x.data() + static_cast<long long>(i) * kHidden;
#pragma omp simd
    for (int d = 0; d < kHidden; ++d) dst[d] = ka_to_float(src[d]);
  }
}

/// h = act(x W_gate^T) * (x W_up^T) for the intermediate columns [n_begin, n_end), rounded to
/// ka_act_t: store(i, n, h) for each of the task's rows i.
template <typename Store>
void gate_up(const KaArgs& ka, const Task& task, int n_begin, int n_end, Workspace& ws,
             Store store) {
  const ka_w_t* gate_rows = ka.gate_rows(task.expert);
  const ka_w_t* up_rows = ka.up_rows(task.expert);
  float* stage = kStageWeights ? ws.stage.data() : nullptr;
  for (int n0 = n_begin; n0 < n_end; n0 += kNBlock) {
    const int cols = n_end - n0 < kNBlock ? n_end - n0 : kNBlock;
    const long long row0 = static_cast<long long>(n0) * kHidden;
    project(ws.x.data(), task.rows, gate_rows + row0, cols, kHidden, ws.gate.data(), kNBlock,
            stage);
    project(ws.x.data(), task.rows, up_rows + row0, cols, kHidden, ws.up.data(), kNBlock, stage);
    for (int i = 0; i < task.rows; ++i) {
      const float* g = ws.gate.data() + i * kNBlock;
      const float* u = ws.up.data() + i * kNBlock;
      for (int n = 0; n < cols; ++n) store(i, n0 + n, ka_moe_activation(g[n]) * u[n]);
    }
  }
}

/// y = h W_down^T for the hidden columns [j_begin, j_end) from the task's rows of ws.h, rounded
/// to ka_act_t into the slots' rows of y.
void down(const KaArgs& ka, const Task& task, const long long* order, int j_begin, int j_end,
          ka_act_t* y, Workspace& ws) {
  const ka_w_t* down_rows = ka.down_rows(task.expert);
  float* stage = kStageWeights ? ws.stage.data() : nullptr;
  float* tile = ws.up.data();
  for (int j0 = j_begin; j0 < j_end; j0 += kNBlock) {
    const int cols = j_end - j0 < kNBlock ? j_end - j0 : kNBlock;
    project(ws.h.data(), task.rows, down_rows + static_cast<long long>(j0) * kInter, cols, kInter,
            tile, kNBlock, stage);
    for (int i = 0; i < task.rows; ++i) {
      ka_act_t* dst = y + order[task.first + i] * kHidden + j0;
      const float* src = tile + i * kNBlock;
      for (int n = 0; n < cols; ++n) dst[n] = ka_from_float<ka_act_t>(src[n]);
    }
  }
}

/// out[t] = sum_k weight_k * y_k in float32, in k order.
void combine(const KaArgs& ka, long long t, const float* weights, const ka_act_t* y,
             Workspace& ws) {
  float* acc = ws.acc.data();
  const ka_act_t* y0 = y + t * kTopK * kHidden;
  const float w0 = weights[t * kTopK];
#pragma omp simd
  for (int d = 0; d < kHidden; ++d) acc[d] = w0 * ka_to_float(y0[d]);
  for (int k = 1; k < kTopK; ++k) {
    const ka_act_t* yk = y0 + static_cast<long long>(k) * kHidden;
    const float wk = weights[t * kTopK + k];
#pragma omp simd
    for (int d = 0; d < kHidden; ++d) acc[d] += wk * ka_to_float(yk[d]);
  }
  ka_act_t* out = ka.out_row(t);
#pragma omp simd
  for (int d = 0; d < kHidden; ++d) out[d] = ka_from_float<ka_act_t>(acc[d]);
}

/// Groups the slots by expert (a counting sort, token order within an expert) and cuts each
/// expert's slots into tasks of TOKEN_BLOCK.
void group_slots(long long slots, CallBuffers& buf) {
  buf.start.assign(kExperts + 1, 0);
  for (long long s = 0; s < slots; ++s) ++buf.start[buf.ids[s] + 1];
  for (int e = 0; e < kExperts; ++e) buf.start[e + 1] += buf.start[e];
  std::vector<long long> next(buf.start.begin(), buf.start.end() - 1);
  for (long long s = 0; s < slots; ++s) buf.order[next[buf.ids[s]]++] = s;
  buf.tasks.clear();
  for (int e = 0; e < kExperts; ++e)
    for (long long p = buf.start[e]; p < buf.start[e + 1]; p += kTokenBlock)
      buf.tasks.push_back(
          {e, static_cast<int>(std::min<long long>(kTokenBlock, buf.start[e + 1] - p)), p});
}

/// Column chunks of `n` columns for `parts` parts, in whole N_BLOCKs.
int chunk_size(int n, int parts) {
  const int blocks = (n + kNBlock - 1) / kNBlock;
  return (blocks + parts - 1) / parts * kNBlock;
}

}  // namespace

static void ka_compute(const KaArgs& ka) {
  const long long tokens = ka.tokens();
  if (tokens <= 0) return;
  const long long slots = tokens * kTopK;
  CallBuffers& buf = call_buffers();
  buf.ids.resize(slots);
  buf.weights.resize(slots);
  buf.order.resize(slots);
  buf.y.resize(static_cast<size_t>(slots) * kHidden);

  const int threads = ka_thread_count();
  const long long work =
      slots * 3LL * kHidden * kInter +
      (KA_ROUTER_WEIGHT ? tokens * static_cast<long long>(kExperts) * kHidden : 0LL);
  const bool parallel = threads > 1 && work >= PARALLEL_MIN_WORK;
  const long long route_blocks = (tokens + kTokenBlock - 1) / kTokenBlock;
  int split = 1;  // column chunks per task; 1: gate/up and down fused in one task
  int inter_chunk = kInter, hidden_chunk = kHidden;
  long long inter_tasks = 0, hidden_tasks = 0;

#pragma omp parallel num_threads(threads) if (parallel)
  {
    Workspace& ws = workspace();
#pragma omp for schedule(dynamic, 1)
    for (long long b = 0; b < route_blocks; ++b) {
      const long long t0 = b * kTokenBlock;
      route_block(ka, t0, static_cast<int>(std::min<long long>(kTokenBlock, tokens - t0)),
                  buf.ids.data(), buf.weights.data(), ws);
    }
#pragma omp single
    {
      group_slots(slots, buf);
      const long long count = static_cast<long long>(buf.tasks.size());
      split = SPLIT;
      if (split == 0) {
        // Automatic: cut the columns when there are fewer than two tasks per thread.
        const long long want = 2LL * omp_get_num_threads();
        split = !parallel || count >= want ? 1 : static_cast<int>((want + count - 1) / count);
      }
      if (split > 1) {
        inter_chunk = chunk_size(kInter, split);
        hidden_chunk = chunk_size(kHidden, split);
        const long long inter_parts = (kInter + inter_chunk - 1) / inter_chunk;
        const long long hidden_parts = (kHidden + hidden_chunk - 1) / hidden_chunk;
        if (inter_parts * hidden_parts == 1) split = 1;  // one block of columns: nothing to cut
        inter_tasks = count * inter_parts;
        hidden_tasks = count * hidden_parts;
        if (split > 1) buf.h.resize(static_cast<size_t>(slots) * kInter);
      }
    }
    const Task* tasks = buf.tasks.data();
    const long long* order = buf.order.data();
    ka_act_t* y = buf.y.data();
    if (split == 1) {
      const long long count = static_cast<long long>(buf.tasks.size());
#pragma omp for schedule(dynamic, 1)
      for (long long i = 0; i < count; ++i) {
        const Task& task = tasks[i];
        load_tokens(ka, task, order, ws);
        float* h = ws.h.data();
        gate_up(ka, task, 0, kInter, ws, [h](int r, int n, float value) {
          h[static_cast<long long>(r) * kInter + n] = ka_to_float(ka_from_float<ka_act_t>(value));
        });
        down(ka, task, order, 0, kHidden, y, ws);
      }
    } else {
      const long long inter_parts = inter_tasks / static_cast<long long>(buf.tasks.size());
      const long long hidden_parts = hidden_tasks / static_cast<long long>(buf.tasks.size());
      ka_act_t* h_all = buf.h.data();
#pragma omp for schedule(dynamic, 1)
      for (long long i = 0; i < inter_tasks; ++i) {
        const Task& task = tasks[i / inter_parts];
        const int n0 = static_cast<int>(i % inter_parts) * inter_chunk;
        load_tokens(ka, task, order, ws);
        ka_act_t* h = h_all + task.first * kInter;
        gate_up(ka, task, n0, std::min(n0 + inter_chunk, kInter), ws,
                [h](int r, int n, float value) {
                  h[static_cast<long long>(r) * kInter + n] = ka_from_float<ka_act_t>(value);
                });
      }
#pragma omp for schedule(dynamic, 1)
      for (long long i = 0; i < hidden_tasks; ++i) {
        const Task& task = tasks[i / hidden_parts];
        const int j0 = static_cast<int>(i % hidden_parts) * hidden_chunk;
        const ka_act_t* src = h_all + task.first * kInter;
        float* dst = ws.h.data();
        const long long n = static_cast<long long>(task.rows) * kInter;
#pragma omp simd
        for (long long k = 0; k < n; ++k) dst[k] = ka_to_float(src[k]);
        down(ka, task, order, j0, std::min(j0 + hidden_chunk, kHidden), y, ws);
      }
    }
#pragma omp for schedule(static)
    for (long long t = 0; t < tokens; ++t) combine(ka, t, buf.weights.data(), y, ws);
  }
}
