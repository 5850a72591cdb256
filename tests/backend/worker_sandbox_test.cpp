// The worker's sandbox: what a candidate may not do (start processes or programs, read the
// protected workspace or the parent's memory, write outside its scratch directory, signal other
// processes, open network sockets, see the parent's secrets) and what must keep working
// (threads, OpenMP, reading system files and its own build directory).
#include "backend/worker/worker_sandbox.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>

#include "backend/worker/worker.h"
#include "worker_probe.h"

namespace kernelarc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class WorkerSandboxTest : public ::testing::Test {
 protected:
  /// Skips the test where the worker runs without Landlock, naming the reason.
  void require_landlock(Worker& worker) {
    nlohmann::json status = worker.sandbox_status();
    if (status.value("landlock_abi", 0) == 0)
      GTEST_SKIP() << "the worker runs without Landlock: "
                   << status.value("landlock_note", std::string("no reason given"));
  }

  test::ProbeWorkspace workspace;
};

TEST_F(WorkerSandboxTest, HelloReportsTheSandbox) {
  Worker worker(workspace.options());
  EXPECT_TRUE(worker.sandbox_status().is_null());  // no worker has started yet
  ASSERT_EQ(test::load_and_call(worker, workspace.build_run("note(\"called\", true);")).outcome,
            CallOutcome::Failed);
  nlohmann::json status = worker.sandbox_status();
  EXPECT_EQ(status.value("seccomp", false), true) << status.dump();
  EXPECT_TRUE(status.contains("landlock_abi")) << status.dump();
  EXPECT_TRUE(status.value("landlock_abi", 0) > 0 || status.contains("landlock_note"));
}

TEST_F(WorkerSandboxTest, ForkKillsTheWorker) {
  Worker worker(workspace.options());
  ExecuteResult result = test::load_and_call(
      worker, workspace.build_run("pid_t child = fork(); if (child == 0) _exit(0);"
                                  "note(\"fork\", child > 0);"));
  EXPECT_EQ(result.outcome, CallOutcome::Crashed) << result.message;
  EXPECT_THAT(result.message, HasSubstr("SIGSYS"));
  EXPECT_THAT(result.message, HasSubstr("forbidden system call"));
  // The next candidate gets a fresh worker.
  result = test::load_and_call(worker, workspace.build_run("note(\"after\", true);"));
  EXPECT_EQ(result.message, "after=ok;");
}

TEST_F(WorkerSandboxTest, ExecveAndSystemKillTheWorker) {
  Worker worker(workspace.options());
  ExecuteResult result = test::load_and_call(
      worker, workspace.build_run("char* argv[] = {(char*)\"/bin/true\", nullptr};"
                                  "execv(\"/bin/true\", argv); note(\"execv\", false);"));
  EXPECT_EQ(result.outcome, CallOutcome::Crashed) << result.message;
  EXPECT_THAT(result.message, HasSubstr("forbidden system call"));
  result =
      test::load_and_call(worker, workspace.build_run("note(\"system\", system(\"true\") == 0);"));
  EXPECT_EQ(result.outcome, CallOutcome::Crashed) << result.message;
  EXPECT_THAT(result.message, HasSubstr("forbidden system call"));
}

TEST_F(WorkerSandboxTest, ThreadsAndOpenMPStillWork) {
  Worker worker(workspace.options());
  const std::string body = R"(
    int sum = 0;
    std::thread adder([&] { sum += 20; });
    adder.join();
    int team = 0;
    #pragma omp parallel num_threads(3)
    {
      #pragma omp atomic
      team += 1;
    }
    report = "thread=" + std::to_string(sum) + ";team=" + std::to_string(team) + ";";
  )";
  ExecuteResult result = test::load_and_call(worker, workspace.build_run(body, {"-fopenmp"}));
  EXPECT_EQ(result.outcome, CallOutcome::Failed) << result.message;
  EXPECT_EQ(result.message, "thread=20;team=3;");
  EXPECT_GE(result.threads_after, 3);
}

