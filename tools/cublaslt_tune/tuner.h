// Measures cuBLASLt's Expert-API configuration space for the GEMMs of a problem on the current
// GPU and keeps, per shape, the configuration that beats the heuristic's first choice by more
// than the noise (see choose_entry in tuner.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "gemm_shapes.h"
#include "table.h"

namespace kernelarc::cublaslt {

struct TuneOptions {
  int runs = 30;          ///< timed runs per configuration (median and p90 of these)
  int warmup = 5;         ///< untimed runs first
  int max_configs = 200;  ///< valid configurations timed per shape, besides the heuristic's
  std::size_t workspace_bytes = 32u << 20;  ///< as gemm_cublaslt's template.json declares
};

struct ShapeReport {
  GemmShape shape;
  int configs_tried = 0;  ///< valid configurations timed
  double heuristic_us = 0;
  double best_us = 0;  ///< the median of the configuration kept
};

/// Why this process cannot tune ("no CUDA device (...)"), or nullopt when a device is there.
std::optional<std::string> cuda_device_problem();

/// Tunes every shape of `problem` on device 0. `reports` gets one row per shape. Throws
/// InternalError on a CUDA or cuBLASLt failure outside the configurations being tried.
Table tune_problem(const GemmProblemShapes& problem, const TuneOptions& options,
                   std::vector<ShapeReport>& reports);

}  // namespace kernelarc::cublaslt
