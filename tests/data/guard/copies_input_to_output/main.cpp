// Guard test case "copies_input_to_output" for problems/cpu/rmsnorm_f32: copies x to the output
// without normalizing or scaling it: every element is off by its row's RMS factor and its
// weight, far beyond atol + rtol. Expected status: INCORRECT_NUMERICAL.
#include <cstdint>
#include <cstring>

#include "kernelarc/abi.h"

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  std::memcpy(outputs[0].data, inputs[0].data,
              static_cast<std::size_t>(rows * cols) * sizeof(float));
  return 0;
}