TEST_F(WorkerSandboxTest, ProtectedDirectoryIsNeitherReadableNorWritable) {
  std::filesystem::create_directories(workspace.root() / "oracle");
  std::ofstream(workspace.root() / "oracle" / "expected.bin") << "the answers";
  std::ofstream(workspace.root().parent_path() / "sibling.txt") << "another workspace's";
  const std::string protected_dir = workspace.root().string();
  const std::string body = R"(
    note("read_expected", open(")" +
                           protected_dir + R"(/oracle/expected.bin", O_RDONLY) >= 0);
    note("list_workspace", open(")" +
                           protected_dir + R"(", O_RDONLY | O_DIRECTORY) >= 0);
    note("write_workspace", open(")" +
                           protected_dir + R"(/planted", O_WRONLY | O_CREAT, 0600) >= 0);
    note("read_usr", open("/usr/include/stdio.h", O_RDONLY) >= 0);
    note("read_sibling", open(")" +
                           (workspace.root().parent_path() / "sibling.txt").string() +
                           R"(", O_RDONLY) >= 0);
    Dl_info self{};
    dladdr((void*)&note, &self);
    note("read_own_library", open(self.dli_fname, O_RDONLY) >= 0);
    std::string scratch = std::string(getenv("TMPDIR")) + "/scratch_file";
    note("write_tmpdir", open(scratch.c_str(), O_WRONLY | O_CREAT, 0600) >= 0);
    note("write_tmp", open("/tmp/kernelarc_sandbox_probe", O_WRONLY | O_CREAT, 0600) >= 0);
    note("write_dev_null", open("/dev/null", O_WRONLY) >= 0);
  )";
  Worker worker(workspace.options());
  ExecuteResult result = test::load_and_call(worker, workspace.build_run(body));
  require_landlock(worker);
  EXPECT_EQ(result.outcome, CallOutcome::Failed) << result.message;
  EXPECT_EQ(result.message,
            "read_expected=Permission denied;list_workspace=Permission denied;"
            "write_workspace=Permission denied;read_usr=ok;read_sibling=Permission denied;"
            "read_own_library=ok;"
            "write_tmpdir=ok;write_tmp=Permission denied;write_dev_null=ok;");
  EXPECT_FALSE(std::filesystem::exists(workspace.root() / "planted"));
  EXPECT_FALSE(std::filesystem::exists("/tmp/kernelarc_sandbox_probe"));
}

TEST_F(WorkerSandboxTest, TheParentsMemoryAndEnvironmentAreOutOfReach) {
  const std::string body = R"(
    std::string parent = "/proc/" + std::to_string(getppid());
    note("parent_mem", open((parent + "/mem").c_str(), O_RDONLY) >= 0);
    char byte;
    int environ_fd = open((parent + "/environ").c_str(), O_RDONLY);
    note("parent_environ", environ_fd >= 0 && read(environ_fd, &byte, 1) == 1);
    note("init_environ", open("/proc/1/environ", O_RDONLY) >= 0);
    note("parent_fd", open((parent + "/fd/0").c_str(), O_RDONLY) >= 0);
    note("own_status", open("/proc/self/status", O_RDONLY) >= 0);
  )";
  Worker worker(workspace.options());
  ExecuteResult result = test::load_and_call(worker, workspace.build_run(body));
  require_landlock(worker);
  EXPECT_EQ(result.message,
            "parent_mem=Permission denied;parent_environ=Permission denied;"
            "init_environ=Permission denied;parent_fd=Permission denied;own_status=ok;");
}

TEST_F(WorkerSandboxTest, SignalsAndSocketsReachOnlyTheWorker) {
  const std::string body = R"(
    note("kill_parent", kill(getppid(), 0) == 0);
    note("kill_all", kill(-1, 0) == 0);
    note("kill_self", kill(getpid(), 0) == 0);
    note("inet_socket", socket(AF_INET, SOCK_STREAM, 0) >= 0);
    note("unix_socket", socket(AF_UNIX, SOCK_STREAM, 0) >= 0);
  )";
  Worker worker(workspace.options());
  ExecuteResult result = test::load_and_call(worker, workspace.build_run(body));
  EXPECT_EQ(result.message,
            "kill_parent=Operation not permitted;kill_all=Operation not permitted;"
            "kill_self=ok;inet_socket=Operation not permitted;unix_socket=ok;");
}

