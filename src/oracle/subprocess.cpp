#include "oracle/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

extern char** environ;

namespace kernelarc {

namespace {

// Owns a posix_spawn file-actions / attribute object for the duration of one spawn.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::filesystem::path& log_path,
                          const std::function<bool()>& keep_going) {
  ProcessResult result;
  SpawnSetup setup;
  // posix_spawn, not fork: the caller may be multithreaded, and spawn also reports exec failures.
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&setup.actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&setup.actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&setup.attributes, 0);

  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  pid_t pid = 0;
  int error = posix_spawnp(&pid, args[0], &setup.actions, &setup.attributes, args.data(), environ);
  if (error != 0) {
    result.spawn_error = std::strerror(error);
    return result;
  }
  result.started = true;

  auto poll = std::chrono::milliseconds(2);
  int status = 0;
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    if (!result.stopped && !keep_going()) {
      kill(-pid, SIGKILL);
      result.stopped = true;
    }
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::milliseconds(50));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

std::string file_tail(const std::filesystem::path& path, std::size_t max_bytes) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return "";
  file.seekg(0, std::ios::end);
  auto size = static_cast<std::size_t>(file.tellg());
  std::size_t start = size > max_bytes ? size - max_bytes : 0;
  file.seekg(static_cast<std::streamoff>(start));
  std::string text(size - start, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (start > 0) {
    auto newline = text.find('\n');
    if (newline != std::string::npos) text.erase(0, newline + 1);
  }
  auto last = text.find_last_not_of(" \n\r\t");
  text.erase(last == std::string::npos ? 0 : last + 1);
  return text;
}

}  // namespace kernelarc
