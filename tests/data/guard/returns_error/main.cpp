// Guard test case "returns_error" for problems/cpu/rmsnorm_f32: Refuses every call: returns 3
// and ka_last_error() says "unsupported shape". Expected status: RUNTIME_ERROR.
#include <cstdint>

#include "kernelarc/abi.h"

extern "C" const char* ka_last_error(void) { return "unsupported shape"; }

extern "C" int ka_run(const ka_tensor* /*inputs*/, int n_inputs, ka_tensor* /*outputs*/, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  return 3;
}
