// Child processes for the backend: the host compiler (run to completion with a timeout) and the
// worker (started and supervised by the Worker class). fork+exec, never system(): arguments are
// passed verbatim, and the child is set up (process group, fds, limits) before exec.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/exit_status.h"
#include "backend/worker/worker_sandbox.h"

namespace kernelarc {

/// How to start a child process.
struct SpawnOptions {
  std::vector<std::string> argv;  ///< argv[0] is the executable's path (no PATH search)
  /// (child fd, parent fd) pairs: the parent fd is duplicated onto the child fd.
  std::vector<std::pair<int, int>> fds;
  int stdout_fd = -1;  ///< parent fd for the child's stdout/stderr; -1 = inherit
  std::filesystem::path working_directory;  ///< empty = the parent's
  /// The child leads its own process group, so that it and anything it starts can be killed
  /// together with kill(-pid, ...).
  bool new_process_group = true;
  /// PR_SET_PDEATHSIG(SIGKILL). The kernel ties it to the forking thread, so these children
  /// are forked from one long-lived launcher thread, not from the caller's.
  bool die_with_parent = false;
  std::size_t address_space_limit = 0;  ///< RLIMIT_AS in bytes; 0 = unchanged
  std::size_t file_size_limit = 0;      ///< RLIMIT_FSIZE in bytes; 0 = unchanged
  /// The child's environment as NAME=value entries; nullopt = the parent's.
  std::optional<std::vector<std::string>> environment;
  /// CPU cores the child runs on (sched_setaffinity before exec, inherited by its threads);
  /// empty = the parent's. A child that cannot be pinned does not exec (exit status 127).
  std::vector<int> cpus;
  /// Entered by the child just before exec (a compiler's build sandbox, compile_sandbox.h).
  /// When Landlock or seccomp cannot be applied the child does not exec: it exits with status
  /// 126 and the reason on its output.
  std::optional<SandboxOptions> sandbox;
};

/// Starts a child; stdin is /dev/null. An exec failure shows as exit status 127 with the reason
/// written to the child's stdout_fd. Throws InternalError when fork itself fails.
pid_t spawn_process(const SpawnOptions& options);

/// Waits for the child (blocking) and returns how it ended.
ExitStatus reap_process(pid_t pid);
/// Waits at most `grace` for the child to end on its own; false if it is still running.
/// Does not reap it, so its process group stays addressable.
bool wait_exited(pid_t pid, std::chrono::milliseconds grace);
/// SIGKILL to the whole process group led by `pid`.
void kill_process_group(pid_t pid);

/// A finished command.
struct CommandResult {
  ExitStatus status;
  bool timed_out = false;
  std::string output;  ///< stdout and stderr, interleaved
};

/// Runs a command to completion, capturing its output. After `timeout` its whole process group
/// is killed and timed_out is set. Runs in `working_directory` (empty = the current one), with
/// `environment` (nullopt = this process's), inside `sandbox` when one is given.
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::filesystem::path& working_directory = {},
                          const std::optional<std::vector<std::string>>& environment = {},
                          const std::optional<SandboxOptions>& sandbox = {});

/// The first executable named `name` on $PATH (or `name` itself when it contains a '/');
/// nullopt if none.
std::optional<std::string> find_executable(const std::string& name);

}  // namespace kernelarc
