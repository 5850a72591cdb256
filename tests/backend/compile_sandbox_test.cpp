// The build sandbox of synthesized solutions: g++, nvcc and NVRTC read the toolchain and the
// solution's sources but no other file, so a candidate cannot #include the workspace (the
// calibration, the oracle's expected outputs). The same source builds when it is trusted (not
// synthesized), which shows that the include itself works and only the sandbox stops it.
#include "backend/compile_sandbox.h"

#include <gtest/gtest.h>

#include <fstream>

#include "backend/cpu/cpu_compiler.h"
#include "backend/cuda/cuda_compiler.h"
#include "backend/cuda_test_support.h"
#include "backend_test_util.h"

namespace kernelarc {
namespace {

using test::TempDir;

/// A file like <workspace>/calibration/cpu.json, written so that #include reads it as code.
std::filesystem::path workspace_secret(const TempDir& dir) {
  const std::filesystem::path path = dir.path() / "workspace" / "calibration" / "cpu.json";
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << "#define KA_STOLEN_CALIBRATION 1\n";  // valid C++ and CUDA
  return path;
}

Solution synthesized(Solution solution) {
  solution.ext["synthesized"] = {{"synthesizer", "llm"}};
  return solution;
}

const char* kKaRun =
    "extern \"C\" int ka_run(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {\n"
    "  return 0;\n}\n";

TEST(CompileSandbox, HostCompilerBuildsASynthesizedSolution) {
  TempDir cache;
  const Solution solution = synthesized(test::make_solution(
      {{"main.cpp", std::string("#include <kernelarc/abi.h>\n#include <vector>\n") + kKaRun},
       {"util.h", "inline int twice(int x) { return 2 * x; }\n"}}));
  const CompileResult result =
      compile_cpu_solution(solution, test::test_compile_options(cache.path()));
  EXPECT_TRUE(result.ok) << result.log;
}

TEST(CompileSandbox, HostCompilerCannotIncludeAWorkspaceFile) {
  TempDir dir;
  const std::filesystem::path secret = workspace_secret(dir);
  const Solution solution =
      test::make_solution({{"main.cpp", "#include <kernelarc/abi.h>\n#include \"" +
                                            secret.string() + "\"\n" + kKaRun}});
  const CompileResult trusted =
      compile_cpu_solution(solution, test::test_compile_options(dir.path() / "cache1"));
  ASSERT_TRUE(trusted.ok) << trusted.log;
  const CompileResult sandboxed = compile_cpu_solution(
      synthesized(solution), test::test_compile_options(dir.path() / "cache2"));
  EXPECT_FALSE(sandboxed.ok);
  EXPECT_NE(sandboxed.log.find(secret.string()), std::string::npos) << sandboxed.log;
}

TEST(CompileSandbox, CompilerEnvironmentIsAnAllowlist) {
  ::setenv("LLM_AUTH", "sk-innocent-name", 1);
  const std::vector<std::string> environment = compile_environment("/tmp/build");
  ::unsetenv("LLM_AUTH");
  for (const std::string& entry : environment)
    EXPECT_FALSE(entry.starts_with("LLM_AUTH=")) << entry;
  EXPECT_NE(std::find(environment.begin(), environment.end(), "TMPDIR=/tmp/build"),
            environment.end());
}

TEST(CompileSandbox, NvccCannotIncludeAWorkspaceFile) {
  KERNELARC_REQUIRE_CUDA_BUILD();
  TempDir dir;
  const std::filesystem::path secret = workspace_secret(dir);
  Solution solution = testing::spin_solution();
  solution.sources[0].content =
      "#include \"" + secret.string() + "\"\n" + solution.sources[0].content;
  CudaCompileOptions options;
  options.cache_dir = dir.path() / "cache1";
  const CompileResult trusted =
      compile_cuda_solution(solution, testing::spin_definition(), options);
  ASSERT_TRUE(trusted.ok) << trusted.log;
  options.cache_dir = dir.path() / "cache2";
  const CompileResult sandboxed =
      compile_cuda_solution(synthesized(solution), testing::spin_definition(), options);
  EXPECT_FALSE(sandboxed.ok);
  EXPECT_NE(sandboxed.log.find(secret.string()), std::string::npos) << sandboxed.log;
}

TEST(CompileSandbox, NvrtcCannotIncludeAWorkspaceFile) {
  KERNELARC_REQUIRE_CUDA_BUILD();
  TempDir dir;
  const std::filesystem::path secret = workspace_secret(dir);
  Solution solution = testing::add_one_solution();
  for (SourceFile& source : solution.sources)
    if (source.path == solution.entry_file)
      source.content = "#include \"" + secret.string() + "\"\n" + source.content;
  const Problem problem = testing::add_one_problem();
  CudaCompileOptions options;
  options.cache_dir = dir.path() / "cache1";
  const CompileResult trusted = compile_cuda_solution(solution, problem.definition, options);
  ASSERT_TRUE(trusted.ok) << trusted.log;
  options.cache_dir = dir.path() / "cache2";
  const CompileResult clean =
      compile_cuda_solution(synthesized(testing::add_one_solution()), problem.definition, options);
  EXPECT_TRUE(clean.ok) << clean.log;
  const CompileResult sandboxed =
      compile_cuda_solution(synthesized(solution), problem.definition, options);
  EXPECT_FALSE(sandboxed.ok);
  EXPECT_NE(sandboxed.log.find("cpu.json"), std::string::npos) << sandboxed.log;
}

}  // namespace
}  // namespace kernelarc
