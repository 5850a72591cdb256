// The environment of processes that run candidate code is an allowlist: a key in a variable
// with an innocent name (LLM_AUTH) never reaches a kernel, which is checked with a real worker
// running a candidate that reads the variable and reports it as its error.
#include "backend/child_environment.h"

#include <gtest/gtest.h>

#include "backend/worker/worker.h"
#include "backend/worker/worker_sandbox.h"
#include "backend_test_util.h"

namespace kernelarc {
namespace {

TEST(ChildEnvironment, OnlyAllowlistedVariablesPass) {
  const std::vector<std::string> passed =
      passed_variables({"PATH=/usr/bin", "LLM_AUTH=sk-1", "HOME=/root", "OMP_NUM_THREADS=4",
                        "CUDA_VISIBLE_DEVICES=0", "LC_ALL=C", "MY_SERVICE_PASS=x", "AUTH=y",
                        "KERNELARC_DATA_DIR=/d", "NOEQUALS"});
  EXPECT_EQ(passed, (std::vector<std::string>{"PATH=/usr/bin", "OMP_NUM_THREADS=4",
                                              "CUDA_VISIBLE_DEVICES=0", "LC_ALL=C",
                                              "KERNELARC_DATA_DIR=/d"}));
}

const char* kLeaker = R"(#include <kernelarc/abi.h>
#include <cstdlib>
static const char* seen = "unset";
extern "C" const char* ka_last_error(void) { return seen; }
extern "C" int leak(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
  const char* value = std::getenv("LLM_AUTH");
  if (value) seen = value;
  return 1;
}
)";

TEST(ChildEnvironment, AKeyInAnInnocentNamedVariableNeverReachesAKernel) {
  test::TempDir cache;
  const CompileResult built = compile_cpu_solution(test::make_solution({{"leak.cpp", kLeaker}}),
                                                   test::test_compile_options(cache.path()));
  ASSERT_TRUE(built.ok) << built.log;
  ::setenv("LLM_AUTH", "sk-innocent-name-4a1c", 1);
  ExecuteResult result;
  {
    WorkerOptions options;
    options.executable = KERNELARC_BINARY;
    options.call_timeout = std::chrono::seconds(5);
    Worker worker(options);
    ASSERT_EQ(worker.load(built.library, "leak").outcome, CallOutcome::Ok);
    ExecuteRequest request;
    request.flush_cache = false;
    worker.arena(64);
    result = worker.execute(request);
  }
  ::unsetenv("LLM_AUTH");
  EXPECT_EQ(result.message.find("sk-innocent-name-4a1c"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("unset"), std::string::npos) << result.message;
  for (const std::string& entry : environment_without_secrets())
    EXPECT_FALSE(entry.starts_with("LLM_AUTH=")) << entry;
}

}  // namespace
}  // namespace kernelarc
