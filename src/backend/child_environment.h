// The environment of the processes that run or build code kernelarc did not write: the worker
// (candidates' kernels), ncu and its target, and the compilers. It is built from nothing and
// holds only variables from an allowlist (the search path, locale, time zone, CUDA device and
// driver settings, OpenMP and thread-count settings, the loader path, TMPDIR and kernelarc's own
// paths), so a secret in a variable of any name (an API key in LLM_AUTH) never reaches them.
// API keys are read by the parent alone, when a request is sent (llm/http_chat_client.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kernelarc {

/// Whether a variable of this name may pass to a child that runs candidate or model-chosen
/// code: PATH, LANG, LANGUAGE, LC_*, TZ, TMPDIR, LD_LIBRARY_PATH, CUDA_*, NVIDIA_*, OMP_*,
/// GOMP_*, KMP_*, *_NUM_THREADS of the math libraries, and KERNELARC_DATA_DIR, KERNELARC_NVCC,
/// KERNELARC_NCU, KERNELARC_TEMPLATES.
bool is_passed_variable(std::string_view name);

/// `entries` ("NAME=value") reduced to the passed variables, in their order.
std::vector<std::string> passed_variables(const std::vector<std::string>& entries);

/// This process's environment, as NAME=value entries.
std::vector<std::string> current_environment();

/// This process's environment reduced to the passed variables.
std::vector<std::string> child_environment();

}  // namespace kernelarc
