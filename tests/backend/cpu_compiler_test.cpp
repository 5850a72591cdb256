#include "backend/cpu/cpu_compiler.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <thread>

#include "backend_test_util.h"
#include "core/error.h"

namespace kernelarc {
namespace {

using test::TempDir;

const char* kAddOne = R"(#include <kernelarc/abi.h>
extern "C" int ka_run(const ka_tensor* in, int, ka_tensor* out, int, void*, void*, size_t) {
  static_cast<float*>(out[0].data)[0] = static_cast<const float*>(in[0].data)[0] + 1.0f;
  return 0;
}
)";

Solution add_one() {
  return test::make_solution({{"add_one.cpp", kAddOne}});
}

int count_entries(const std::filesystem::path& dir) {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++count;
  return count;
}

TEST(CpuCompiler, CompilesThenHitsTheCache) {
  TempDir cache;
  CompileResult first = compile_cpu_solution(add_one(), test::test_compile_options(cache.path()));
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cached);
  EXPECT_EQ(first.library, cache.path() / "cpu" / first.cache_key / "lib.so");
  EXPECT_TRUE(std::filesystem::exists(first.library));
  EXPECT_TRUE(std::filesystem::exists(cache.path() / "cpu" / first.cache_key / "src/add_one.cpp"));

  CompileResult second = compile_cpu_solution(add_one(), test::test_compile_options(cache.path()));
  ASSERT_TRUE(second.ok);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.cache_key, first.cache_key);
  EXPECT_EQ(second.library, first.library);
}

TEST(CpuCompiler, KeyChangesWithFlagsCflagsAndSources) {
  TempDir cache;
  CpuCompileOptions options = test::test_compile_options(cache.path());
  std::string base = compile_cpu_solution(add_one(), options).cache_key;

  options.flags = {"-O2"};
  std::string other_flags = compile_cpu_solution(add_one(), options).cache_key;
  options.flags = {"-O1"};

  Solution with_cflags = add_one();
  with_cflags.cflags = {"-DEXTRA=1"};
  std::string other_cflags = compile_cpu_solution(with_cflags, options).cache_key;

  Solution edited = add_one();
  edited.sources[0].content += "// edited\n";
  std::string other_source = compile_cpu_solution(edited, options).cache_key;

  EXPECT_NE(base, other_flags);
  EXPECT_NE(base, other_cflags);
  EXPECT_NE(base, other_source);
  EXPECT_EQ(base, compile_cpu_solution(add_one(), options).cache_key);
  EXPECT_EQ(count_entries(cache.path() / "cpu"), 4);  // no temporary build left behind
}

TEST(CpuCompiler, CompileErrorGivesTheCompilerLog) {
  TempDir cache;
  Solution broken =
      test::make_solution({{"broken.cpp", "int ka_run() { return undeclared_name; }\n"}});
  CompileResult result = compile_cpu_solution(broken, test::test_compile_options(cache.path()));
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("src/broken.cpp"), std::string::npos) << result.log;
  EXPECT_NE(result.log.find("undeclared_name"), std::string::npos) << result.log;
  EXPECT_FALSE(std::filesystem::exists(cache.path() / "cpu" / result.cache_key));
  EXPECT_EQ(count_entries(cache.path() / "cpu"), 0);
}

TEST(CpuCompiler, LongCompilerLogKeepsItsHead) {
  TempDir cache;
  std::string source;
  for (int i = 0; i < 100; ++i)
    source += "int f" + std::to_string(i) + "() { return missing" + std::to_string(i) + "; }\n";
  CompileResult result = compile_cpu_solution(test::make_solution({{"many.cpp", source}}),
                                              test::test_compile_options(cache.path()));
  ASSERT_FALSE(result.ok);
  EXPECT_NE(result.log.find("missing0"), std::string::npos);
  EXPECT_NE(result.log.find("more lines)"), std::string::npos) << result.log;
}

