// Paged grouped-query decode attention, written the obvious way: for each sequence and query
// head, the scores against every cached key (found through the page table), softmax, the
// weighted sum of the values and the base-2 log-sum-exp; one thread.
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

int check(const ka_tensor& t, const char* name, int dtype, int ndim) {
  if (t.dtype != dtype) return fail("%s: expected dtype %d, got %d", name, dtype, t.dtype);
  if (t.ndim != ndim) return fail("%s: expected %d dims, got %d", name, ndim, t.ndim);
  if (!is_contiguous(t)) return fail("%s: expected a contiguous row-major tensor", name);
  return 0;
}

}  // namespace

extern "C" const char* ka_last_error(void) { return g_error; }

// Inputs: q [B, Hq, D], k_cache and v_cache [P, S, Hkv, D], kv_indptr [B + 1],
// kv_indices [N], kv_last_page_len [B] (int32), sm_scale (float32 scalar).
// Outputs: output [B, Hq, D], lse [B, Hq] (float32).
extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 7 || n_outputs != 2)
    return fail("expected 7 inputs and 2 outputs, got %d and %d", n_inputs, n_outputs);
  const ka_tensor &q = inputs[0], &kc = inputs[1], &vc = inputs[2];
  const ka_tensor &indptr = inputs[3], &indices = inputs[4], &last = inputs[5];
  const ka_tensor& scale_in = inputs[6];
  ka_tensor &out = outputs[0], &lse = outputs[1];
  if (check(q, "q", KA_FLOAT32, 3) || check(kc, "k_cache", KA_FLOAT32, 4) ||
      check(vc, "v_cache", KA_FLOAT32, 4) || check(indptr, "kv_indptr", KA_INT32, 1) ||
      check(indices, "kv_indices", KA_INT32, 1) || check(last, "kv_last_page_len", KA_INT32, 1) ||
      check(out, "output", KA_FLOAT32, 3) || check(lse, "lse", KA_FLOAT32, 2))
    return 1;
  if (scale_in.dtype != KA_FLOAT32) return fail("sm_scale: expected float32");
  const int64_t batch = q.shape[0], q_heads = q.shape[1], dim = q.shape[2];
  const int64_t page_size = kc.shape[1], kv_heads = kc.shape[2];
  if (kc.shape[3] != dim || vc.shape[3] != dim || kv_heads == 0 || q_heads % kv_heads != 0)
    return fail("k_cache: shape disagrees with q");
  if (indptr.shape[0] != batch + 1 || last.shape[0] != batch)
    return fail("kv_indptr / kv_last_page_len: expected batch_size + 1 / batch_size entries");

  const int64_t group = q_heads / kv_heads;
  const float scale = *static_cast<const float*>(scale_in.data);
  const float* qd = static_cast<const float*>(q.data);
  const float* kd = static_cast<const float*>(kc.data);
  const float* vd = static_cast<const float*>(vc.data);
  const int32_t* ptr = static_cast<const int32_t*>(indptr.data);
  const int32_t* pages = static_cast<const int32_t*>(indices.data);
  const int32_t* last_len = static_cast<const int32_t*>(last.data);
  float* od = static_cast<float*>(out.data);
  float* ld = static_cast<float*>(lse.data);
  std::vector<float> scores;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t num = ptr[b + 1] - ptr[b];
    const int64_t kv_len = num > 0 ? (num - 1) * page_size + last_len[b] : 0;
    scores.resize(static_cast<size_t>(kv_len > 0 ? kv_len : 0));
    for (int64_t h = 0; h < q_heads; ++h) {
      const int64_t kvh = h / group;
      const float* qrow = qd + (b * q_heads + h) * dim;
      float* orow = od + (b * q_heads + h) * dim;
      for (int64_t d = 0; d < dim; ++d) orow[d] = 0.0f;
      if (kv_len <= 0) {
        ld[b * q_heads + h] = -INFINITY;
        continue;
      }
      auto slot = [&](int64_t j) {
        const int64_t page = pages[ptr[b] + j / page_size];
        return ((page * page_size + j % page_size) * kv_heads + kvh) * dim;
      };
      float max_score = -INFINITY;
      for (int64_t j = 0; j < kv_len; ++j) {
        const float* key = kd + slot(j);
        float dot = 0.0f;
        for (int64_t d = 0; d < dim; ++d) dot += qrow[d] * key[d];
        scores[j] = dot * scale;
        max_score = std::fmax(max_score, scores[j]);
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < kv_len; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      for (int64_t j = 0; j < kv_len; ++j) {
        const float* value = vd + slot(j);
        for (int64_t d = 0; d < dim; ++d) orow[d] += scores[j] * value[d];
      }
      for (int64_t d = 0; d < dim; ++d) orow[d] /= sum;
      ld[b * q_heads + h] = (max_score + std::log(sum)) / std::log(2.0f);
    }
  }
  return 0;
}
