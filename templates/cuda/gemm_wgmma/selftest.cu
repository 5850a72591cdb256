// GPU self-test of the gemm_wgmma template, outside the guard: builds the template with a
// generated ka_problem.h, runs ka_run on random inputs, checks every output element against a
// shared-memory tiled fp32 reference kernel and times ka_run next to cuBLAS. The ka_problem.h
// of a problem comes from `kernelarc templates try <problem> gemm_wgmma --export DIR` (it is
// inline in DIR/solution.json). From the repository root:
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I<dir of ka_problem.h> \
//        -Itemplates/common -Iinclude -DBM=128 -DBN=256 -DSTAGES=4 -DCONSUMERS=2 -DRASTER=1 \
//        templates/cuda/gemm_wgmma/selftest.cu -lcublas -o selftest && ./selftest [M N K ...]
//
// Without arguments it runs M in {1, 127, 1024, 4096} with N = K = 4096. It assumes the plain
// problem (A, B inputs 0 and 1, C output 0, no epilogue inputs), like gemm_bf16.
#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernel.cu"

#define CHECK_CUDA(call)                                                                \
  do {                                                                                  \
    const cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) {                                                            \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void fill_random(ka_a_t* data, long long count, unsigned seed, float scale) {
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    data[i] = static_cast<ka_a_t>(((h & 0xFFFF) / 32768.0f - 1.0f) * scale);
  }
}

__global__ void reference_gemm(const ka_a_t* a, const ka_b_t* b, float* c, int m, int n, int k) {
  __shared__ float tile_a[16][17], tile_b[16][17];
  const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float sum = 0.0f;
  for (int k0 = 0; k0 < k; k0 += 16) {
    const int ar = blockIdx.y * 16 + threadIdx.y, bc = blockIdx.x * 16 + threadIdx.y;
    tile_a[threadIdx.y][threadIdx.x] =
        ar < m && k0 + threadIdx.x < k ? static_cast<float>(a[(long long)ar * k + k0 + threadIdx.x])
                                       : 0.f;
    tile_b[threadIdx.y][threadIdx.x] =
        bc < n && k0 + threadIdx.x < k ? static_cast<float>(b[(long long)bc * k + k0 + threadIdx.x])
                                       : 0.f;
    __syncthreads();
    for (int i = 0; i < 16; ++i) sum += tile_a[threadIdx.y][i] * tile_b[threadIdx.x][i];
    __syncthreads();
  }
  if (row < m && col < n) c[(long long)row * n + col] = sum;
}

ka_tensor matrix(void* data, int dtype, long long rows, long long cols) {
  ka_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.ndim = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.stride[0] = cols;
  t.stride[1] = 1;
  return t;
}

