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

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
KA_HD float ka_exp(float x) {
  return expf(x);
}
#else
// On the CPU, Cephes' expf (about 1 ulp) in plain arithmetic, so that loops over it vectorise:
// the libm call does not, and floorf needs -ffast-math to. Its selects vectorise on AVX2 only
// with -fno-trapping-math (GCC 12 keeps a possibly trapping comparison as a branch), which the
// bundled CPU templates compile with. Below -87.3 the result is flushed to
// the smallest normal (torch gives a denormal there; the difference is below 1.2e-38), above
// 88.72 it is infinity, NaN stays NaN.
#pragma omp declare simd
inline float ka_exp(float x) {
  const float clamped = x < -87.3f ? -87.3f : (x > 88.7f ? 88.7f : x);
  // Round to nearest by the 1.5 * 2^23 trick.
  const float n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = clamped - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const int bits = (static_cast<int>(n) + 127) << 23;
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof scale);
  const float result = x > 88.72283905f ? HUGE_VALF : e * scale;
  return x != x ? x : result;
}
#endif
KA_HD float ka_log(float x) {
  return KA_MATH_FN(logf, log)(x);
}
// log(1 + x) and exp(x) - 1, exact near 0 where the plain forms cancel (torch.log1p, expm1):
// softplus is log1p(exp(x)), which for x = -20 is 2.06e-9 where log(1 + exp(x)) gives 0.
KA_HD float ka_log1p(float x) {
  return KA_MATH_FN(log1pf, log1p)(x);
}
KA_HD float ka_expm1(float x) {
  return KA_MATH_FN(expm1f, expm1)(x);
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

// The derivatives of the three activations above, for backward passes.
KA_HD float ka_silu_grad(float x) {
  const float s = ka_sigmoid(x);
  return s * (1.0f + x * (1.0f - s));
}

KA_HD float ka_gelu_grad(float x) {
  const float kRsqrt2 = 0.70710678118654752440f;
  const float kRsqrt2Pi = 0.39894228040143267794f;  // 1 / sqrt(2 pi)
  return 0.5f * (1.0f + KA_MATH_FN(erff, erf)(x * kRsqrt2)) + x * kRsqrt2Pi * ka_exp(-0.5f * x * x);
}

KA_HD float ka_gelu_tanh_grad(float x) {
  const float kBeta = 0.79788456080286535588f;
  const float kKappa = 0.044715f;
  const float t = ka_tanh(kBeta * (x + kKappa * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kBeta * (1.0f + 3.0f * kKappa * x * x);
}

#undef KA_MATH_FN

#endif  // KA_MATH_H
