// A worker given cores runs its candidate there and nowhere else: the candidate reports the
// cores it may run on through its error message, from inside the sandboxed worker. This is what
// keeps two CPU workers of one search off each other's cores.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/device_list.h"
#include "backend/worker/worker.h"
#include "backend_test_util.h"

namespace kernelarc {
namespace {

const char* kAffinityReporter = R"(#include <kernelarc/abi.h>
#include <sched.h>
#include <string>
static std::string seen = "unknown";
extern "C" const char* ka_last_error(void) { return seen.c_str(); }
extern "C" int report(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  seen = "cores:";
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) seen += " " + std::to_string(cpu);
  return 1;
}
)";

/// The cores the candidate reported, as "cores: 0 3" (its error message holds more).
std::string cores_seen_by_candidate(const std::vector<int>& cpus) {
  test::TempDir cache;
  const CompileResult built =
      compile_cpu_solution(test::make_solution({{"report.cpp", kAffinityReporter}}),
                           test::test_compile_options(cache.path()));
  EXPECT_TRUE(built.ok) << built.log;
  WorkerOptions options;
  options.executable = KERNELARC_BINARY;
  options.call_timeout = std::chrono::seconds(5);
  options.cpus = cpus;
  Worker worker(options);
  EXPECT_EQ(worker.load(built.library, "report").outcome, CallOutcome::Ok);
  ExecuteRequest request;
  request.flush_cache = false;
  worker.arena(64);
  const std::string message = worker.execute(request).message;
  const std::size_t at = message.find("cores:");
  if (at == std::string::npos) return message;
  std::string reported =
      message.substr(at, message.find_first_not_of("cores:0123456789 ", at) - at);
  while (reported.ends_with(' ')) reported.pop_back();
  return reported;
}

std::string cores_text(const std::vector<int>& cpus) {
  std::string text = "cores:";
  for (int cpu : cpus) text += " " + std::to_string(cpu);
  return text;
}

TEST(WorkerPinning, TheCandidateRunsOnlyOnTheWorkersCores) {
  const std::vector<int> usable = usable_cpus();
  const std::vector<int> last{usable.back()};
  EXPECT_EQ(cores_seen_by_candidate(last), cores_text(last));
}

TEST(WorkerPinning, AWorkerWithoutCoresRunsOnAllOfThisProcesss) {
  EXPECT_EQ(cores_seen_by_candidate({}), cores_text(usable_cpus()));
}

}  // namespace
}  // namespace kernelarc
