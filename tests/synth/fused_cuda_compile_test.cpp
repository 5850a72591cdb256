// The CUDA generator of family "fused" on a plan of each kernel kind (tests/data/fused_cuda; the
// cuBLASLt route's direct and epilogue forms through mm_f32 and bmm_bias_gelu_bf16, its residual
// and alpha forms only in the GPU guard test, to keep CI's nvcc time down):
// the bound template instantiates at its default knob point and two others, and each solution
// compiles with nvcc for sm_90a with the flags the backend's shared-object build uses
// (backend/cuda/cuda_compiler.cpp). Skipped where no nvcc is installed; no GPU is needed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/paths.h"
#include "core/problem.h"
#include "source_dir.h"
#include "synth/bound_template.h"
#include "synth/kernel_template.h"
#include "synth/knob_point.h"

namespace kernelarc {
namespace {

const std::filesystem::path kProblems = kSource / "tests/data/fused_cuda";

/// Points besides the default that move every knob the drivers branch on: narrow blocks, short
/// vectors, no register cache, a block per row, small FMA tiles, no tensor cores and no cuBLASLt
/// route (the default takes it where a plan allows); then wide
/// blocks, warps per row, a deep cache and large tiles.
const char* const kOtherPoints[] = {
    "BLOCK_THREADS=128,CACHE_VECS=0,ITEMS=1,MATMUL_LIBRARY=0,ROW_MAPPING=block,TENSOR_CORES=0,"
    "THREAD_M=2,THREAD_N=4,TILE_K=8,TILE_M=32,TILE_N=64,VEC=4",
    "BLOCK_THREADS=1024,CACHE_VECS=4,ITEMS=8,MATMUL_LIBRARY=1,ROW_MAPPING=warp,TENSOR_CORES=1,"
    "THREAD_M=8,"
    "THREAD_N=8,TILE_K=16,TILE_M=128,TILE_N=128,VEC=2",
};

std::optional<std::string> find_nvcc() {
  if (const char* env = std::getenv("KERNELARC_NVCC"); env != nullptr && *env != '\0') return env;
  if (std::system("command -v nvcc >/dev/null 2>&1") == 0) return "nvcc";
  if (std::filesystem::exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return std::nullopt;
}

const KernelTemplate& fused_cuda_template() {
  static const std::vector<KernelTemplate> library = load_template_library(kSource / "templates");
  for (const KernelTemplate& kernel : library)
    if (kernel.name == "fused_cuda") return kernel;
  throw std::runtime_error("templates/cuda/fused is missing");
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

std::string quoted(const std::string& text) {
  return "'" + text + "'";
}

/// nvcc's log when the solution does not compile as the backend builds it, else nullopt.
std::optional<std::string> compile(const std::string& nvcc, const Solution& solution,
                                   const std::map<std::string, int64_t>& defines,
                                   const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir / "src");
  std::string command = fmt::format(
      "cd {} && {} -shared -Xcompiler -fPIC -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a",
      quoted(dir.string()), quoted(nvcc));
  for (const auto& [name, value] : defines) command += fmt::format(" -D{}={}", name, value);
  for (const std::string& flag : solution.cuda_cflags) command += " " + quoted(flag);
  command += " " + quoted("-I" + abi_include_dir().string()) + " -Isrc";
  for (const SourceFile& source : solution.sources) {
    std::ofstream(dir / "src" / source.path) << source.content;
    if (source.path.ends_with(".cu")) command += " src/" + source.path;
  }
  command += " -o lib.so > build.log 2>&1";
  if (std::system(command.c_str()) == 0 && std::filesystem::exists(dir / "lib.so"))
    return std::nullopt;
  return command + "\n" + read_file(dir / "build.log");
}

const std::string& header_of(const Solution& solution) {
  for (const SourceFile& source : solution.sources)
    if (source.path == "ka_problem.h") return source.content;
  throw std::runtime_error("the solution has no ka_problem.h");
}

class FusedCudaCompile : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedCudaCompile, CompilesAtThreeKnobPoints) {
  const std::optional<std::string> nvcc = find_nvcc();
  if (!nvcc) GTEST_SKIP() << "nvcc not found";
  const Problem problem = load_problem(kProblems / GetParam());
  const BoundTemplate bound(fused_cuda_template(), problem);
  std::vector<KnobPoint> points = {bound.space().space().default_point()};
  for (const char* text : kOtherPoints) points.push_back(parse_knob_point(text));

