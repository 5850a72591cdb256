// Runs a helper program (the Python oracle) with its output in a log file and a watchdog, on
// top of the backend's process control (backend/process.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/exit_status.h"

namespace kernelarc {

struct ProcessResult {
  bool started = false;  ///< false: the program could not be executed (spawn_error says why)
  std::string spawn_error;
  ExitStatus status;     ///< how it ended, once started
  bool stopped = false;  ///< the watchdog killed it (status.killed_by_parent says so too)

  /// Whether it ran to its own end with exit code `code`.
  bool exited_with(int code) const {
    return started && !stopped && !status.signaled && status.exit_code == code;
  }
};

/// How it ended, in words: why it could not be started, that the watchdog stopped it, or
/// describe_exit's words, which for a death the kernel's out-of-memory killer most likely dealt
/// add `workload_bytes` (its workload's inputs and outputs, where the caller knows them) and
/// the memory this machine has available.
std::string describe_end(const ProcessResult& process,
                         std::optional<double> workload_bytes = std::nullopt);

/// Runs argv[0] (searched on PATH) with stdin from /dev/null and stdout + stderr appended to
/// `log_path`, in its own process group. `keep_going` is polled while it runs; when it returns
/// false the whole group is killed. `environment` (NAME=value entries) replaces this process'
/// environment when set. With `python_script`, argv is `python SCRIPT ARGS...` and may run in
/// the interpreter host (python_process.h).
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::filesystem::path& log_path,
                          const std::function<bool()>& keep_going,
                          const std::optional<std::vector<std::string>>& environment = {},
                          bool python_script = false);

/// The last `max_bytes` of a file, starting at a line boundary, trimmed ("" if unreadable).
std::string file_tail(const std::filesystem::path& path, std::size_t max_bytes = 2000);
/// The same of an open file's bytes from offset `from` on.
std::string fd_tail(int fd, std::uintmax_t from, std::size_t max_bytes = 2000);

}  // namespace kernelarc
