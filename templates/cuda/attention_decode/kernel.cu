// Split-KV grouped-query attention decode (decode_kernel.cuh), host side: binds the tensors,
// chooses the number of splits per sequence from the multiprocessor count, the batch and the
// workspace, and launches the split kernel and (COMBINE=kernel) the combine kernel on the
// caller's stream.
//
// The host does not know the sequences' lengths (paged caches keep them in device memory), so
// it fixes only an upper bound S on the splits of every sequence (ka_split_kv::plan);
// each CTA derives its sequence's real split count from kv_len on the device, and CTAs beyond
// it return at once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "decode_kernel.cuh"
#include "ka_cuda_entry.h"
#include "ka_problem.h"
#include "kernelarc/abi.h"

namespace {

// The workspace holds the last-CTA tickets (unused with COMBINE=kernel) before the partials.
constexpr bool kCounters = true;

bool aligned16(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
}

bool float_dtype(int dtype) {
  return dtype == KA_FLOAT32 || dtype == KA_FLOAT16 || dtype == KA_BFLOAT16;
}

}  // namespace

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* stream, void* workspace, size_t workspace_bytes) {
  KaArgs ka;
  if (const char* message = ka_bind(inputs, n_inputs, outputs, n_outputs, &ka))
    return ka_fail("%s", message);
  // The kernel reads q, k and v rows as 16-byte chunks; the rows are 16-byte aligned when the
  // tensors' bases are (HEAD_DIM * element size is a multiple of 16).
  for (int i = 0; i < n_inputs; ++i)
    if (inputs[i].ndim >= 3 && float_dtype(inputs[i].dtype) && !aligned16(inputs[i].data))
      return ka_fail("attention_decode: input %d is not 16-byte aligned", i);
  const long long batch = ka.batch();
  if (batch <= 0) return 0;

  int multiprocessors = 0;
  if (ka_prepare_device(multiprocessors, [](int device) {
        const cudaError_t status = cudaFuncSetAttribute(ka_attn::decode_split_kernel,
                                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                        ka_attn::kSharedBytes);
        if (status == cudaSuccess) return 0;
        return ka_fail(
            "attention_decode: preparing the kernels on device %d: %s (%d bytes of shared memory)",
            device, cudaGetErrorString(status), ka_attn::kSharedBytes);
      }) != 0)
    return 1;
  ka_split_kv::Workspace ws;
  unsigned split_ctas = 0;
  if (ka_split_kv::plan(batch, kCounters, multiprocessors, workspace, workspace_bytes,
                        "attention_decode", ws, split_ctas) != 0)
    return 1;
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  if (ws.splits > 1 && COMBINE == KA_COMBINE_last_cta) {
    // The tickets count from zero every call: the workspace's contents are unknown.
    const cudaError_t status = cudaMemsetAsync(
        ws.counters, 0, static_cast<size_t>(batch) * ka_attn::kKvHeads * sizeof(unsigned),
        cuda_stream);
    if (status != cudaSuccess)
      return ka_fail("attention_decode: clearing the counters: %s", cudaGetErrorString(status));
  }

  ka_attn::
      decode_split_kernel<<<split_ctas, ka_attn::kThreads, ka_attn::kSharedBytes, cuda_stream>>>(
          ka, ws);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    return ka_fail("attention_decode: split kernel launch: %s", cudaGetErrorString(status));
  if (ws.splits > 1 && COMBINE == KA_COMBINE_kernel)
    return ka_split_kv::launch_combine<ka_attn::kSplitStep>(ka, ws, batch, cuda_stream,
                                                            "attention_decode");
  return 0;
}
