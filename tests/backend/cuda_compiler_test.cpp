// Building CUDA candidates: NVRTC to a cubin plus launch plan, nvcc to a ka_run library, the
// cache and the compile errors. These need the CUDA toolkit but no GPU, so they run in CI.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>

#include "backend/cuda/cuda_build.h"
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

// A wgmma solution is built with ptxas's report on, and its remarks on the wgmma code become
// notes, for a fresh build and for the same build found in the cache. The kernel changes an
// accumulator in a lane-divergent branch between two wgmmas, which makes ptxas serialise them.
TEST(CudaCompiler, WgmmaBuildsKeepPtxasRemarksAsNotes) {
  KERNELARC_REQUIRE_CUDA_BUILD();
  TempDir cache;
  const Definition definition = testing::add_one_problem().definition;
  Solution solution = testing::add_one_solution();
  const CompileResult plain = compile_cuda_solution(solution, definition, options_in(cache));
  ASSERT_TRUE(plain.ok) << plain.log;
  EXPECT_TRUE(plain.notes.empty());

  solution.sources[0].content += R"(
__device__ __forceinline__ void mma(float (&d)[32], unsigned long long a, unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, "
      "%8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, "
      "%26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(1));
}
extern "C" __global__ void __launch_bounds__(256, 1)
    serialised(float* out, const unsigned long long* desc) {
  float d[32];
  for (int i = 0; i < 32; ++i) d[i] = 0.f;
  if (threadIdx.x / 128 == 1) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    mma(d, desc[0], desc[1]);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if (threadIdx.x % 2) d[0] += 1.f;
    mma(d, desc[2], desc[3]);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  for (int i = 0; i < 32; ++i) out[threadIdx.x * 32 + i] = d[i];
}
)";
  const CompileResult fresh = compile_cuda_solution(solution, definition, options_in(cache));
  ASSERT_TRUE(fresh.ok) << fresh.log;
  ASSERT_FALSE(fresh.cached);
  ASSERT_FALSE(fresh.notes.empty()) << fresh.log;
  EXPECT_TRUE(fresh.notes[0].starts_with("(C7520) Potential Performance Loss")) << fresh.notes[0];
  const CompileResult again = compile_cuda_solution(solution, definition, options_in(cache));
  ASSERT_TRUE(again.ok && again.cached);
  EXPECT_EQ(again.notes, fresh.notes);
}

TEST(CudaCompiler, WgmmaCompileNotesAreThePtxasC75Lines) {
  EXPECT_EQ(wgmma_compile_notes("ptxas info    : Used 40 registers\n"
                                "ptxas info    : (C7519) warpgroup.arrive is injected\n"
                                "ptxas info    : (C7520) Potential Performance Loss: x\n"),
            (std::vector<std::string>{"(C7519) warpgroup.arrive is injected",
                                      "(C7520) Potential Performance Loss: x"}));
  EXPECT_TRUE(wgmma_compile_notes("").empty());
  EXPECT_TRUE(wgmma_compile_notes("ptxas info    : Used 168 registers").empty());
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
