// Building CUDA candidates: NVRTC to a cubin plus launch plan, nvcc to a ka_run library, the
// cache and the compile errors. These need the CUDA toolkit but no GPU, so they run in CI.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>

#include "backend/cuda/cuda_compiler.h"
#include "backend/cuda/cuda_launch.h"
#include "backend/cuda/cuda_nvrtc.h"
#include "backend/cuda_test_support.h"

namespace kernelarc {
namespace {

using testing::TempDir;

std::string read_all(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

CudaCompileOptions options_in(const TempDir& dir) {
  CudaCompileOptions options;
  options.cache_dir = dir.path();
  return options;
}

TEST(CudaCompiler, NvrtcBuildsCubinAndLaunchPlan) {
  KERNELARC_REQUIRE_CUDA_BUILD();
  TempDir cache;
  const Problem problem = testing::add_one_problem();
  const CompileResult result =
      compile_cuda_solution(testing::add_one_solution(), problem.definition, options_in(cache));
  ASSERT_TRUE(result.ok) << result.log;
  EXPECT_FALSE(result.cached);
  ASSERT_TRUE(is_launch_plan(result.library)) << result.library;

  const LaunchPlan plan =
      LaunchPlan::from_json(nlohmann::json::parse(read_all(result.library)), "plan");
  EXPECT_EQ(plan.symbol, "add_one");  // extern "C": the lowered name is the name
  EXPECT_EQ(plan.knobs.at("BLOCK"), 256);
  EXPECT_EQ(plan.spec.grid[0], "(n + BLOCK - 1) // BLOCK");
  const std::string cubin = read_all(result.library.parent_path() / plan.cubin_file);
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4),
            "\x7f"
            "ELF");
}

TEST(CudaCompiler, NvrtcBuildIsCachedByContent) {
  KERNELARC_REQUIRE_CUDA_BUILD();
  TempDir cache;
  const Definition definition = testing::add_one_problem().definition;
  Solution solution = testing::add_one_solution();
  const CompileResult first = compile_cuda_solution(solution, definition, options_in(cache));
  const CompileResult second = compile_cuda_solution(solution, definition, options_in(cache));
  ASSERT_TRUE(first.ok && second.ok) << first.log << second.log;
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.library, first.library);

  solution.ext["knobs"]["INCREMENT"] = 2;  // a knob is a -D: another build
  const CompileResult third = compile_cuda_solution(solution, definition, options_in(cache));
  ASSERT_TRUE(third.ok) << third.log;
  EXPECT_FALSE(third.cached);
  EXPECT_NE(third.cache_key, first.cache_key);
}

TEST(CudaCompiler, NvrtcReportsCompileErrors) {
  KERNELARC_REQUIRE_CUDA_BUILD();
  TempDir cache;
  const Definition definition = testing::add_one_problem().definition;
  Solution solution = testing::add_one_solution();
  solution.sources[0].content += "\n__global__ void broken( { }\n";
  CompileResult result = compile_cuda_solution(solution, definition, options_in(cache));
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("add_one.cu"), std::string::npos) << result.log;
  EXPECT_NE(result.log.find("error"), std::string::npos) << result.log;

  solution = testing::add_one_solution();
  solution.ext["launch"]["grid"] = {"(n + WIDTH - 1) // WIDTH"};
  result = compile_cuda_solution(solution, definition, options_in(cache));
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("'WIDTH' is neither an axis"), std::string::npos) << result.log;

  solution = testing::add_one_solution();
  solution.ext["launch"]["kernel"] = "no_such_kernel";
  result = compile_cuda_solution(solution, definition, options_in(cache));
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("no_such_kernel"), std::string::npos) << result.log;
}