int main(int argc, char** argv) {
  std::vector<long long> shapes;
  for (int i = 1; i < argc; ++i) shapes.push_back(std::atoll(argv[i]));
  if (shapes.empty()) shapes = {1, 4096, 4096, 127, 4096, 4096, 1024, 4096, 4096, 4096, 4096, 4096};
  const int dtype = ka_gemm::kF16 ? KA_FLOAT16 : KA_BFLOAT16;
  const cudaDataType_t cuda_type = ka_gemm::kF16 ? CUDA_R_16F : CUDA_R_16BF;
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return std::printf("cublasCreate\n"), 1;
  constexpr size_t kWorkspaceBytes = 32 << 20;  // template.json's workspace_bytes
  void* workspace;
  CHECK_CUDA(cudaMalloc(&workspace, kWorkspaceBytes));
  bool ok = true;
  for (size_t s = 0; s + 2 < shapes.size(); s += 3) {
    const long long m = shapes[s], n = shapes[s + 1], k = shapes[s + 2];
    ka_a_t *a, *b;
    ka_c_t *c, *c_blas;
    float* ref;
    CHECK_CUDA(cudaMalloc(&a, m * k * 2));
    CHECK_CUDA(cudaMalloc(&b, n * k * 2));
    CHECK_CUDA(cudaMalloc(&c, m * n * sizeof(ka_c_t)));
    CHECK_CUDA(cudaMalloc(&c_blas, m * n * sizeof(ka_c_t)));
    CHECK_CUDA(cudaMalloc(&ref, m * n * 4));
    fill_random<<<1024, 256>>>(a, m * k, 1234u + s, 1.0f);
    fill_random<<<1024, 256>>>(b, n * k, 977u + s, 1.7f / std::sqrt(static_cast<float>(k)));
    CHECK_CUDA(cudaMemset(c, 0xFF, m * n * sizeof(ka_c_t)));  // NaN poison: unwritten shows
    if (m > 0 && n > 0)
      reference_gemm<<<dim3((n + 15) / 16, (m + 15) / 16), dim3(16, 16)>>>(a, b, ref, m, n, k);
    CHECK_CUDA(cudaGetLastError());

    ka_tensor inputs[2] = {matrix(a, dtype, m, k), matrix(b, dtype, n, k)};
    ka_tensor outputs[1] = {matrix(c, dtype, m, n)};
    if (ka_run(inputs, 2, outputs, 1, nullptr, workspace, kWorkspaceBytes) != 0) {
      std::printf("M=%lld N=%lld K=%lld: ka_run failed: %s\n", m, n, k, ka_last_error());
      ok = false;
      continue;
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<ka_c_t> got(m * n);
    std::vector<float> want(m * n);
    CHECK_CUDA(cudaMemcpy(got.data(), c, m * n * sizeof(ka_c_t), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(want.data(), ref, m * n * 4, cudaMemcpyDeviceToHost));
    double max_error = 0;
    long long bad = 0;
    for (long long i = 0; i < m * n; ++i) {
      const double g = static_cast<float>(got[i]), w = want[i], e = std::fabs(g - w);
      if (!(e <= 2e-2 + 2e-2 * std::fabs(w))) ++bad;
      if (!(e <= max_error)) max_error = std::isnan(e) ? INFINITY : e;
    }

    if (m * n * k == 0) {
      std::printf("M=%-5lld N=%-5lld K=%-5lld max_err=%.4g mismatches=%lld %s\n", m, n, k,
                  max_error, bad, bad == 0 ? "OK" : "FAIL");
      ok = ok && bad == 0;
      for (void* p : {(void*)a, (void*)b, (void*)c, (void*)c_blas, (void*)ref}) cudaFree(p);
      continue;
    }
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    const int iterations = 50;
    float ms_ours = 0, ms_blas = 0;
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < 3; ++i)
        ka_run(inputs, 2, outputs, 1, nullptr, workspace, kWorkspaceBytes);
      CHECK_CUDA(cudaEventRecord(start));
      for (int i = 0; i < iterations; ++i)
        ka_run(inputs, 2, outputs, 1, nullptr, workspace, kWorkspaceBytes);
      CHECK_CUDA(cudaEventRecord(stop));
      CHECK_CUDA(cudaEventSynchronize(stop));
      CHECK_CUDA(cudaEventElapsedTime(&ms_ours, start, stop));
      const float one = 1.0f, zero = 0.0f;
      auto blas = [&] {
        return cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, b, cuda_type, k, a,
                            cuda_type, k, &zero, c_blas, cuda_type, n, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT);
      };
      for (int i = 0; i < 3; ++i) blas();
      CHECK_CUDA(cudaEventRecord(start));
      for (int i = 0; i < iterations; ++i) blas();
      CHECK_CUDA(cudaEventRecord(stop));
      CHECK_CUDA(cudaEventSynchronize(stop));
      CHECK_CUDA(cudaEventElapsedTime(&ms_blas, start, stop));
    }
    const double flops = 2.0 * m * n * k;
    const double ours = flops / (ms_ours / iterations * 1e-3) / 1e12;
    const double theirs = flops / (ms_blas / iterations * 1e-3) / 1e12;
    std::printf(
        "M=%-5lld N=%-5lld K=%-5lld max_err=%.4g mismatches=%lld  %.1f us %.1f TFLOP/s | cuBLAS "
        "%.1f us %.1f TFLOP/s | ratio %.2f %s\n",
        m, n, k, max_error, bad, ms_ours / iterations * 1e3, ours, ms_blas / iterations * 1e3,
        theirs, ours / theirs, bad == 0 ? "OK" : "FAIL");
    ok = ok && bad == 0;
    for (void* p : {(void*)a, (void*)b, (void*)c, (void*)c_blas, (void*)ref}) cudaFree(p);
  }
  std::printf("%s\n", ok ? "ALL OK" : "FAILED");
  return ok ? 0 : 1;
}
