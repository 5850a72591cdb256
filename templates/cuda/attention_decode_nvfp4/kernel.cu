// Split-KV grouped-query attention decode over an NVFP4 cache (nvfp4_decode_kernel.cuh), host
// side: binds the tensors, bounds the splits per sequence by the multiprocessor count, the
// batch and the workspace (ka_split_kv::plan), and launches the split kernel and, with
// several splits, the combine kernel on the caller's stream.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "ka_cuda_entry.h"
#include "ka_problem.h"
#include "kernelarc/abi.h"
#include "nvfp4_decode_kernel.cuh"

namespace {

// No last-CTA merge: the workspace holds only the partials.
constexpr bool kCounters = false;

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  // ka_bind checks every dtype and shape, and that q, k, v and the output are 16-byte aligned
  // (the kernel reads 8-byte blocks of codes from rows of HEAD_DIM / 2 bytes).
  if (const char* message = ka_bind(inputs, n_inputs, outputs, n_outputs, &ka))
    return ka_fail("%s", message);
  const long long batch = ka.batch();
  if (batch <= 0) return 0;

  int multiprocessors = 0;
  if (ka_prepare_device(multiprocessors, [](int) { return 0; }) != 0) return 1;
  ka_split_kv::Workspace ws;
  unsigned split_ctas = 0;
  if (ka_split_kv::plan(batch, kCounters, multiprocessors, workspace, workspace_bytes,
                        "attention_decode_nvfp4", ws, split_ctas) != 0)
    return 1;
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  ka_fp4::decode_split_kernel<<<split_ctas, ka_fp4::kThreads, 0, cuda_stream>>>(ka, ws);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    return ka_fail("attention_decode_nvfp4: split kernel launch: %s", cudaGetErrorString(status));
  if (ws.splits > 1)
    return ka_split_kv::launch_combine<ka_fp4::kStepKeys>(ka, ws, batch, cuda_stream,
                                                          "attention_decode_nvfp4");
  return 0;
}
