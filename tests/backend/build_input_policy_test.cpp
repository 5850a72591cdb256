// The allowlist for synthesizer-chosen build inputs: the flags the bundled templates use pass,
// flags that run or read other programs and files are refused by name, and a stored synthesized
// solution carrying one is refused by the compiler before anything runs.
#include "backend/build_input_policy.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "backend/cpu/cpu_compiler.h"
#include "backend_test_util.h"

namespace kernelarc {
namespace {

using test::TempDir;

std::optional<std::string> host(std::vector<std::string> flags) {
  return refuse_flags(flags, FlagTarget::HostCompiler, "cflags");
}
std::optional<std::string> cuda(std::vector<std::string> flags) {
  return refuse_flags(flags, FlagTarget::CudaCompiler, "cuda_cflags");
}
std::optional<std::string> link(std::vector<std::string> flags) {
  return refuse_flags(flags, FlagTarget::Linker, "ld_flags");
}

TEST(BuildInputPolicy, OptimizationTargetAndFastMathFlagsPass) {
  EXPECT_EQ(host({"-O3", "-march=native", "-fopenmp", "-fno-trapping-math", "-ffast-math",
                  "-funroll-loops", "-mavx512f", "-mprefer-vector-width=512", "-DBLOCK=256", "-D",
                  "USE_AVX", "-std=c++20", "-Wno-unused", "-Isrc/include", "-g"}),
            std::nullopt);
  EXPECT_EQ(cuda({"-O3", "--use_fast_math", "-maxrregcount=64", "-lineinfo", "-std=c++17",
                  "-Xptxas", "-v,-O3", "-Xcompiler", "-fopenmp,-O3", "-DTILE=32",
                  "-gencode=arch=compute_90a,code=sm_90a", "--expt-relaxed-constexpr"}),
            std::nullopt);
  EXPECT_EQ(link({"-fopenmp", "-lcublasLt", "-lcudnn", "-lm", "-pthread"}), std::nullopt);
}

TEST(BuildInputPolicy, FlagsThatRunOrReadOtherThingsAreRefusedByName) {
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{{"-wrapper", "/bin/sh,-c,id"},
                                             {"-wrapper=/bin/sh"},
                                             {"-B/tmp/evil"},
                                             {"-B", "/tmp"},
                                             {"-specs=/tmp/x.specs"},
                                             {"-fplugin=/tmp/p.so"},
                                             {"@/tmp/args"},
                                             {"-include", "/etc/passwd"},
                                             {"-I/work"},
                                             {"-Isrc/../.."},
                                             {"-I", "/"},
                                             {"-L/tmp"},
                                             {"-o", "/tmp/x"},
                                             {"-Wl,-rpath,/tmp"},
                                             {"-Wp,-include,/etc/passwd"},
                                             {"-O3 -wrapper x"},
                                             {"-DX=$(id)"},
                                             {"-MF/tmp/deps"},
                                             {"-mllvm"},
                                             {"-flto"}}) {
    const auto refused = host(flags);
    ASSERT_TRUE(refused) << flags.front();
    EXPECT_NE(refused->find(flags.front()), std::string::npos) << *refused;
  }
  EXPECT_TRUE(cuda({"-ccbin", "/tmp/cc"}));
  EXPECT_TRUE(cuda({"--compiler-bindir=/tmp"}));
  EXPECT_TRUE(cuda({"-Xcompiler", "-wrapper,/bin/sh"}));
  EXPECT_TRUE(cuda({"-Xlinker", "-rpath"}));
  EXPECT_TRUE(cuda({"--run"}));
  EXPECT_TRUE(link({"-L/tmp", "-lfoo"}));
  EXPECT_TRUE(link({"-l/tmp/libx.so"}));
  EXPECT_TRUE(link({"-Wl,--wrap=malloc"}));
}

TEST(BuildInputPolicy, SourcePathsEntryAndLanguagesAreChecked) {
  EXPECT_EQ(refuse_source_path("kernel.cu"), std::nullopt);
  EXPECT_EQ(refuse_source_path("include/ka_tile.cuh"), std::nullopt);
  for (const char* bad : {"../x.cpp", "/etc/x.h", "-x.cpp", ".hidden.h", "a//b.h", "a b.cpp",
                          "run.sh", "main", "x.cpp/"})
    EXPECT_TRUE(refuse_source_path(bad)) << bad;
  Solution solution = test::make_solution({{"main.cpp", "int x;"}});
  solution.ext = {{"synthesized", {{"synthesizer", "llm"}}}};
  EXPECT_TRUE(is_synthesized_solution(solution));
  EXPECT_EQ(refuse_build_inputs(solution), std::nullopt);
  solution.entry_symbol = "ka_run; rm";
  EXPECT_TRUE(refuse_build_inputs(solution));
  solution.entry_symbol = "ka_run";
  solution.languages = {"shell"};
  EXPECT_TRUE(refuse_build_inputs(solution));
}

// A solution stored before the allowlist existed, with the flag the issue found: the compiler
// must refuse it, and the shell it names must never run.
TEST(BuildInputPolicy, StoredSynthesizedSolutionWithAWrapperFlagIsNeverBuilt) {
  TempDir cache;
  const std::filesystem::path marker = cache.path() / "wrapper-ran";
  Solution solution = test::make_solution(
      {{"main.cpp", "#include <kernelarc/abi.h>\nextern \"C\" int ka_run() { return 0; }\n"}});
  solution.cflags = {"-wrapper", "/bin/sh,-c,touch " + marker.string() + "; exec \"$0\" \"$@\""};
  solution.ext = {{"synthesized", {{"synthesizer", "llm"}}}};
  const CompileResult result =
      compile_cpu_solution(solution, test::test_compile_options(cache.path()));
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("\"-wrapper\""), std::string::npos) << result.log;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

}  // namespace
}  // namespace kernelarc
