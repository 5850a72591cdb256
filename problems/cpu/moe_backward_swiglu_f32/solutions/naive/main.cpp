// The experts' backward pass of a SwiGLU mixture-of-experts layer, written the obvious way: for
// each (token, chosen expert) slot, recompute g = x . gate rows, u = x . up rows, h = silu(g) * u
// and y = h . down rows; then the routing weight's gradient dy . y, dh = (w dy) . down columns,
// dg and du, and every gradient accumulated straight into the outputs. One thread.
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernelarc/abi.h"

namespace {

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

int check(const ka_tensor& t, const char* name, int ndim, int dtype = KA_FLOAT32) {
  if (t.dtype != dtype) return fail("%s: expected dtype %d, got %d", name, dtype, t.dtype);
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

// Inputs: hidden_states [T, H], topk_ids [T, K] (int64), topk_weights [T, K], w13 [E, 2I, H]
// (gate rows, then up rows), w2 [E, H, I], grad_output [T, H]. Outputs: grad_hidden_states
// [T, H], grad_w13, grad_w2, grad_topk_weights [T, K]. float32 but the ids.
extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 6 || n_outputs != 4)
    return fail("expected 6 inputs and 4 outputs, got %d and %d", n_inputs, n_outputs);
  const ka_tensor &x = inputs[0], &ids = inputs[1], &weights = inputs[2], &w13 = inputs[3];
  const ka_tensor &w2 = inputs[4], &dy = inputs[5];
  ka_tensor &dx = outputs[0], &dw13 = outputs[1], &dw2 = outputs[2], &dweights = outputs[3];
  if (check(x, "hidden_states", 2) || check(ids, "topk_ids", 2, KA_INT64) ||
      check(weights, "topk_weights", 2) || check(w13, "w13", 3) || check(w2, "w2", 3) ||
      check(dy, "grad_output", 2) || check(dx, "grad_hidden_states", 2) ||
      check(dw13, "grad_w13", 3) || check(dw2, "grad_w2", 3) ||
      check(dweights, "grad_topk_weights", 2))
    return 1;
  const int64_t tokens = x.shape[0], hidden = x.shape[1], top_k = ids.shape[1];
  const int64_t experts = w13.shape[0], inter = w2.shape[2];
  if (w13.shape[1] != 2 * inter || w13.shape[2] != hidden || w2.shape[0] != experts ||
      w2.shape[1] != hidden || ids.shape[0] != tokens || weights.shape[0] != tokens ||
      weights.shape[1] != top_k || dy.shape[0] != tokens || dy.shape[1] != hidden)
    return fail("shapes disagree");

  const float* xd = static_cast<const float*>(x.data);
  const int64_t* id = static_cast<const int64_t*>(ids.data);
  const float* wd = static_cast<const float*>(weights.data);
  const float* w13d = static_cast<const float*>(w13.data);
  const float* w2d = static_cast<const float*>(w2.data);
  const float* dyd = static_cast<const float*>(dy.data);
  float* dxd = static_cast<float*>(dx.data);
  float* dw13d = static_cast<float*>(dw13.data);
  float* dw2d = static_cast<float*>(dw2.data);
  float* dwd = static_cast<float*>(dweights.data);
  std::memset(dxd, 0, sizeof(float) * tokens * hidden);
  std::memset(dw13d, 0, sizeof(float) * experts * 2 * inter * hidden);
  std::memset(dw2d, 0, sizeof(float) * experts * hidden * inter);
  std::vector<float> g(inter), u(inter), h(inter), dh(inter);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* xrow = xd + t * hidden;
    const float* dyrow = dyd + t * hidden;
    for (int64_t k = 0; k < top_k; ++k) {
      const int64_t e = id[t * top_k + k];
      dwd[t * top_k + k] = 0.0f;
      if (e < 0 || e >= experts) continue;  // no expert: no contribution
      const float w = wd[t * top_k + k];
      const float* gate = w13d + e * 2 * inter * hidden;
      const float* up = gate + inter * hidden;
      const float* down = w2d + e * hidden * inter;
      float* dgate = dw13d + e * 2 * inter * hidden;
      float* dup = dgate + inter * hidden;
      float* ddown = dw2d + e * hidden * inter;
      for (int64_t i = 0; i < inter; ++i) {
        g[i] = dot(xrow, gate + i * hidden, hidden);
        u[i] = dot(xrow, up + i * hidden, hidden);
        h[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
        dh[i] = 0.0f;
      }
      float route = 0.0f;
      for (int64_t j = 0; j < hidden; ++j) {
        route += dyrow[j] * dot(h.data(), down + j * inter, inter);
        const float dyw = w * dyrow[j];
        for (int64_t i = 0; i < inter; ++i) {
          dh[i] += dyw * down[j * inter + i];
          ddown[j * inter + i] += dyw * h[i];
        }
      }
      dwd[t * top_k + k] = route;
      for (int64_t i = 0; i < inter; ++i) {
        const float s = 1.0f / (1.0f + std::exp(-g[i]));
        const float dg = dh[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
        const float du = dh[i] * g[i] * s;
        for (int64_t j = 0; j < hidden; ++j) {
          dxd[t * hidden + j] += dg * gate[i * hidden + j] + du * up[i * hidden + j];
          dgate[i * hidden + j] += dg * xrow[j];
          dup[i * hidden + j] += du * xrow[j];
        }
      }
    }
  }
  return 0;
}
