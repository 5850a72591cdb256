// SiLU-and-mul, the plain way: output[t, i] = silu(x[t, i]) * x[t, I + i].
#include <cmath>

#include "kernelarc/abi.h"

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void*, void*, size_t) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const ka_tensor& x = inputs[0];
  ka_tensor& out = outputs[0];
  if (x.dtype != KA_FLOAT32 || out.dtype != KA_FLOAT32 || x.ndim != 2 || out.ndim != 2) return 1;
  const int64_t rows = out.shape[0];
  const int64_t width = out.shape[1];
  const float* in = static_cast<const float*>(x.data);
  float* result = static_cast<float*>(out.data);
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t i = 0; i < width; ++i) {
      const float gate = in[t * x.stride[0] + i];
      const float up = in[t * x.stride[0] + width + i];
      result[t * out.stride[0] + i] = gate / (1.0f + std::exp(-gate)) * up;
    }
  }
  return 0;
}
