// Split-KV grouped-query attention decode (decode_kernel.cuh), host side: binds the tensors,
// chooses the number of splits per sequence from the multiprocessor count, the batch and the
// workspace, and launches the split kernel and (COMBINE=kernel) the combine kernel on the
// caller's stream.
//
// The host does not know the sequences' lengths (paged caches keep them in device memory), so
// it fixes only an upper bound S on the splits of every sequence: enough CTAs for CTAS_PER_SM
// per multiprocessor, at most kMaxSplits, and as many as the workspace holds. Each CTA derives
// its sequence's real split count from kv_len on the device (splits_of: at least
// MIN_SPLIT_TOKENS keys per split), and CTAs beyond it return at once.
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

/// The workspace layout for `splits` splits: counters, then lse, then o, each 256-aligned.
struct Layout {
  size_t lse_offset, o_offset, total;
};

Layout layout_for(long long batch, int splits) {
  const size_t heads = static_cast<size_t>(batch) * ka_attn::kQHeads;
  Layout layout;
  layout.lse_offset =
      ka_align256(static_cast<size_t>(batch) * ka_attn::kKvHeads * sizeof(unsigned));
  layout.o_offset = layout.lse_offset + ka_align256(heads * splits * sizeof(float));
  layout.total = layout.o_offset + heads * splits * ka_attn::kHeadDim * sizeof(float);
  return layout;
}

/// The split bound S: CTAS_PER_SM CTAs per multiprocessor over batch x KV_HEADS heads, at most
/// kMaxSplits, and only as many as the workspace holds (1 = no partials, no combine).
int plan_splits(long long batch, int multiprocessors, const void* workspace,
                size_t workspace_bytes) {
  if (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 16 != 0) return 1;
  const long long heads = batch * ka_attn::kKvHeads;
  const long long target = static_cast<long long>(multiprocessors) * CTAS_PER_SM;
  long long splits = (target + heads - 1) / heads;
  if (splits > ka_attn::kMaxSplits) splits = ka_attn::kMaxSplits;
  while (splits > 1 && layout_for(batch, static_cast<int>(splits)).total > workspace_bytes)
    --splits;
  return splits < 1 ? 1 : static_cast<int>(splits);
}

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
  const int splits = plan_splits(batch, multiprocessors, workspace, workspace_bytes);
  const long long split_ctas = batch * ka_attn::kKvHeads * splits;
  const long long combine_ctas = batch * ka_attn::kQHeads;
  if (split_ctas > INT32_MAX || combine_ctas > INT32_MAX)
    return ka_fail("attention_decode: batch %lld is too large for the grid", batch);

  ka_attn::Workspace ws{nullptr, nullptr, nullptr, splits};
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  if (splits > 1) {
    const Layout layout = layout_for(batch, splits);
    unsigned char* base = static_cast<unsigned char*>(workspace);
    ws.counters = reinterpret_cast<unsigned*>(base);
    ws.lse = reinterpret_cast<float*>(base + layout.lse_offset);
    ws.o = reinterpret_cast<float*>(base + layout.o_offset);
    if (COMBINE == KA_COMBINE_last_cta) {
      // The tickets count from zero every call: the workspace's contents are unknown.
      const cudaError_t status = cudaMemsetAsync(
          ws.counters, 0, static_cast<size_t>(batch) * ka_attn::kKvHeads * sizeof(unsigned),
          cuda_stream);
      if (status != cudaSuccess)
        return ka_fail("attention_decode: clearing the counters: %s", cudaGetErrorString(status));
    }
  }

  ka_attn::decode_split_kernel<<<static_cast<unsigned>(split_ctas), ka_attn::kThreads,
                                 ka_attn::kSharedBytes, cuda_stream>>>(ka, ws);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    return ka_fail("attention_decode: split kernel launch: %s", cudaGetErrorString(status));
  if (splits > 1 && COMBINE == KA_COMBINE_kernel) {
    ka_attn::combine_kernel<<<static_cast<unsigned>(combine_ctas), ka_attn::kCombineThreads, 0,
                              cuda_stream>>>(ka, ws);
    status = cudaGetLastError();
    if (status != cudaSuccess)
      return ka_fail("attention_decode: combine kernel launch: %s", cudaGetErrorString(status));
  }
  return 0;
}
