// Helpers shared by the CUDA backend tests: the fixture solutions under tests/data/cuda and the
// check that decides whether a GPU test runs.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "backend/cuda/cuda_compiler.h"
#include "backend/cuda/cuda_device.h"
#include "core/problem.h"
#include "core/test_support.h"

namespace kernelarc::testing {

inline std::string read_fixture(const std::string& relative) {
  std::ifstream file(fixture(relative), std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

/// The device-only add_one solution (NVRTC) and its definition, from tests/data/cuda/add_one.
inline Problem add_one_problem() {
  Problem problem;
  problem.dir = fixture("cuda/add_one");
  problem.definition = load_definition(problem.dir / "definition.json");
  return problem;
}
inline Solution add_one_solution() {
  return load_solution(fixture("cuda/add_one"));
}

/// A definition with one int64 output of shape [1], for the spin solution.
inline Definition spin_definition() {
  Definition definition;
  definition.name = "spin";
  definition.axes = {Axis{"one", AxisKind::Const, 1, ""}};
  definition.outputs = {
      TensorSpec{"elapsed_ns", std::vector<std::string>{"one"}, DType::Int64, ""}};
  return definition;
}

/// The host-code solution of tests/data/cuda/spin.cu (nvcc), with the given entry symbol.
inline Solution spin_solution(const std::string& symbol = "ka_run") {
  Solution solution;
  solution.name = "spin";
  solution.languages = {"cuda"};
  solution.entry_file = "spin.cu";
  solution.entry_symbol = symbol;
  solution.sources = {{"spin.cu", read_fixture("cuda/spin.cu")}};
  solution.ext = OrderedJson{{"knobs", {{"SPIN_NS", 2'000'000}}}};
  return solution;
}

/// Skips the current test unless CUDA support is built in.
#define KERNELARC_REQUIRE_CUDA_BUILD()                                                  \
  do {                                                                                  \
    if (!::kernelarc::testing::built_with_cuda()) GTEST_SKIP() << "built without CUDA"; \
  } while (0)

/// Skips the current test unless a CUDA device can be used.
#define KERNELARC_REQUIRE_GPU()                                                  \
  do {                                                                           \
    if (::kernelarc::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

constexpr bool built_with_cuda() {
#ifdef KERNELARC_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace kernelarc::testing
