// Runs python/kernelarc_trace.py: records what a problem's PyTorch reference computes as an op
// graph (docs/RECOGNITION.md §1), with the oracle's Python, and caches the result by definition.
#pragma once

#include <filesystem>
#include <string>

#include "core/problem.h"

namespace kernelarc {

struct GraphTraceResult {
  bool ok = false;
  OrderedJson graph;  ///< the op graph, when ok
  std::string error;  ///< why the reference cannot be traced, when not ok
};

/// Traces the reference twice: var axes set to primes (17, 19, 23, ... then 41, 43, ...), or,
/// when the primes break a definition constraint or the reference fails at them (a topk of 40
/// over rows of 17), to the first two workloads whose var axes all differ. Int and bool scalar
/// inputs take the first workload's values. `python` empty = the oracle's interpreter detection
/// (KERNELARC_PYTHON, else python3 or /usr/bin/python3 with torch), done once per process. The
/// result, failure included, is cached under `cache_dir` by the definition, the tracer's source and
/// the traced axis values; a cached problem needs no Python. Throws InputError when no interpreter
/// can import torch, InternalError when the tracer fails outside the reference or writes a
/// malformed result.
GraphTraceResult trace_reference(const Problem& problem, const std::string& python,
                                 const std::filesystem::path& cache_dir);

/// The content hash of the tracer script and the modules it imports.
const std::string& trace_script_version();

}  // namespace kernelarc
