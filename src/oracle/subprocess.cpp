#include "oracle/subprocess.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include "backend/process.h"

namespace kernelarc {

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::filesystem::path& log_path,
                          const std::function<bool()>& keep_going,
                          const std::optional<std::vector<std::string>>& environment) {
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
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.argv.front() = *executable;
  spawn.stdout_fd = log_fd;
  spawn.environment = environment;
  const pid_t pid = spawn_process(spawn);
  ::close(log_fd);
  result.started = true;

  while (!wait_exited(pid, std::chrono::milliseconds(50))) {
    if (!keep_going()) {
      kill_process_group(pid);
      result.stopped = true;
      break;
    }
  }
  const ExitStatus status = reap_process(pid);
  if (status.signaled) {
    result.signal = status.signal;
  } else {
    result.exit_code = status.exit_code;
  }
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
