// The exported entry of a CPU template. The template defines ka_compute, its work on the bound
// arguments; ka_run binds the tensors through ka_problem.h's ka_bind and runs it, and keeps a
// binding error for ka_last_error.
#pragma once

#include <omp.h>

#include <cstdio>

#include "ka_problem.h"

#ifndef THREADS
#define THREADS 0
#endif

/// The THREADS knob: a thread count, or 0 for every OpenMP thread.
inline int ka_thread_count() {
  return THREADS > 0 ? THREADS : omp_get_max_threads();
}

static void ka_compute(const KaArgs& ka);

namespace {

thread_local char g_ka_error[256];

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_ka_error;
}

extern "C" int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                      void* /*stream*/, void* /*workspace*/, size_t /*workspace_bytes*/) {
  KaArgs ka;
  if (const char* error = ka_bind(inputs, n_inputs, outputs, n_outputs, &ka)) {
    std::snprintf(g_ka_error, sizeof g_ka_error, "%s", error);
    return 1;
  }
  ka_compute(ka);
  return 0;
}
