// The kept oracle interpreter (OracleServer), driven by a shell script that speaks its protocol,
// and the oracle cache's size bound.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "oracle/oracle_cache_bound.h"
#include "oracle/oracle_server.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

// Reads a job file's path per line on fd 3; a job file holds a command for the script:
// "ok" (answer 0), "code N", "die" (killed by SIGKILL) or "hang". It logs its pid and the
// command, so a test can tell one interpreter from several.
constexpr const char* kFakeOracle = R"(
while read -r job <&3; do
  command=$(cat "$job")
  echo "pid $$ ran $command"
  case "$command" in
    ok) echo 0 >&3 ;;
    code*) echo "${command#code }" >&3 ;;
    die) kill -9 $$ ;;
    hang) sleep 60 ;;
  esac
done
)";

class OracleServerTest : public ::testing::Test {
 protected:
  std::filesystem::path job(const std::string& command) {
    return temp_.write("job-" + std::to_string(++jobs_), command);
  }
  OracleServer start() {
    return OracleServer("/bin/sh", temp_.write("fake_oracle.sh", kFakeOracle), temp_ / "logs",
                        {"PATH=/usr/bin:/bin"});
  }
  static bool always() { return true; }

  TempDir temp_;
  int jobs_ = 0;
};

TEST_F(OracleServerTest, OneInterpreterRunsJobFilesOneAfterAnother) {
  OracleServer server = start();
  const ProcessResult first = server.run(job("ok"), always);
  EXPECT_TRUE(first.started);
  EXPECT_EQ(first.status.exit_code, 0);
  const std::string first_output = server.last_output();
  const ProcessResult second = server.run(job("ok"), always);
  EXPECT_EQ(second.status.exit_code, 0);
  EXPECT_TRUE(server.alive());
  // Each run's output is its own, and both came from the same process.
  const std::string second_output = server.last_output();
  ASSERT_EQ(first_output.rfind("pid ", 0), 0u) << first_output;
  EXPECT_EQ(first_output.find('\n'), std::string::npos) << first_output;
  EXPECT_EQ(first_output, second_output);
  // Its log file is unlinked: nothing is left in the directory it was made in.
  EXPECT_TRUE(std::filesystem::is_empty(temp_ / "logs"));
}

TEST_F(OracleServerTest, ANonZeroCodeIsTheProcesssExitAndEndsIt) {
  OracleServer server = start();
  const ProcessResult result = server.run(job("code 3"), always);
  EXPECT_EQ(result.status.exit_code, 3);
  EXPECT_FALSE(result.stopped);
  EXPECT_FALSE(server.alive());
}

TEST_F(OracleServerTest, AnInterpreterKilledMidJobIsReportedBySignal) {
  OracleServer server = start();
  ASSERT_EQ(server.run(job("ok"), always).status.exit_code, 0);
  const ProcessResult result = server.run(job("die"), always);
  EXPECT_TRUE(result.started);
  EXPECT_EQ(result.status.signal, 9);
  EXPECT_FALSE(server.alive());
  EXPECT_NE(server.last_output().find("ran die"), std::string::npos) << server.last_output();
}

TEST_F(OracleServerTest, TheWatchdogStopsAStalledJob) {
  OracleServer server = start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  const auto started = std::chrono::steady_clock::now();
  const ProcessResult result =
      server.run(job("hang"), [&] { return std::chrono::steady_clock::now() < deadline; });
  EXPECT_TRUE(result.stopped);
  EXPECT_FALSE(server.alive());
  // Killed with its process group (the sleep too), not waited for.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST_F(OracleServerTest, AMissingInterpreterIsNotStarted) {
  OracleServer server("/no/such/python", temp_ / "script.py", temp_ / "logs", {});
  const ProcessResult result = server.run(job("ok"), always);
  EXPECT_FALSE(result.started);
  EXPECT_NE(result.spawn_error.find("/no/such/python"), std::string::npos) << result.spawn_error;
}

/// A problem directory of `megabytes` MB, last used `age` ago.
void make_problem_dir(const std::filesystem::path& dir, int megabytes, std::chrono::seconds age) {
  mark_oracle_cache_used(dir);
  std::ofstream(dir / "entry.safetensors", std::ios::binary)
      << std::string(static_cast<std::size_t>(megabytes) << 20, 'x');
  std::filesystem::last_write_time(dir / ".used",
                                   std::filesystem::file_time_type::clock::now() - age);
}

TEST(OracleCacheBound, DropsOtherProblemsLeastRecentlyUsedFirst) {
  TempDir cache;
  make_problem_dir(cache / "oldest", 3, std::chrono::hours(3));
  make_problem_dir(cache / "older", 3, std::chrono::hours(2));
  make_problem_dir(cache / "recent", 3, std::chrono::hours(1));
  make_problem_dir(cache / "current", 3, std::chrono::hours(4));  // the one being prepared
  std::filesystem::create_directories(cache / ".scratch");
  cache.write(".scratch/job.json", std::string(8 << 20, 'j'));

  // 12 MB of draws (scratch not counted) within 7 MB: two others must go, oldest first.
  const auto removed = bound_oracle_cache(cache.path(), cache / "current", 7 << 20);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_EQ(removed[0].filename(), "oldest");
  EXPECT_EQ(removed[1].filename(), "older");
  EXPECT_TRUE(std::filesystem::exists(cache / "recent"));
  EXPECT_TRUE(std::filesystem::exists(cache / "current"));
  EXPECT_TRUE(std::filesystem::exists(cache / ".scratch/job.json"));

  // The problem being prepared stays even when it alone is over the bound.
  const auto again = bound_oracle_cache(cache.path(), cache / "current", 1 << 20);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].filename(), "recent");
  EXPECT_TRUE(std::filesystem::exists(cache / "current/entry.safetensors"));
}

TEST(OracleCacheBound, TheDefaultIsAQuarterOfTheFileSystemAndAtLeastFourGiB) {
  TempDir cache;
  const auto space = std::filesystem::space(cache.path());
  const std::uintmax_t bound = default_oracle_cache_bytes(cache / "not/made/yet");
  EXPECT_EQ(bound, std::max<std::uintmax_t>(std::uintmax_t{4} << 30, space.capacity / 4));
}

}  // namespace
}  // namespace kernelarc
