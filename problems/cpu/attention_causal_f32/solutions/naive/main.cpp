// Causal grouped-query attention, written the obvious way: for each query row, the scores
// against the keys it may see, then softmax and the weighted sum of values; one thread.
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
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

int check(const ka_tensor& t, const char* name) {
  if (t.dtype != KA_FLOAT32) return fail("%s: expected float32, got dtype %d", name, t.dtype);
  if (t.ndim != 4) return fail("%s: expected 4 dims, got %d", name, t.ndim);
  if (!is_contiguous(t)) return fail("%s: expected a contiguous row-major tensor", name);
  return 0;
}

}  // namespace

extern "C" const char* ka_last_error(void) { return g_error; }

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 3 || n_outputs != 1)
    return fail("expected 3 inputs and 1 output, got %d and %d", n_inputs, n_outputs);
  const ka_tensor& q = inputs[0];
  const ka_tensor& k = inputs[1];
  const ka_tensor& v = inputs[2];
  ka_tensor& out = outputs[0];
  if (check(q, "q") || check(k, "k") || check(v, "v") || check(out, "output")) return 1;
  const int64_t batch = q.shape[0], q_heads = q.shape[1], seq = q.shape[2], dim = q.shape[3];
  const int64_t kv_heads = k.shape[1];
  if (kv_heads == 0 || q_heads % kv_heads != 0) return fail("k: bad head count");
  for (const ka_tensor* t : {&k, &v})
    if (t->shape[0] != batch || t->shape[1] != kv_heads || t->shape[2] != seq || t->shape[3] != dim)
      return fail("k, v: shapes disagree with q");
  for (int d = 0; d < 4; ++d)
    if (out.shape[d] != q.shape[d]) return fail("output: expected q's shape");

  const int64_t group = q_heads / kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  const float* qd = static_cast<const float*>(q.data);
  const float* kd = static_cast<const float*>(k.data);
  const float* vd = static_cast<const float*>(v.data);
  float* od = static_cast<float*>(out.data);
  std::vector<float> scores(static_cast<size_t>(seq));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < q_heads; ++h) {
      const int64_t kvh = h / group;
      const float* keys = kd + (b * kv_heads + kvh) * seq * dim;
      const float* values = vd + (b * kv_heads + kvh) * seq * dim;
      for (int64_t i = 0; i < seq; ++i) {
        const float* qrow = qd + ((b * q_heads + h) * seq + i) * dim;
        float* orow = od + ((b * q_heads + h) * seq + i) * dim;
        float max_score = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) {
          float dot = 0.0f;
          for (int64_t d = 0; d < dim; ++d) dot += qrow[d] * keys[j * dim + d];
          scores[j] = dot * scale;
          max_score = std::fmax(max_score, scores[j]);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j <= i; ++j) {
          scores[j] = std::exp(scores[j] - max_score);
          sum += scores[j];
        }
        for (int64_t d = 0; d < dim; ++d) orow[d] = 0.0f;
        for (int64_t j = 0; j <= i; ++j)
          for (int64_t d = 0; d < dim; ++d) orow[d] += scores[j] * values[j * dim + d];
        for (int64_t d = 0; d < dim; ++d) orow[d] /= sum;
      }
    }
  }
  return 0;
}