  const std::filesystem::path root =
      std::filesystem::temp_directory_path() /
      fmt::format("kernelarc-fused-cuda-{}-{}", getpid(), GetParam());
  std::vector<Solution> solutions;
  std::vector<std::future<std::optional<std::string>>> builds;
  for (std::size_t i = 0; i < points.size(); ++i) {
    ASSERT_TRUE(bound.space().is_valid(points[i])) << format_knob_point(points[i]);
    solutions.push_back(bound.instantiate(points[i]));
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    builds.push_back(std::async(std::launch::async, compile, *nvcc, solutions[i],
                                bound.knob_defines(points[i]), root / std::to_string(i)));
  }
  bool failed = false;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::optional<std::string> failure = builds[i].get();
    failed = failed || failure;
    EXPECT_FALSE(failure) << GetParam() << " at " << format_knob_point(points[i]) << " (kept in "
                          << (root / std::to_string(i)).string() << "):\n"
                          << failure.value_or("");
  }
  std::error_code ignored;
  if (!failed) std::filesystem::remove_all(root, ignored);
}

INSTANTIATE_TEST_SUITE_P(
    Plans, FusedCudaCompile,
    ::testing::Values("pointwise_bcast_bf16", "softmax_bf16", "mse_scalar", "sum_middle",
                      "argmax_middle", "cumsum_reverse_exclusive", "bmm_bias_gelu_bf16", "mm_f32",
                      "decoder_mlp_block_bf16", "scatter_index_add", "topk_route", "topk_long_rows",
                      "conv2d_strided_bias_f32"),
    [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Which paths the generator offers each plan: packs where a walk is contiguous, tensor cores
// only for 16-bit operands that are both k-contiguous, the layouts the drivers dispatch on.
TEST(FusedCudaHeader, OffersThePathsEachPlanAllows) {
  auto header = [](const std::string& name) {
    const Problem problem = load_problem(kProblems / name);
    const BoundTemplate bound(fused_cuda_template(), problem);
    return header_of(bound.instantiate(bound.space().space().default_point()));
  };
  const std::string pointwise = header("pointwise_bcast_bf16");
  EXPECT_NE(pointwise.find("ka_load_pack<N>(ka_b0"), std::string::npos) << pointwise;  // x
  EXPECT_NE(pointwise.find("ka_load_pack<N>(ka_b1"), std::string::npos) << pointwise;  // bias
  EXPECT_EQ(pointwise.find("ka_load_pack<N>(ka_b2"), std::string::npos) << pointwise;  // scale
  EXPECT_NE(pointwise.find("ka_store_pack<N>(ka_b3"), std::string::npos) << pointwise;

  EXPECT_NE(header("bmm_bias_gelu_bf16").find("kMma = true"), std::string::npos);
  EXPECT_NE(header("mm_f32").find("kMma = false"), std::string::npos);
  EXPECT_NE(header("sum_middle").find("int layout() const { return 2; }"), std::string::npos);
  EXPECT_NE(header("softmax_bf16").find("kPasses = 2"), std::string::npos);
  EXPECT_NE(header("softmax_bf16").find("kHasFull = true"), std::string::npos);

  // The cuBLASLt route: where the operands allow it, behind MATMUL_LIBRARY, the generated
  // kernel in its else branch; the epilogue kernel launched only after the library ran.
  const std::string bmm = header("bmm_bias_gelu_bf16");
  EXPECT_NE(bmm.find("#include \"ka_lt_matmul.cuh\""), std::string::npos) << bmm;
  EXPECT_NE(bmm.find("#if MATMUL_LIBRARY"), std::string::npos) << bmm;
  EXPECT_NE(bmm.find("c.type_ab = CUDA_R_16BF; c.type_d = CUDA_R_32F;"), std::string::npos);
  EXPECT_NE(bmm.find("ka_launch_pointwise<KaKernel1"), std::string::npos) << bmm;
  EXPECT_NE(header("mm_residual_kn_bf16").find("c.c = args."), std::string::npos);
  EXPECT_NE(header("bmm_scaled_transposed_f16").find("c.alpha = (float)0.125;"), std::string::npos);
  EXPECT_EQ(header("softmax_bf16").find("ka_lt_matmul"), std::string::npos);

  // A decoder MLP block as the lowering writes it: every product reads bfloat16 operands (the
  // normalized rows, the gated product), so each has tensor cores and cuBLASLt's direct route,
  // and no product passes through a float32 temp (residual_out gets a kernel of its own).
  const std::string decoder = header("decoder_mlp_block_bf16");
  const auto count = [&](const std::string& part) {
    int n = 0;
    for (std::size_t at = decoder.find(part); at != std::string::npos;
         at = decoder.find(part, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("kMma = true"), 3) << decoder;
  EXPECT_EQ(count("ka_lt_matmul(c, "), 3) << decoder;
  EXPECT_EQ(count("ka_product"), 0) << decoder;
}

}  // namespace
}  // namespace kernelarc
