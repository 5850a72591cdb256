// Float math for generated element-wise code (synth/elementwise_expr.h turns `silu(x)` into
// `ka_silu(x)`). Usable from CUDA (nvcc and NVRTC, which ships no standard headers: the CUDA
// builtins expf, erff, tanhf, ... are used) and from CPU C++ (<cmath>).
//
// Every function computes in float32 with the same formula PyTorch's float32 kernels use, so
// results agree to about an ulp. The accurate expf is used, not __expf: the fast one is off by
// up to 2 ulp plus a relative error of ~1e-6 for large arguments, which compounds in silu.
// NaN propagates through relu, min and max as it does in torch.relu / minimum / maximum.
#ifndef KA_MATH_H
#define KA_MATH_H

#ifndef KA_HD
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KA_HD __host__ __device__ __forceinline__
#else
#define KA_HD inline
#endif
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KA_MATH_FN(cuda_name, std_name) cuda_name
#else
#include <cmath>
#define KA_MATH_FN(cuda_name, std_name) std::std_name
#endif

KA_HD float ka_exp(float x) {
  return KA_MATH_FN(expf, exp)(x);
}
KA_HD float ka_log(float x) {
  return KA_MATH_FN(logf, log)(x);
}
KA_HD float ka_sqrt(float x) {
  return KA_MATH_FN(sqrtf, sqrt)(x);
}
KA_HD float ka_tanh(float x) {
  return KA_MATH_FN(tanhf, tanh)(x);
}
KA_HD float ka_abs(float x) {
  return KA_MATH_FN(fabsf, fabs)(x);
}

KA_HD float ka_rsqrt(float x) {
#if defined(__CUDA_ARCH__)
  return rsqrtf(x);
#else
  return 1.0f / KA_MATH_FN(sqrtf, sqrt)(x);
#endif
}

KA_HD float ka_relu(float x) {
  return (x > 0.0f || x != x) ? x : 0.0f;
}

KA_HD float ka_min(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? a : b;
}

KA_HD float ka_max(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

KA_HD float ka_sigmoid(float x) {
  return 1.0f / (1.0f + ka_exp(-x));
}

KA_HD float ka_silu(float x) {
  return x / (1.0f + ka_exp(-x));
}

// torch.nn.functional.gelu(approximate="none"): x * 0.5 * (1 + erf(x / sqrt(2))).
KA_HD float ka_gelu(float x) {
  const float kRsqrt2 = 0.70710678118654752440f;
  return x * 0.5f * (1.0f + KA_MATH_FN(erff, erf)(x * kRsqrt2));
}

// torch.nn.functional.gelu(approximate="tanh").
KA_HD float ka_gelu_tanh(float x) {
  const float kBeta = 0.79788456080286535588f;  // sqrt(2 / pi)
  const float kKappa = 0.044715f;
  const float x_cube = x * x * x;
  const float inner = kBeta * (x + kKappa * x_cube);
  return 0.5f * x * (1.0f + ka_tanh(inner));
}

#undef KA_MATH_FN

#endif  // KA_MATH_H
