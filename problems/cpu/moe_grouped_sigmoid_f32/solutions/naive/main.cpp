// A mixture-of-experts layer with DeepSeek-V3 routing, written the obvious way: per token, the
// sigmoid scores, the selection scores (score + bias), the 2 best of the 4 groups of experts (a
// group ranked by the sum of its two best selection scores), the 4 best experts of those groups,
// their weights (scores over their sum, times 2.5); then each chosen expert's SwiGLU MLP as dot
// products and the weighted sum of their outputs. One thread.
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernelarc/abi.h"

namespace {

// The routing rule of the definition's op_params.
constexpr int kTopK = 4;
constexpr int kGroups = 4;
constexpr int kKeptGroups = 2;
constexpr float kRoutedScaling = 2.5f;

char g_error[256];

int fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_error, sizeof g_error, format, args);
  va_end(args);
  return 1;
}

bool is_contiguous(const ka_tensor& t) {
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.stride[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

int check(const ka_tensor& t, const char* name, int ndim) {
  if (t.dtype != KA_FLOAT32) return fail("%s: expected float32, got dtype %d", name, t.dtype);
  if (t.ndim != ndim) return fail("%s: expected %d dims, got %d", name, ndim, t.ndim);
  if (!is_contiguous(t)) return fail("%s: expected a contiguous row-major tensor", name);
  return 0;
}

float dot(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

// Inputs: hidden_states [T, H], router_logits [T, E], e_score_correction_bias [E],
// w13 [E, 2I, H] (gate rows, then up rows), w2 [E, H, I]. Output: output [T, H]. All float32.
extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 5 || n_outputs != 1)
    return fail("expected 5 inputs and 1 output, got %d and %d", n_inputs, n_outputs);
  const ka_tensor &x = inputs[0], &logits = inputs[1], &bias = inputs[2];
  const ka_tensor &w13 = inputs[3], &w2 = inputs[4];
  ka_tensor& out = outputs[0];
  if (check(x, "hidden_states", 2) || check(logits, "router_logits", 2) ||
      check(bias, "e_score_correction_bias", 1) || check(w13, "w13", 3) || check(w2, "w2", 3) ||
      check(out, "output", 2))
    return 1;
  const int64_t tokens = x.shape[0], hidden = x.shape[1], experts = logits.shape[1];
  const int64_t inter = w2.shape[2];
  if (logits.shape[0] != tokens || bias.shape[0] != experts || w13.shape[0] != experts ||
      w13.shape[1] != 2 * inter || w13.shape[2] != hidden || w2.shape[0] != experts ||
      w2.shape[1] != hidden || out.shape[0] != tokens || out.shape[1] != hidden)
    return fail("shapes disagree");
  if (experts % kGroups != 0 || kKeptGroups * (experts / kGroups) < kTopK)
    return fail("%lld experts do not form %d groups holding %d experts",
                static_cast<long long>(experts), kGroups, kTopK);

  const float* xd = static_cast<const float*>(x.data);
  const float* ld = static_cast<const float*>(logits.data);
  const float* bd = static_cast<const float*>(bias.data);
  const float* w13d = static_cast<const float*>(w13.data);
  const float* w2d = static_cast<const float*>(w2.data);
  float* od = static_cast<float*>(out.data);
  const int64_t per_group = experts / kGroups;
  std::vector<float> score(experts), select(experts), h(inter), acc(hidden);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* xrow = xd + t * hidden;
    for (int64_t e = 0; e < experts; ++e) {
      score[e] = 1.0f / (1.0f + std::exp(-ld[t * experts + e]));
      select[e] = score[e] + bd[e];
    }
    // Group scores: the sum of each group's two best selection scores.
    float group_score[kGroups];
    for (int g = 0; g < kGroups; ++g) {
      float best = -INFINITY, second = -INFINITY;
      for (int64_t i = 0; i < per_group; ++i) {
        const float c = select[g * per_group + i];
        if (c > best) {
          second = best;
          best = c;
        } else if (c > second) {
          second = c;
        }
      }
      group_score[g] = best + second;
    }
    // The kKeptGroups best groups (ties to the lower group); the others' experts are excluded.
    bool kept[kGroups] = {};
    for (int round = 0; round < kKeptGroups; ++round) {
      int pick = -1;
      for (int g = 0; g < kGroups; ++g)
        if (!kept[g] && (pick < 0 || group_score[g] > group_score[pick])) pick = g;
      kept[pick] = true;
    }
    for (int64_t e = 0; e < experts; ++e)
      if (!kept[e / per_group]) select[e] = -INFINITY;
    // The kTopK best experts (ties to the lower expert) and their weights.
    int64_t ids[kTopK];
    float weights[kTopK], total = 0.0f;
    for (int k = 0; k < kTopK; ++k) {
      int64_t pick = -1;
      for (int64_t e = 0; e < experts; ++e) {
        bool taken = false;
        for (int j = 0; j < k; ++j) taken = taken || ids[j] == e;
        if (!taken && (pick < 0 || select[e] > select[pick])) pick = e;
      }
      ids[k] = pick;
      weights[k] = score[pick];
      total += score[pick];
    }
    for (int k = 0; k < kTopK; ++k) weights[k] = weights[k] / (total + 1e-20f) * kRoutedScaling;
    // The chosen experts' SwiGLU MLPs, summed with their weights.
    for (int64_t j = 0; j < hidden; ++j) acc[j] = 0.0f;
    for (int k = 0; k < kTopK; ++k) {
      const float* gate = w13d + ids[k] * 2 * inter * hidden;
      const float* up = gate + inter * hidden;
      const float* down = w2d + ids[k] * hidden * inter;
      for (int64_t i = 0; i < inter; ++i) {
        const float g = dot(xrow, gate + i * hidden, hidden);
        const float u = dot(xrow, up + i * hidden, hidden);
        h[i] = g / (1.0f + std::exp(-g)) * u;
      }
      for (int64_t j = 0; j < hidden; ++j)
        acc[j] += weights[k] * dot(h.data(), down + j * inter, inter);
    }
    for (int64_t j = 0; j < hidden; ++j) od[t * hidden + j] = acc[j];
  }
  return 0;
}
