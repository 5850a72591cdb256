/* kernelarc kernel ABI, version 1.
 *
 * Every solution, CPU or CUDA, hand-written, templated or produced by an LLM, exposes one entry
 * point in destination-passing style: the guard allocates every output, poisons it, and passes
 * it after the inputs, in the order of the problem's definition.json. Nothing is returned but
 * a status code. The same header serves C and C++ (and CUDA host code). */
#ifndef KERNELARC_ABI_H
#define KERNELARC_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KA_ABI_VERSION 1
#define KA_MAX_DIMS 8

/* Element types. The numeric values are part of the ABI and never change. */
typedef enum {
  KA_FLOAT64 = 0,
  KA_FLOAT32 = 1,
  KA_FLOAT16 = 2,
  KA_BFLOAT16 = 3,
  KA_FLOAT8_E4M3FN = 4,
  KA_FLOAT8_E5M2 = 5,
  KA_INT8 = 6,
  KA_INT16 = 7,
  KA_INT32 = 8,
  KA_INT64 = 9,
  KA_UINT8 = 10,
  KA_BOOL = 11,
  /* 4-bit e2m1 floats (SOL-ExecBench's float4_e2m1 and float4_e2m1fn_x2), packed two to a
   * byte along the innermost dimension; shapes and strides count bytes, as torch's do. */
  KA_FLOAT4_E2M1 = 12,
  KA_FLOAT4_E2M1FN_X2 = 13
} ka_dtype;

/* A strided view. Strides are in elements, not bytes. A scalar input (shape null in the
 * definition) and a 0-D tensor both arrive with ndim == 0 and data pointing to one element.
 * On the CUDA backend data is a device pointer, on the CPU backend a host pointer. */
typedef struct {
  void* data;
  int dtype; /* a ka_dtype */
  int ndim;
  int64_t shape[KA_MAX_DIMS];
  int64_t stride[KA_MAX_DIMS];
} ka_tensor;

/* The entry point (its name may be changed with the solution's entry_point). Returns 0 on
 * success and any other value on failure; an optional `const char* ka_last_error(void)` lets
 * the guard report why. `stream` is a cudaStream_t on the CUDA backend and NULL on the CPU;
 * every kernel must be launched on it. `workspace` is scratch memory of `workspace_bytes`
 * bytes (the amount the solution declares), or NULL when it declares none. */
typedef int (*ka_run_fn)(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs,
                         int n_outputs, void* stream, void* workspace, size_t workspace_bytes);
typedef const char* (*ka_last_error_fn)(void);

int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
           void* stream, void* workspace, size_t workspace_bytes);

#ifdef __cplusplus
}
#endif

#endif /* KERNELARC_ABI_H */
