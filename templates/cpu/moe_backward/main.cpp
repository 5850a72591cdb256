// The experts' backward pass of a mixture-of-experts layer on the CPU (family moe_backward), in
// float32 arithmetic, given the routing the forward pass chose. With h = act(x W_gate^T) *
// (x W_up^T) and out = sum_k w_k h_k W_down^T, for the gradient dy of out:
//
//   1. The valid slots (t * top_k + k with an expert id in [0, KA_EXPERTS)) are grouped by expert
//      with a counting sort, token order within an expert, and cut into tasks of TOKEN_BLOCK.
//   2. A task (expert e, up to TOKEN_BLOCK slots) keeps its x rows and w * dy rows as float,
//      recomputes g and u (ROW_TILE x COL_TILE register tiles of SIMD_WIDTH-lane dot products,
//      ka_cpu_dot_tiles.h), h = act(g) * u rounded to ka_act_t as the forward pass rounds it,
//      and, when the routing weights' gradient is asked for, y = h W_down^T and dot(dy, y).
//      Then dh = (w dy) W_down, dg = dh * u * act'(g), du = dh * act(g), and the slot's
//      dx = dg W_gate + du W_up. These three products run along the weights' rows (a row of
//      W_down scales into every dh row of the task at once), so they vectorize over the row.
//      h, dg, du and the x and w * dy rows stay in per-slot buffers for step 3.
//   3. Each expert's weight gradients are sums over its slots, in slot order: dW_gate = dg^T x,
//      dW_up = du^T x, dW_down = (w dy)^T h. A task owns N_BLOCK rows of one gradient, keeps
//      them in float, streams the expert's slots through them and writes them once (zeros for
//      an expert no token chose).
//   4. dx of token t sums its slots' dx in k order.
//
// The steps run in one OpenMP region of THREADS threads (0: all), each step's tasks dynamically
// scheduled. No atomics: every sum has one order, so every run gives the same bits. Below
// PARALLEL_MIN_WORK multiply-adds the call stays on one thread.
#include <algorithm>
#include <vector>

#include "ka_cpu_dot_tiles.h"
#include "ka_cpu_entry.h"

namespace {

using ka_tiles::block_dot;

constexpr int kExperts = KA_EXPERTS;
constexpr int kHidden = KA_HIDDEN;
constexpr int kInter = KA_INTER;
constexpr int kTopK = KA_TOP_K;
constexpr int kTokenBlock = TOKEN_BLOCK;
constexpr int kNBlock = N_BLOCK;
constexpr int kWidest = kHidden > kInter ? kHidden : kInter;

/// Slots order[first, first + rows) of one expert.
struct Task {
  int expert;
  int rows;
  long long first;
};

/// N_BLOCK rows of one expert's gradient: gate and up rows from `row` (both), or down rows.
struct GradTask {
  int expert;
  bool down;
  int row;
};

/// The calling thread's buffers for one call (grown, never shrunk). Rows of x, dyw, h, dg and
/// du are indexed by position in `order`; rows of dx by slot.
struct CallBuffers {
  std::vector<long long> order;
  std::vector<long long> start;  // kExperts + 1: each expert's range of order
  std::vector<Task> tasks;
  std::vector<GradTask> grad_tasks;
  std::vector<float> x, dyw, h, dg, du, dx;
};

CallBuffers& call_buffers() {
  thread_local CallBuffers buffers;
  return buffers;
}

/// Per-thread scratch, sized once (the OpenMP workers persist).
struct Workspace {
  std::vector<float> g, u, dh;  // kTokenBlock x kInter
  std::vector<float> y;         // kTokenBlock x kHidden
  std::vector<float> acc;       // 2 x kNBlock x kWidest: a gradient task's rows

