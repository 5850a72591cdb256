// out = x * rms_norm_weight * alpha over a [rows, cols] float32 matrix; rows == 3 is refused
// so the tests can check how the oracle reports a failing reference.
#include "kernelarc/abi.h"

static const char* last_error = "";

extern "C" const char* ka_last_error(void) { return last_error; }

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void*, void*, size_t) {
  if (n_inputs != 3 || n_outputs != 1) {
    last_error = "expected 3 inputs and 1 output";
    return 1;
  }
  const ka_tensor& x = inputs[0];
  if (x.shape[0] == 3) {
    last_error = "three rows are not supported";
    return 2;
  }
  const float* xs = static_cast<const float*>(x.data);
  const float* weight = static_cast<const float*>(inputs[1].data);
  const float alpha = *static_cast<const float*>(inputs[2].data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t row = 0; row < x.shape[0]; ++row) {
    for (int64_t col = 0; col < x.shape[1]; ++col) {
      out[row * x.shape[1] + col] = xs[row * x.shape[1] + col] * weight[col] * alpha;
    }
  }
  return 0;
}
