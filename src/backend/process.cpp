#include "backend/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace kernelarc {
namespace {

// Everything the child needs, built before fork: after fork in a multithreaded parent only
// async-signal-safe calls are allowed, so the child must not allocate.
struct PreparedSpawn {
  std::vector<char*> argv;
  std::vector<char*> environment;  ///< empty = the parent's
  std::vector<std::pair<int, int>> fds;
  int stdout_fd = -1;
  std::string working_directory;
  bool new_process_group = true;
  bool die_with_parent = false;
  rlim_t address_space_limit = 0;
  rlim_t file_size_limit = 0;
  cpu_set_t cpus;
  bool pin_cpus = false;
  std::string exec_error;  ///< written when exec fails
  pid_t parent = 0;
  const SandboxOptions* sandbox = nullptr;
};

// Entered after fork, before exec. It allocates, which glibc's fork makes safe (its malloc
// locks are reset in the child); it is used for compilers, forked from any thread.
void enter_child_sandbox(const SandboxOptions& options) {
  const SandboxStatus status = enter_worker_sandbox(options);
  if (status.landlock_abi > 0 && status.seccomp) return;
  const std::string reason = "kernelarc: the build sandbox could not be entered, so the " +
                             std::string("compiler was not run: ") +
                             (status.landlock_abi == 0 ? "Landlock: " + status.landlock_note
                                                       : "seccomp: " + status.seccomp_note) +
                             "\n";
  [[maybe_unused]] ssize_t ignored = write(2, reason.data(), reason.size());
  _exit(126);
}

void write_errno(int fd, int error) {
  char digits[16];
  int length = 0;
  do {
    digits[sizeof digits - 1 - length++] = static_cast<char>('0' + error % 10);
    error /= 10;
  } while (error > 0 && length < 15);
  digits[sizeof digits - 1 - length] = ' ';
  [[maybe_unused]] ssize_t ignored = write(fd, digits + sizeof digits - 1 - length, length + 1);
}

[[noreturn]] void child_after_fork(const PreparedSpawn& spawn) {
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  if (spawn.new_process_group) setpgid(0, 0);
  if (spawn.die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != spawn.parent) _exit(127);  // the parent died before prctl
  }
  if (spawn.pin_cpus && sched_setaffinity(0, sizeof spawn.cpus, &spawn.cpus) != 0) {
    static constexpr char kPinError[] = "kernelarc: cannot pin the child to its cores: errno";
    [[maybe_unused]] ssize_t ignored = write(2, kPinError, sizeof kPinError - 1);
    write_errno(2, errno);
    _exit(127);
  }
  if (spawn.address_space_limit > 0) {
    rlimit limit{spawn.address_space_limit, spawn.address_space_limit};
    setrlimit(RLIMIT_AS, &limit);
  }
  if (spawn.file_size_limit > 0) {
    rlimit limit{spawn.file_size_limit, spawn.file_size_limit};
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd >= 0) dup2(null_fd, 0);
  // Move every source fd out of the way first, so that mapping 3->4 and 4->3 cannot clobber.
  constexpr int kHighFd = 100;
  int moved_stdout = spawn.stdout_fd >= 0 ? fcntl(spawn.stdout_fd, F_DUPFD_CLOEXEC, kHighFd) : -1;
  int moved[16];
  std::size_t count = spawn.fds.size() < 16 ? spawn.fds.size() : 16;
  for (std::size_t i = 0; i < count; ++i)
    moved[i] = fcntl(spawn.fds[i].second, F_DUPFD_CLOEXEC, kHighFd);
  if (moved_stdout >= 0) {
    dup2(moved_stdout, 1);
    dup2(moved_stdout, 2);
  }
  for (std::size_t i = 0; i < count; ++i) dup2(moved[i], spawn.fds[i].first);
  if (spawn.working_directory.empty() || chdir(spawn.working_directory.c_str()) == 0) {
    if (spawn.sandbox != nullptr) enter_child_sandbox(*spawn.sandbox);
    if (spawn.environment.empty())
      execv(spawn.argv[0], spawn.argv.data());
    else
      execve(spawn.argv[0], spawn.argv.data(), spawn.environment.data());
  }
  int error = errno;
  [[maybe_unused]] ssize_t ignored = write(2, spawn.exec_error.data(), spawn.exec_error.size());
  write_errno(2, error);
  ignored = write(2, "\n", 1);
  _exit(127);
}

pid_t fork_child(const PreparedSpawn& spawn, int& error) {
  pid_t pid = fork();
  if (pid == 0) child_after_fork(spawn);
  error = errno;
  return pid;
}

// PR_SET_PDEATHSIG fires when the thread that forked exits, not the process. Children that
// must die with the parent are therefore forked from this thread, which lives until exit.
class LauncherThread {
 public:
  LauncherThread() {
    std::thread([this] { serve(); }).detach();
  }

