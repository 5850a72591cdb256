// Every problem shipped under problems/ loads, and carries what the speed-of-light model and the
// oracle need: a FLOP or byte count that evaluates on each workload, and a reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/expr.h"
#include "core/problem.h"

namespace kernelarc {
namespace {

std::vector<std::filesystem::path> problem_dirs(const std::string& target) {
  std::vector<std::filesystem::path> dirs;
  const auto root = std::filesystem::path(KERNELARC_SOURCE_DIR) / "problems" / target;
  // problems/cuda also holds tools, which is no problem.
  for (const auto& entry : std::filesystem::directory_iterator(root))
    if (std::filesystem::exists(entry.path() / "definition.json")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

void expect_complete(const std::filesystem::path& dir) {
  SCOPED_TRACE(dir.string());
  Problem problem;
  ASSERT_NO_THROW(problem = load_problem(dir));
  const Definition& def = problem.definition;
  EXPECT_TRUE(!def.ext.flops.empty() || !def.ext.bytes.empty()) << "no kernelarc.flops or bytes";
  EXPECT_NE(def.reference.find("def run("), std::string::npos) << "no reference run(...)";
  EXPECT_FALSE(def.description.empty());
  ASSERT_FALSE(problem.workloads.empty());
  for (const Workload& workload : problem.workloads) {
    const AxisValues axes = resolve_axes(def, workload);
    if (!def.ext.bytes.empty()) EXPECT_GT(evaluate_expr(def.ext.bytes, axes), 0) << workload.uuid;
    if (!def.ext.flops.empty()) EXPECT_GE(evaluate_expr(def.ext.flops, axes), 0) << workload.uuid;
  }
}

TEST(BundledProblems, CpuProblemsAreComplete) {
  const auto dirs = problem_dirs("cpu");
  EXPECT_GE(dirs.size(), 5u);
  for (const auto& dir : dirs) expect_complete(dir);
}

TEST(BundledProblems, CudaSuiteIsCompleteWithUniqueNames) {
  const auto dirs = problem_dirs("cuda");
  EXPECT_GE(dirs.size(), 22u) << "the Hopper suite (problems/cuda/README.md)";
  std::set<std::string> names;
  for (const auto& dir : dirs) {
    expect_complete(dir);
    const std::string name = load_definition(dir / "definition.json").name;
    EXPECT_TRUE(names.insert(name).second) << "two problems are named " << name;
  }
}

/// A line of `reference` with a matrix product of float32 operands (".float()" or
/// "torch.float32" on the product's own line; a float32 accumulator elsewhere does not count).
bool has_float32_matmul(const std::string& reference) {
  std::istringstream lines(reference);
  for (std::string line; std::getline(lines, line);) {
    const bool product = line.find("matmul(") != std::string::npos ||
                         line.find("einsum(") != std::string::npos ||
                         line.find(" @ ") != std::string::npos;
    const bool float32 = line.find(".float()") != std::string::npos ||
                         line.find("torch.float32") != std::string::npos;
    if (product && float32) return true;
  }
  return false;
}

// A reference that runs its matrix products in float32 is an accurate oracle but a baseline 5-60x
// slower than the bfloat16 code a user runs; timing it would flatter kernelarc.
TEST(BundledProblems, CudaReferencesWithFloat32MatmulsNameTheUsersBaseline) {
  int named = 0;
  for (const auto& dir : problem_dirs("cuda")) {
    const Definition def = load_definition(dir / "definition.json");
    if (!has_float32_matmul(def.reference)) continue;
    ++named;
    EXPECT_FALSE(def.ext.baseline.empty()) << dir << ": kernelarc.baseline";
  }
  EXPECT_GE(named, 4) << "attention, GQA decode, GEMM+bias+GELU and FP8 GEMM";
}

}  // namespace
}  // namespace kernelarc