TEST(CpuCompiler, CompilesCAndCppTogether) {
  TempDir cache;
  Solution mixed = test::make_solution({
      {"entry.cpp", R"(#include <kernelarc/abi.h>
#include "helpers/twice.h"
extern "C" int ka_run(const ka_tensor* in, int, ka_tensor* out, int, void*, void*, size_t) {
  static_cast<float*>(out[0].data)[0] = twice(static_cast<const float*>(in[0].data)[0]);
  return 0;
})"},
      {"helpers/twice.h", "#ifdef __cplusplus\nextern \"C\"\n#endif\nfloat twice(float x);\n"},
      {"helpers/twice.c", "#include \"helpers/twice.h\"\nfloat twice(float x) { return 2 * x; }\n"},
  });
  CompileResult result = compile_cpu_solution(mixed, test::test_compile_options(cache.path()));
  ASSERT_TRUE(result.ok) << result.log;

  void* library = dlopen(result.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  auto run = reinterpret_cast<ka_run_fn>(dlsym(library, "ka_run"));
  ASSERT_NE(run, nullptr);
  float x = 21, y = 0;
  ka_tensor in{&x, KA_FLOAT32, 0, {}, {}};
  ka_tensor out{&y, KA_FLOAT32, 0, {}, {}};
  EXPECT_EQ(run(&in, 1, &out, 1, nullptr, nullptr, 0), 0);
  EXPECT_EQ(y, 42);
  dlclose(library);
}

// Two candidates loaded into one worker keep their own statics, also a template's static that
// both define alike (a kernel's "prepared" flag in a shared header): with GCC's default GNU
// unique symbols the second library would count on from the first's value.
TEST(CpuCompiler, LibrariesKeepTheirOwnTemplateStatics) {
  TempDir cache;
  auto counting = [](const std::string& tag) {
    return test::make_solution({{"entry.cpp", R"(#include <kernelarc/abi.h>
template <int N> int& calls() { static int count = 0; return count; }
// )" + tag + R"(
extern "C" int ka_run(const ka_tensor*, int, ka_tensor* out, int, void*, void*, size_t) {
  static_cast<float*>(out[0].data)[0] = static_cast<float>(++calls<7>());
  return 0;
})"}});
  };
  std::vector<void*> libraries;
  for (const std::string tag : {"first", "second"}) {
    CompileResult built =
        compile_cpu_solution(counting(tag), test::test_compile_options(cache.path()));
    ASSERT_TRUE(built.ok) << built.log;
    void* library = dlopen(built.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library, nullptr) << dlerror();
    libraries.push_back(library);
  }
  for (void* library : libraries) {
    auto run = reinterpret_cast<ka_run_fn>(dlsym(library, "ka_run"));
    ASSERT_NE(run, nullptr);
    float calls = 0;
    ka_tensor out{&calls, KA_FLOAT32, 0, {}, {}};
    ASSERT_EQ(run(nullptr, 0, &out, 1, nullptr, nullptr, 0), 0);
    EXPECT_EQ(calls, 1) << "the second library saw the first one's static";
  }
  for (void* library : libraries) dlclose(library);
}

TEST(CpuCompiler, ConcurrentBuildsOfOneKeyAgree) {
  TempDir cache;
  std::vector<CompileResult> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results)
    threads.emplace_back([&] {
      result = compile_cpu_solution(add_one(), test::test_compile_options(cache.path()));
    });
  for (auto& thread : threads) thread.join();
  for (const CompileResult& result : results) {
    ASSERT_TRUE(result.ok) << result.log;
    EXPECT_EQ(result.library, results[0].library);
  }
  EXPECT_EQ(count_entries(cache.path() / "cpu"), 1);
}

TEST(CpuCompiler, SourcePathMayNotEscape) {
  TempDir cache;
  EXPECT_THROW(compile_cpu_solution(test::make_solution({{"../evil.cpp", kAddOne}}),
                                    test::test_compile_options(cache.path())),
               InputError);
  EXPECT_THROW(compile_cpu_solution(test::make_solution({{"/tmp/evil.cpp", kAddOne}}),
                                    test::test_compile_options(cache.path())),
               InputError);
}

TEST(CpuCompiler, MissingCompilerIsAFailedBuild) {
  TempDir cache;
  CpuCompileOptions options = test::test_compile_options(cache.path());
  options.compiler = "kernelarc-no-such-compiler";
  CompileResult result = compile_cpu_solution(add_one(), options);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("not found"), std::string::npos);
}

TEST(CpuCompiler, HungCompilerIsKilled) {
  TempDir cache;
  std::filesystem::path fake = cache.path() / "slow-cc";
  {
    std::ofstream script(fake);
    script << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo slow-cc 1.0; exit 0; fi\nsleep 30\n";
  }
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  CpuCompileOptions options = test::test_compile_options(cache.path() / "cache");
  options.compiler = fake.string();
  options.timeout = std::chrono::seconds(1);
  CompileResult result = compile_cpu_solution(add_one(), options);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("did not finish within 1 s"), std::string::npos) << result.log;
}

TEST(CpuCompiler, DefaultCompilerFollowsCxx) {
  const char* saved = std::getenv("CXX");
  std::string previous = saved ? saved : "";
  setenv("CXX", "ccache g++", 1);
  EXPECT_EQ(default_cpu_compiler(), "ccache g++");
  EXPECT_EQ(CpuCompileOptions().compiler, "ccache g++");
  unsetenv("CXX");
  EXPECT_EQ(default_cpu_compiler(), "c++");
  if (saved) setenv("CXX", previous.c_str(), 1);
}

}  // namespace
}  // namespace kernelarc