  pid_t fork(const PreparedSpawn& spawn, int& error) {
    Job job{&spawn};
    std::unique_lock lock(mutex_);
    jobs_.push_back(&job);
    changed_.notify_all();
    changed_.wait(lock, [&] { return job.done; });
    error = job.error;
    return job.pid;
  }

 private:
  struct Job {
    const PreparedSpawn* spawn;
    pid_t pid = -1;
    int error = 0;
    bool done = false;
  };

  [[noreturn]] void serve() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return !jobs_.empty(); });
      Job* job = jobs_.front();
      jobs_.pop_front();
      job->pid = fork_child(*job->spawn, job->error);
      job->done = true;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job*> jobs_;
};

}  // namespace

pid_t spawn_process(const SpawnOptions& options) {
  if (options.argv.empty()) throw InternalError("spawn_process: empty argv");
  if (options.fds.size() > 16) throw InternalError("spawn_process: more than 16 fds to map");
  std::vector<std::string> argv_storage = options.argv;
  PreparedSpawn spawn;
  for (std::string& arg : argv_storage) spawn.argv.push_back(arg.data());
  spawn.argv.push_back(nullptr);
  std::vector<std::string> environment_storage =
      options.environment.value_or(std::vector<std::string>{});
  if (options.environment) {
    for (std::string& entry : environment_storage) spawn.environment.push_back(entry.data());
    spawn.environment.push_back(nullptr);
  }
  spawn.fds = options.fds;
  spawn.stdout_fd = options.stdout_fd;
  spawn.working_directory = options.working_directory.string();
  spawn.new_process_group = options.new_process_group;
  spawn.die_with_parent = options.die_with_parent;
  spawn.address_space_limit = options.address_space_limit;
  spawn.file_size_limit = options.file_size_limit;
  CPU_ZERO(&spawn.cpus);
  for (int cpu : options.cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE)
      throw InternalError("spawn_process: no CPU " + std::to_string(cpu));
    CPU_SET(cpu, &spawn.cpus);
  }
  spawn.pin_cpus = !options.cpus.empty();
  spawn.exec_error = "kernelarc: cannot execute " + options.argv[0] + ": errno ";
  spawn.parent = getpid();
  if (options.sandbox) spawn.sandbox = &*options.sandbox;

  int error = 0;
  pid_t pid;
  if (options.die_with_parent) {
    static auto* launcher = new LauncherThread();  // never destroyed: its thread never ends
    pid = launcher->fork(spawn, error);
  } else {
    pid = fork_child(spawn, error);
  }
  if (pid < 0)
    throw InternalError("fork failed for " + options.argv[0] + ": " + std::strerror(error));
  return pid;
}

ExitStatus reap_process(pid_t pid) {
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) throw InternalError(std::string("waitpid failed: ") + std::strerror(errno));
  }
  ExitStatus result;
  result.signaled = WIFSIGNALED(status);
  result.signal = result.signaled ? WTERMSIG(status) : 0;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  result.max_rss_kib = usage.ru_maxrss;
  return result;
}

bool wait_exited(pid_t pid, std::chrono::milliseconds grace) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid != 0)
      return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10'000));
  }
}

void kill_process_group(pid_t pid) {
  if (pid > 0) kill(-pid, SIGKILL);
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::filesystem::path& working_directory,
                          const std::optional<std::vector<std::string>>& environment,
                          const std::optional<SandboxOptions>& sandbox) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw InternalError(std::string("pipe2 failed: ") + std::strerror(errno));
  SpawnOptions options;
  options.argv = argv;
  options.stdout_fd = pipe_fds[1];
  options.working_directory = working_directory;
  options.environment = environment;
  options.sandbox = sandbox;
  pid_t pid;
  try {
    pid = spawn_process(options);
  } catch (...) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    throw;
  }
  close(pipe_fds[1]);

  // Output beyond this is dropped: a compiler flooding errors needs only its first lines read.
  constexpr std::size_t kMaxOutput = std::size_t{4} << 20;
  CommandResult result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 && !result.timed_out) {
      result.timed_out = true;
      kill_process_group(pid);
    }
    pollfd poll_fd{pipe_fds[0], POLLIN, 0};
    int ready = poll(&poll_fd, 1, result.timed_out ? 1000 : static_cast<int>(left.count()) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (result.timed_out) break;  // a killed child's descendants still hold the pipe
      continue;
    }
    ssize_t got = read(pipe_fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (result.output.size() < kMaxOutput)
      result.output.append(buffer, static_cast<std::size_t>(got));
  }
  close(pipe_fds[0]);
  result.status = reap_process(pid);
  result.status.killed_by_parent = result.timed_out;
  return result;
}

std::optional<std::string> find_executable(const std::string& name) {
  auto executable = [](const std::string& path) { return access(path.c_str(), X_OK) == 0; };
  if (name.find('/') != std::string::npos) {
    if (!executable(name)) return std::nullopt;
    return std::filesystem::absolute(name).string();
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (executable(candidate)) return candidate;
  }
  return std::nullopt;
}

}  // namespace kernelarc
