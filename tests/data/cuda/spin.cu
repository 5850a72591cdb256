// A candidate with host code whose one kernel runs for a known time (SPIN_NS, a knob), launched
// on the stream it is given (ka_run) or on a stream it creates itself (ka_run_side_stream).
// The kernel writes the nanoseconds it measured into outputs[0] (one int64).
#include <cuda_runtime.h>

#include "kernelarc/abi.h"

__global__ void spin_kernel(long long duration_ns, long long* elapsed_ns) {
  unsigned long long start = 0;
  unsigned long long now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < static_cast<unsigned long long>(duration_ns));
  if (threadIdx.x == 0) *elapsed_ns = static_cast<long long>(now - start);
}

extern "C" int ka_run(const ka_tensor*, int, ka_tensor* outputs, int, void* stream, void*,
                      size_t) {
  spin_kernel<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(
      SPIN_NS, static_cast<long long*>(outputs[0].data));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int ka_run_side_stream(const ka_tensor*, int, ka_tensor* outputs, int, void*, void*,
                                  size_t) {
  cudaStream_t side = nullptr;
  if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 1;
  spin_kernel<<<1, 32, 0, side>>>(SPIN_NS, static_cast<long long*>(outputs[0].data));
  // Returns without waiting: the work is still running when ka_run returns.
  cudaStreamDestroy(side);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
