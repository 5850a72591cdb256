// A mixture-of-experts layer with a softmax router, written the obvious way: per token, the
// router's logits as dot products with its weight rows, the softmax over the experts, the 2 best
// experts (ties to the lower one) weighted by their softmax scores as they are (no
// renormalization); then each chosen expert's SwiGLU MLP as dot products and the weighted sum
// of their outputs. One thread.
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernelarc/abi.h"

namespace {

constexpr int kTopK = 2;  // the definition's op_params.top_k

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

// Inputs: hidden_states [T, H], gate_weight [E, H] (the router), w1 [E, I, H] (gate),
// w3 [E, I, H] (up), w2 [E, H, I] (down). Output: output [T, H]. All float32.
extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 5 || n_outputs != 1)
    return fail("expected 5 inputs and 1 output, got %d and %d", n_inputs, n_outputs);
  const ka_tensor &x = inputs[0], &router = inputs[1], &w1 = inputs[2], &w3 = inputs[3];
  const ka_tensor& w2 = inputs[4];
  ka_tensor& out = outputs[0];
  if (check(x, "hidden_states", 2) || check(router, "gate_weight", 2) || check(w1, "w1", 3) ||
      check(w3, "w3", 3) || check(w2, "w2", 3) || check(out, "output", 2))
    return 1;
  const int64_t tokens = x.shape[0], hidden = x.shape[1], experts = router.shape[0];
  const int64_t inter = w2.shape[2];
  if (router.shape[1] != hidden || w1.shape[0] != experts || w1.shape[1] != inter ||
      w1.shape[2] != hidden || w3.shape[0] != experts || w3.shape[1] != inter ||
      w3.shape[2] != hidden || w2.shape[0] != experts || w2.shape[1] != hidden ||
      out.shape[0] != tokens || out.shape[1] != hidden)
    return fail("shapes disagree");
  if (experts < kTopK) return fail("fewer than %d experts", kTopK);

  const float* xd = static_cast<const float*>(x.data);
  const float* rd = static_cast<const float*>(router.data);
  const float* w1d = static_cast<const float*>(w1.data);
  const float* w3d = static_cast<const float*>(w3.data);
  const float* w2d = static_cast<const float*>(w2.data);
  float* od = static_cast<float*>(out.data);
  std::vector<float> score(experts), h(inter), acc(hidden);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* xrow = xd + t * hidden;
    // The router's logits and their softmax.
    float top = -INFINITY;
    for (int64_t e = 0; e < experts; ++e) {
      score[e] = dot(xrow, rd + e * hidden, hidden);
      top = std::fmax(top, score[e]);
    }
    float sum = 0.0f;
    for (int64_t e = 0; e < experts; ++e) {
      score[e] = std::exp(score[e] - top);
      sum += score[e];
    }
    for (int64_t e = 0; e < experts; ++e) score[e] /= sum;
    // The kTopK best experts (ties to the lower expert), weighted by their scores.
    int64_t ids[kTopK];
    for (int k = 0; k < kTopK; ++k) {
      int64_t pick = -1;
      for (int64_t e = 0; e < experts; ++e) {
        bool taken = false;
        for (int j = 0; j < k; ++j) taken = taken || ids[j] == e;
        if (!taken && (pick < 0 || score[e] > score[pick])) pick = e;
      }
      ids[k] = pick;
    }
    // The chosen experts' SwiGLU MLPs, summed with their weights.
    for (int64_t j = 0; j < hidden; ++j) acc[j] = 0.0f;
    for (int k = 0; k < kTopK; ++k) {
      const float* gate = w1d + ids[k] * inter * hidden;
      const float* up = w3d + ids[k] * inter * hidden;
      const float* down = w2d + ids[k] * hidden * inter;
      for (int64_t i = 0; i < inter; ++i) {
        const float g = dot(xrow, gate + i * hidden, hidden);
        const float u = dot(xrow, up + i * hidden, hidden);
        h[i] = g / (1.0f + std::exp(-g)) * u;
      }
      const float weight = score[ids[k]];
      for (int64_t j = 0; j < hidden; ++j)
        acc[j] += weight * dot(h.data(), down + j * inter, inter);
    }
    for (int64_t j = 0; j < hidden; ++j) od[t * hidden + j] = acc[j];
  }
  return 0;
}
