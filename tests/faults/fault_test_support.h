// What the fault injection tests share: a scratch folder per test, the kernelarc executable run
// as a child process (optionally under a file size limit, optionally killed from outside), and
// a snapshot of a run's stored evaluations to compare before and after a fault.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "source_dir.h"
#include "store/workspace.h"

namespace kernelarc::faults {

namespace fs = std::filesystem;
inline const fs::path kData = kSource / "tests/data";

inline std::string read_text(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

inline void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

/// How a kernelarc child ended and what it printed (stdout and stderr together).
struct Outcome {
  int exit_code = -1;  ///< -1 when it did not exit normally
  int signal = 0;      ///< the signal that ended it, 0 when it exited
  std::string output;
};

/// A kernelarc child process whose output goes to a file; killed and reaped when destroyed.
class Kernelarc {
 public:
  /// `file_size_limit` > 0 sets RLIMIT_FSIZE before exec, with SIGXFSZ ignored so that a write
  /// past it fails with EFBIG (what a full disk looks like to the writer) instead of killing it.
  Kernelarc(const std::vector<std::string>& arguments, fs::path log, rlim_t file_size_limit = 0)
      : log_(std::move(log)) {
    std::vector<std::string> argv{KERNELARC_BINARY};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    pid_ = fork();
    if (pid_ != 0) return;
    const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    if (file_size_limit > 0) {
      signal(SIGXFSZ, SIG_IGN);  // ignored dispositions survive exec
      const rlimit limit{file_size_limit, file_size_limit};
      if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(126);
    }
    std::vector<char*> pointers;
    for (auto& argument : argv) pointers.push_back(argument.data());
    pointers.push_back(nullptr);
    execv(pointers[0], pointers.data());
    _exit(127);
  }
  ~Kernelarc() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGKILL);
      wait();
    }
  }
  Kernelarc(const Kernelarc&) = delete;
  Kernelarc& operator=(const Kernelarc&) = delete;

  pid_t pid() const { return pid_; }

  /// Whether it is still running (reaps it when it has ended).
  bool running() {
    if (done_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == 0) return true;
    finish(status);
    return false;
  }

  Outcome wait() {
    if (!done_) {
      int status = 0;
      waitpid(pid_, &status, 0);
      finish(status);
    }
    return outcome_;
  }

  Outcome kill_now() {
    if (!done_) kill(pid_, SIGKILL);
    return wait();
  }

 private:
  void finish(int status) {
    done_ = true;
    outcome_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    outcome_.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    outcome_.output = read_text(log_);
  }

  fs::path log_;
  pid_t pid_ = -1;
  bool done_ = false;
  Outcome outcome_;
};

/// Runs kernelarc to the end.
inline Outcome run_kernelarc(const std::vector<std::string>& arguments, const fs::path& log,
                             rlim_t file_size_limit = 0) {
  return Kernelarc(arguments, log, file_size_limit).wait();
}

/// Polls `ready` every 50 ms while `child` runs, for at most `limit`; true once it held.
inline bool wait_until(Kernelarc& child, const std::function<bool()>& ready,
                       std::chrono::seconds limit = std::chrono::seconds(120)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline && child.running()) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

/// A stored evaluation, as compared across a fault.
struct StoredResult {
  std::string status;
  std::string traces_key;
  std::optional<double> median_ms;
  bool operator==(const StoredResult&) const = default;
};

/// Every finished evaluation of the workspace's only run, by candidate id.
inline std::map<int64_t, StoredResult> stored_evaluations(const fs::path& workspace) {
  std::map<int64_t, StoredResult> results;
  if (!fs::exists(workspace / "kernelarc.db")) return results;
  Workspace store(workspace);
  const auto runs = store.database().list_runs();
  if (runs.empty()) return results;
  for (const auto& candidate : store.database().candidates_of(runs.front().id)) {
    if (auto evaluation = store.database().evaluation_of(candidate.id))
      results[candidate.id] = {evaluation->status, evaluation->traces_key, evaluation->median_ms};
  }
  return results;
}

/// Evaluations the workspace's only run has spent (0 before it exists).
inline int64_t budget_used(const fs::path& workspace) {
  if (!fs::exists(workspace / "kernelarc.db")) return 0;
  Workspace store(workspace);
  const auto runs = store.database().list_runs();
  return runs.empty() ? 0 : store.database().budget_of(runs.front().id).used;
}

/// Every evaluation in `before` is still stored, with the same result.
inline void expect_kept(const std::map<int64_t, StoredResult>& before,
                        const std::map<int64_t, StoredResult>& after) {
  for (const auto& [id, result] : before) {
    auto found = after.find(id);
    ASSERT_NE(found, after.end()) << "candidate " << id << " lost its evaluation";
    EXPECT_EQ(found->second, result) << "candidate " << id << " changed its result";
  }
}

/// An oracle cache holding every entry the tests' RMSNorm runs read (one trial besides the
/// first, as --trials 1 asks), generated once per test process: copying it into a workspace
/// spares each test the reference runs.
inline const fs::path& warm_oracle() {
  struct Folder {
    fs::path path =
        fs::temp_directory_path() / ("kernelarc-faults-" + std::to_string(getpid()) + "-oracle");
    ~Folder() { fs::remove_all(path); }
  };
  static const Folder folder;
  static const bool warmed = [] {
    fs::create_directories(folder.path);
    const Outcome outcome = run_kernelarc(
        {"eval", (kSource / "problems/cpu/rmsnorm_f32").string(),
         (kSource / "problems/cpu/rmsnorm_f32/solutions/naive").string(), "--workspace",
         (folder.path / "ws").string(), "--trials", "1", "--iterations", "3", "--no-baseline"},
        folder.path / "warm.log");
    if (outcome.exit_code != 0) ADD_FAILURE() << "warming the oracle cache:\n" << outcome.output;
    return outcome.exit_code == 0;
  }();
  (void)warmed;
  static const fs::path oracle = folder.path / "ws/oracle";
  return oracle;
}

/// Gives `workspace` a copy of the warm oracle cache.
inline void seed_oracle(const fs::path& workspace) {
  fs::create_directories(workspace);
  fs::copy(warm_oracle(), workspace / "oracle", fs::copy_options::recursive);
}

/// A scratch folder per test, removed afterwards.
class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');  // parameterized names hold a '/'
    dir_ =
        fs::temp_directory_path() / ("kernelarc-faults-" + std::to_string(getpid()) + "-" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path log(const std::string& name) const { return dir_ / (name + ".log"); }

  fs::path dir_;
};

}  // namespace kernelarc::faults