// setmaxnreg exists only on the arch-specific target: the source selects sm_90a on an sm_90
// device, and forcing plain sm_90 fails in ptxas.
TEST(CudaCompiler, ArchSpecificInstructionsSelectSm90a) {
  KERNELARC_REQUIRE_CUDA_BUILD();
  TempDir cache;
  const Definition definition = testing::add_one_problem().definition;
  Solution solution = testing::add_one_solution();
  EXPECT_EQ(select_cuda_arch(solution, ""), "sm_90a");
  EXPECT_EQ(select_cuda_arch(solution, "sm_90"), "sm_90");
  solution.sources[0].content += R"(
extern "C" __global__ void __launch_bounds__(128, 1) grow(float* x) {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  x[threadIdx.x] = 0;
}
)";
  EXPECT_EQ(select_cuda_arch(solution, "sm_90"), "sm_90a");
  CudaCompileOptions options = options_in(cache);
  options.device_arch = "sm_90";
  const CompileResult accelerated = compile_cuda_solution(solution, definition, options);
  EXPECT_TRUE(accelerated.ok) << accelerated.log;

  solution.ext["arch"] = "sm_90";
  EXPECT_EQ(select_cuda_arch(solution, "sm_90"), "sm_90");
  const CompileResult plain = compile_cuda_solution(solution, definition, options);
  EXPECT_FALSE(plain.ok);
  EXPECT_NE(plain.log.find("setmaxnreg"), std::string::npos) << plain.log;

  solution.ext["arch"] = "compute_90";
  const CompileResult virtual_arch = compile_cuda_solution(solution, definition, options);
  EXPECT_FALSE(virtual_arch.ok);
  EXPECT_NE(virtual_arch.log.find("sm_<number>"), std::string::npos) << virtual_arch.log;
}

TEST(CudaCompiler, NvccBuildsKaRunLibraryAndCachesIt) {
  KERNELARC_REQUIRE_CUDA_BUILD();
  TempDir cache;
  const CompileResult first = compile_cuda_solution(testing::spin_solution(),
                                                    testing::spin_definition(), options_in(cache));
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cached);
  EXPECT_FALSE(is_launch_plan(first.library));
  EXPECT_NE(first.log.find("-gencode=arch=compute_90a,code=sm_90a"), std::string::npos)
      << first.log;
  EXPECT_NE(first.log.find("-DSPIN_NS=2000000"), std::string::npos) << first.log;

  // Loading the library starts nothing: its CUDA runtime initializes on first use.
  void* handle = dlopen(first.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  EXPECT_NE(dlsym(handle, "ka_run"), nullptr);
  EXPECT_NE(dlsym(handle, "ka_run_side_stream"), nullptr);

  const CompileResult second = compile_cuda_solution(testing::spin_solution(),
                                                     testing::spin_definition(), options_in(cache));
  ASSERT_TRUE(second.ok) << second.log;
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.library, first.library);
}

TEST(CudaCompiler, NvccReportsCompileErrors) {
  KERNELARC_REQUIRE_CUDA_BUILD();
  TempDir cache;
  Solution solution = testing::spin_solution();
  solution.ext = OrderedJson::object();  // no SPIN_NS: the source does not compile
  const CompileResult result =
      compile_cuda_solution(solution, testing::spin_definition(), options_in(cache));
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("SPIN_NS"), std::string::npos) << result.log;
  EXPECT_NE(result.log.find("exited with status"), std::string::npos) << result.log;
  EXPECT_TRUE(std::filesystem::is_empty(cache.path() / "cuda")) << "a failed build left files";
}

TEST(CudaCompiler, RejectsSourcesOutsideTheSolution) {
  TempDir cache;
  Solution solution = testing::spin_solution();
  solution.sources.push_back({"../escape.cu", "int x;"});
  const CompileResult result =
      compile_cuda_solution(solution, testing::spin_definition(), options_in(cache));
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("../escape.cu"), std::string::npos) << result.log;
}

TEST(CudaNvrtc, ReportsVersionAndToolkitHeaders) {
  KERNELARC_REQUIRE_CUDA_BUILD();
  EXPECT_EQ(nvrtc_version().rfind("nvrtc ", 0), 0u) << nvrtc_version();
  EXPECT_EQ(nvrtc_version().find("unavailable"), std::string::npos) << nvrtc_version();
  ASSERT_FALSE(nvrtc_include_dirs().empty());
  EXPECT_TRUE(std::filesystem::exists(nvrtc_include_dirs()[0] / "cuda_fp16.h"));
}

}  // namespace
}  // namespace kernelarc