  void reserve() {
    if (!g.empty()) return;
    g.assign(static_cast<size_t>(kTokenBlock) * kInter, 0.0f);
    u.assign(g.size(), 0.0f);
    dh.assign(g.size(), 0.0f);
    y.assign(static_cast<size_t>(kTokenBlock) * kHidden, 0.0f);
    acc.assign(2ull * kNBlock * kWidest, 0.0f);
  }
};

Workspace& workspace() {
  thread_local Workspace ws;
  ws.reserve();
  return ws;
}

bool valid_expert(long long id) {
  return id >= 0 && id < kExperts;
}

/// Groups the valid slots by expert and cuts them into tasks, then lists the gradient tasks. A
/// slot with no expert gets a zero routing-weight gradient here (its dx stays zero).
void group_slots(const KaArgs& ka, long long slots, CallBuffers& buf) {
  buf.start.assign(kExperts + 1, 0);
  for (long long s = 0; s < slots; ++s) {
    const long long id = ka.expert(s / kTopK, static_cast<int>(s % kTopK));
    if (valid_expert(id))
      ++buf.start[id + 1];
    else
      ka.set_route_grad(s / kTopK, static_cast<int>(s % kTopK), 0.0f);
  }
  for (int e = 0; e < kExperts; ++e) buf.start[e + 1] += buf.start[e];
  buf.order.resize(buf.start[kExperts]);
  std::vector<long long> next(buf.start.begin(), buf.start.end() - 1);
  for (long long s = 0; s < slots; ++s) {
    const long long id = ka.expert(s / kTopK, static_cast<int>(s % kTopK));
    if (valid_expert(id)) buf.order[next[id]++] = s;
  }
  buf.tasks.clear();
  buf.grad_tasks.clear();
  for (int e = 0; e < kExperts; ++e) {
    for (long long p = buf.start[e]; p < buf.start[e + 1]; p += kTokenBlock)
      buf.tasks.push_back(
          {e, static_cast<int>(std::min<long long>(kTokenBlock, buf.start[e + 1] - p)), p});
    for (int row = 0; row < kInter; row += kNBlock) buf.grad_tasks.push_back({e, false, row});
    for (int row = 0; row < kHidden; row += kNBlock) buf.grad_tasks.push_back({e, true, row});
  }
}

/// Step 2 for one task.
void slot_task(const KaArgs& ka, const Task& task, CallBuffers& buf, Workspace& ws) {
  const int rows = task.rows;
  const long long* order = buf.order.data() + task.first;
  float* x = buf.x.data() + task.first * kHidden;
  float* dyw = buf.dyw.data() + task.first * kHidden;
  float* h = buf.h.data() + task.first * kInter;
  float* dg = buf.dg.data() + task.first * kInter;
  float* du = buf.du.data() + task.first * kInter;
  for (int r = 0; r < rows; ++r) {
    const long long t = order[r] / kTopK;
    const float w = ka.route_weight(t, static_cast<int>(order[r] % kTopK));
    const ka_act_t* xs = ka.x_row(t);
    const ka_act_t* dys = ka.dy_row(t);
    float* xr = x + static_cast<long long>(r) * kHidden;
    float* dr = dyw + static_cast<long long>(r) * kHidden;
#pragma omp simd
    for (int d = 0; d < kHidden; ++d) {
      xr[d] = ka_to_float(xs[d]);
      dr[d] = w * ka_to_float(dys[d]);
    }
  }
  const ka_w_t* gate = ka.gate_rows(task.expert);
  const ka_w_t* up = ka.up_rows(task.expert);
  const ka_w_t* down = ka.down_rows(task.expert);
  float* g = ws.g.data();
  float* u = ws.u.data();
  block_dot<ka_w_t>(
      x, kHidden, rows, [&](int j) { return gate + static_cast<long long>(j) * kHidden; }, kInter,
      kHidden, g, kInter, false);
  block_dot<ka_w_t>(
      x, kHidden, rows, [&](int j) { return up + static_cast<long long>(j) * kHidden; }, kInter,
      kHidden, u, kInter, false);
  const long long tile = static_cast<long long>(rows) * kInter;
  for (long long i = 0; i < tile; ++i)
    h[i] = ka_to_float(ka_from_float<ka_act_t>(ka_moe_activation(g[i]) * u[i]));

#if KA_HAS_GRAD_ROUTING
  float* y = ws.y.data();
  block_dot<ka_w_t>(
      h, kInter, rows, [&](int j) { return down + static_cast<long long>(j) * kInter; }, kHidden,
      kInter, y, kHidden, false);
  for (int r = 0; r < rows; ++r) {
    const long long t = order[r] / kTopK;
    const ka_act_t* dys = ka.dy_row(t);
    const float* yr = y + static_cast<long long>(r) * kHidden;
    float total = 0.0f;
#pragma omp simd reduction(+ : total)
    for (int d = 0; d < kHidden; ++d)
      total += ka_to_float(dys[d]) * ka_to_float(ka_from_float<ka_act_t>(yr[d]));
    ka.set_route_grad(t, static_cast<int>(order[r] % kTopK), total);
  }
#endif

  // dh = (w dy) W_down: row d of W_down, scaled by each slot's (w dy)[d].
  float* dh = ws.dh.data();
  std::fill(dh, dh + tile, 0.0f);
  for (int d = 0; d < kHidden; ++d) {
    const ka_w_t* wrow = down + static_cast<long long>(d) * kInter;
    for (int r = 0; r < rows; ++r) {
      const float scale = dyw[static_cast<long long>(r) * kHidden + d];
      float* out = dh + static_cast<long long>(r) * kInter;
#pragma omp simd
      for (int i = 0; i < kInter; ++i) out[i] += scale * ka_to_float(wrow[i]);
    }
  }
  for (long long i = 0; i < tile; ++i) {
    const float a = ka_moe_activation(g[i]);
    dg[i] = dh[i] * u[i] * ka_moe_activation_grad(g[i]);
    du[i] = dh[i] * a;
  }

  // The slot's dx = dg W_gate + du W_up: rows i of both weights, scaled by dg[i] and du[i].
  for (int r = 0; r < rows; ++r) {
    float* out = buf.dx.data() + order[r] * kHidden;
    std::fill(out, out + kHidden, 0.0f);
  }
  for (int i = 0; i < kInter; ++i) {
    const ka_w_t* grow = gate + static_cast<long long>(i) * kHidden;
    const ka_w_t* urow = up + static_cast<long long>(i) * kHidden;
    for (int r = 0; r < rows; ++r) {
      const float sg = dg[static_cast<long long>(r) * kInter + i];
      const float su = du[static_cast<long long>(r) * kInter + i];
      float* out = buf.dx.data() + order[r] * kHidden;
#pragma omp simd
      for (int d = 0; d < kHidden; ++d)
        out[d] += sg * ka_to_float(grow[d]) + su * ka_to_float(urow[d]);
    }
  }
}

/// acc[j][:] = sum over the expert's slots p of coef[p][row + j] * vec[p][:], for j < count.
void outer_sum(const CallBuffers& buf, int expert, const float* coef, int coef_width, int row,
               int count, const float* vec, int width, float* acc) {
  std::fill(acc, acc + static_cast<long long>(count) * width, 0.0f);
  for (long long p = buf.start[expert]; p < buf.start[expert + 1]; ++p) {
    const float* v = vec + p * width;
    const float* c = coef + p * coef_width + row;
    for (int j = 0; j < count; ++j) {
      const float scale = c[j];
      float* out = acc + static_cast<long long>(j) * width;
#pragma omp simd
      for (int d = 0; d < width; ++d) out[d] += scale * v[d];
    }
  }
}

void store_rows(const float* acc, long long count, ka_wgrad_t* dst) {
  for (long long i = 0; i < count; ++i) dst[i] = ka_from_float<ka_wgrad_t>(acc[i]);
}

/// Step 3 for one task.
void grad_task(const KaArgs& ka, const GradTask& task, const CallBuffers& buf, Workspace& ws) {
  float* acc = ws.acc.data();
  if (task.down) {
    const int count = std::min(kNBlock, kHidden - task.row);
    outer_sum(buf, task.expert, buf.dyw.data(), kHidden, task.row, count, buf.h.data(), kInter,
              acc);
    store_rows(acc, static_cast<long long>(count) * kInter,
               ka.ddown_rows(task.expert) + static_cast<long long>(task.row) * kInter);
    return;
  }
  const int count = std::min(kNBlock, kInter - task.row);
  const long long offset = static_cast<long long>(task.row) * kHidden;
  outer_sum(buf, task.expert, buf.dg.data(), kInter, task.row, count, buf.x.data(), kHidden, acc);
  store_rows(acc, static_cast<long long>(count) * kHidden, ka.dgate_rows(task.expert) + offset);
  outer_sum(buf, task.expert, buf.du.data(), kInter, task.row, count, buf.x.data(), kHidden, acc);
  store_rows(acc, static_cast<long long>(count) * kHidden, ka.dup_rows(task.expert) + offset);
}

/// Step 4: dx of token t, its slots summed in k order.
void combine(const KaArgs& ka, long long t, const CallBuffers& buf) {
  ka_act_t* out = ka.dx_row(t);
  const float* dx = buf.dx.data() + t * kTopK * kHidden;
  for (int d = 0; d < kHidden; ++d) {
    float total = 0.0f;
    for (int k = 0; k < kTopK; ++k) total += dx[static_cast<long long>(k) * kHidden + d];
    out[d] = ka_from_float<ka_act_t>(total);
  }
}

}  // namespace