TEST_F(WorkerSandboxTest, SecretsStayOutOfTheWorkersEnvironment) {
  setenv("KERNELARC_TEST_API_KEY", "sk-not-for-candidates", 1);
  setenv("kernelarc_test_session_token", "not-either", 1);
  setenv("OMP_KERNELARC_TEST_PLAIN", "visible", 1);
  const std::string body = R"(
    note("api_key_absent", getenv("KERNELARC_TEST_API_KEY") == nullptr);
    note("token_absent", getenv("kernelarc_test_session_token") == nullptr);
    const char* plain = getenv("OMP_KERNELARC_TEST_PLAIN");
    note("plain_present", plain && std::string(plain) == "visible");
  )";
  Worker worker(workspace.options());
  ExecuteResult result = test::load_and_call(worker, workspace.build_run(body));
  unsetenv("KERNELARC_TEST_API_KEY");
  unsetenv("kernelarc_test_session_token");
  unsetenv("OMP_KERNELARC_TEST_PLAIN");
  EXPECT_EQ(result.message, "api_key_absent=ok;token_absent=ok;plain_present=ok;");
}

TEST(WorkerSandboxRules, ReadableRootsLeaveOutOnlyTheProtectedDirectory) {
  kernelarc::testing::TempDir dir;
  namespace fs = std::filesystem;
  fs::create_directories(dir / "workspace/build/cpu");
  fs::create_directories(dir / "workspace/oracle");
  fs::create_directories(dir / "sibling");
  std::ofstream(dir / "file.txt") << "x";
  fs::create_directory_symlink(dir / "workspace", dir / "link_to_workspace");
  std::vector<fs::path> roots =
      readable_roots({dir / "workspace"}, {dir / "workspace/build", dir / "workspace/missing"});
  auto has = [&](const fs::path& path) {
    return std::find(roots.begin(), roots.end(), path) != roots.end();
  };
  fs::path base = fs::weakly_canonical(dir.path());
  EXPECT_TRUE(has(base / "sibling"));
  EXPECT_TRUE(has(base / "file.txt"));
  EXPECT_TRUE(has(base / "workspace/build"));
  EXPECT_TRUE(has("/usr"));
  EXPECT_FALSE(has(base / "workspace"));
  EXPECT_FALSE(has(base / "workspace/oracle"));
  EXPECT_FALSE(has(base / "workspace/missing"));
  EXPECT_FALSE(has(base / "link_to_workspace"));
  EXPECT_FALSE(has(base));
  for (const fs::path& root : roots) EXPECT_NE(root, fs::path("/")) << root;
}

// With a workspace to protect, reads are an allowlist: system directories, the loaded
// libraries' directories and the build cache, never a sibling of the workspace, /tmp or /home
// (issue 24, class 9: another workspace's oracle cache was readable).
TEST(WorkerSandboxRules, AllowedReadRootsAreAnAllowlist) {
  namespace fs = std::filesystem;
  kernelarc::testing::TempDir dir;
  fs::create_directories(dir / "workspace/build");
  fs::create_directories(dir / "other_workspace/oracle");
  const std::vector<fs::path> roots =
      allowed_read_roots({dir / "workspace"}, {dir / "workspace/build"});
  auto has = [&](const fs::path& path) {
    return std::find(roots.begin(), roots.end(), path) != roots.end();
  };
  const fs::path base = fs::weakly_canonical(dir.path());
  EXPECT_TRUE(has("/usr"));
  EXPECT_TRUE(has(base / "workspace/build"));
  for (const fs::path& root : roots) {
    EXPECT_NE(root, fs::path("/")) << root;
    EXPECT_NE(root, fs::path("/tmp")) << root;
    EXPECT_FALSE(root.string().rfind((base / "other_workspace").string(), 0) == 0) << root;
    EXPECT_FALSE(root == base || root == base / "workspace") << root;
  }
}

TEST(WorkerSandboxRules, NothingProtectedLeavesEverythingReadable) {
  EXPECT_EQ(readable_roots({}, {}), std::vector<std::filesystem::path>{"/"});
}

TEST(WorkerSandboxRules, SecretVariablesAreRecognizedByName) {
  EXPECT_TRUE(is_secret_variable("OPENAI_API_KEY"));
  EXPECT_TRUE(is_secret_variable("anthropic_api_key"));
  EXPECT_TRUE(is_secret_variable("HF_TOKEN"));
  EXPECT_TRUE(is_secret_variable("AWS_SECRET_ACCESS_KEY"));
  EXPECT_TRUE(is_secret_variable("DB_PASSWORD"));
  EXPECT_TRUE(is_secret_variable("GOOGLE_APPLICATION_CREDENTIALS"));
  EXPECT_FALSE(is_secret_variable("PATH"));
  EXPECT_FALSE(is_secret_variable("OMP_NUM_THREADS"));
  EXPECT_FALSE(is_secret_variable("CUDA_VISIBLE_DEVICES"));
}

}  // namespace
}  // namespace kernelarc
