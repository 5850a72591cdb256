#include "oracle/subprocess.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "backend/child_environment.h"
#include "backend/process.h"
#include "core/host_memory.h"
#include "oracle/python_process.h"

namespace kernelarc {

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::filesystem::path& log_path,
                          const std::function<bool()>& keep_going,
                          const std::optional<std::vector<std::string>>& environment,
                          bool python_script) {
  ProcessResult result;
  const auto executable = find_executable(argv.front());
  if (!executable) {
    result.spawn_error = "no executable '" + argv.front() + "' (searched $PATH)";
    return result;
  }
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    result.spawn_error = "cannot open " + log_path.string() + ": " + std::strerror(errno);
    return result;
  }
  std::optional<PythonProcess> process;
  try {
    process.emplace(*executable, std::vector<std::string>(argv.begin() + 1, argv.end()), log_fd,
                    std::vector<std::pair<int, int>>{},
                    environment ? *environment : current_environment(), python_script);
  } catch (...) {
    ::close(log_fd);
    throw;
  }
  ::close(log_fd);
  result.started = true;

  while (!process->wait_exited(std::chrono::milliseconds(50))) {
    if (!keep_going()) {
      process->kill_group();
      result.stopped = true;
      break;
    }
  }
  result.status = process->reap();
  return result;
}

std::string describe_end(const ProcessResult& process, std::optional<double> workload_bytes) {
  if (!process.started) return "cannot execute it: " + process.spawn_error;
  if (process.stopped) return "stopped by its watchdog";
  ExitContext context{.workload_bytes = workload_bytes};
  if (killed_for_memory(process.status)) context.available_bytes = available_host_memory();
  return describe_exit(process.status, context);
}

namespace {

/// `text` from its first whole line on (when it starts mid-line), right-trimmed.
std::string whole_lines(std::string text, bool starts_mid_line) {
  if (starts_mid_line) {
    auto newline = text.find('\n');
    if (newline != std::string::npos) text.erase(0, newline + 1);
  }
  auto last = text.find_last_not_of(" \n\r\t");
  text.erase(last == std::string::npos ? 0 : last + 1);
  return text;
}

}  // namespace

std::string file_tail(const std::filesystem::path& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string tail = fd_tail(fd, 0, max_bytes);
  ::close(fd);
  return tail;
}

std::string fd_tail(int fd, std::uintmax_t from, std::size_t max_bytes) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return "";
  const auto size = static_cast<std::uintmax_t>(info.st_size);
  if (from >= size) return "";
  const std::uintmax_t start =
      std::max<std::uintmax_t>(size > max_bytes ? size - max_bytes : 0, from);
  std::string text(static_cast<std::size_t>(size - start), '\0');
  const ssize_t got = ::pread(fd, text.data(), text.size(), static_cast<off_t>(start));
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return whole_lines(std::move(text), start > from);
}

}  // namespace kernelarc