static void ka_compute(const KaArgs& ka) {
  const long long tokens = ka.tokens();
  if (tokens <= 0) return;
  const long long slots = tokens * kTopK;
  CallBuffers& buf = call_buffers();
  group_slots(ka, slots, buf);
  const long long positions = buf.start[kExperts];
  buf.x.resize(static_cast<size_t>(positions) * kHidden);
  buf.dyw.resize(buf.x.size());
  buf.h.resize(static_cast<size_t>(positions) * kInter);
  buf.dg.resize(buf.h.size());
  buf.du.resize(buf.h.size());
  // Slots with no expert keep dx zero.
  buf.dx.assign(static_cast<size_t>(slots) * kHidden, 0.0f);

  const int threads = ka_thread_count();
  const long long work = positions * 9LL * kHidden * kInter;
  const bool parallel = threads > 1 && work >= PARALLEL_MIN_WORK;
  const long long task_count = static_cast<long long>(buf.tasks.size());
  const long long grad_count = static_cast<long long>(buf.grad_tasks.size());
#pragma omp parallel num_threads(threads) if (parallel)
  {
    Workspace& ws = workspace();
#pragma omp for schedule(dynamic, 1)
    for (long long i = 0; i < task_count; ++i) slot_task(ka, buf.tasks[i], buf, ws);
#pragma omp for schedule(dynamic, 1)
    for (long long i = 0; i < grad_count; ++i) grad_task(ka, buf.grad_tasks[i], buf, ws);
#pragma omp for schedule(static)
    for (long long t = 0; t < tokens; ++t) combine(ka, t, buf);
  }
}
