#include "oracle/oracle_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <system_error>

#include "backend/process.h"

namespace kernelarc {

OracleServer::OracleServer(const std::string& interpreter, const std::filesystem::path& script,
                           const std::filesystem::path& log_dir,
                           const std::vector<std::string>& environment, bool may_use_host)
    : interpreter_(interpreter) {
  const auto executable = find_executable(interpreter);
  if (!executable) {
    spawn_error_ = "no executable '" + interpreter + "' (searched $PATH)";
    return;
  }
  std::error_code ignored;
  std::filesystem::create_directories(log_dir, ignored);
  std::string name = (log_dir / "oracle-server-XXXXXX").string();
  log_fd_ = ::mkostemp(name.data(), O_CLOEXEC);
  if (log_fd_ < 0) {
    spawn_error_ = "cannot make a log file in " + log_dir.string() + ": " + std::strerror(errno);
    return;
  }
  ::unlink(name.c_str());
  // A socket, not pipes: send() with MSG_NOSIGNAL to a dead interpreter fails instead of raising
  // SIGPIPE. Close-on-exec, so that no other child (a worker, a compiler) holds it open.
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    spawn_error_ = std::string("cannot make a socket pair: ") + std::strerror(errno);
    return;
  }
  try {
    process_.emplace(*executable, std::vector<std::string>{script.string(), "--serve", "3"},
                     log_fd_, std::vector<std::pair<int, int>>{{3, ends[1]}}, environment,
                     may_use_host);
  } catch (...) {
    ::close(ends[0]);
    ::close(ends[1]);
    throw;
  }
  ::close(ends[1]);
  socket_ = ends[0];
}

OracleServer::~OracleServer() {
  if (alive()) {
    // End of the requests: the interpreter returns from its loop and exits by itself.
    ::shutdown(socket_, SHUT_WR);
    ProcessResult ignored;
    wind_down(ignored);
  }
  if (log_fd_ >= 0) ::close(log_fd_);
}

void OracleServer::wind_down(ProcessResult& result) {
  if (!process_->wait_exited(std::chrono::milliseconds(2000))) process_->kill_group();
  end(result);
}

void OracleServer::end(ProcessResult& result) {
  if (socket_ >= 0) ::close(socket_);
  socket_ = -1;
  if (!process_) return;
  result.status = process_->reap();
  process_.reset();
}

ProcessResult OracleServer::run(const std::filesystem::path& job_file,
                                const std::function<bool()>& keep_going) {
  ProcessResult result;
  if (!spawn_error_.empty()) {
    result.spawn_error = spawn_error_;
    return result;
  }
  result.started = true;
  struct stat log {};
  run_log_start_ = ::fstat(log_fd_, &log) == 0 ? static_cast<std::uintmax_t>(log.st_size) : 0;
  if (!alive()) return result;  // ended by an earlier run: the caller starts another

  const std::string request = job_file.string() + "\n";
  if (::send(socket_, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    // It died between job files; how it ended is the answer.
    wind_down(result);
    return result;
  }
  std::string reply;
  while (true) {
    pollfd readable{socket_, POLLIN, 0};
    const int ready = ::poll(&readable, 1, 50);
    if (ready > 0) {
      char buffer[64];
      const ssize_t got = ::recv(socket_, buffer, sizeof buffer, 0);
      if (got > 0) {
        reply.append(buffer, static_cast<std::size_t>(got));
        if (const auto newline = reply.find('\n'); newline != std::string::npos) {
          const int code = std::atoi(reply.substr(0, newline).c_str());
          // A non-zero code ends the interpreter, as it would have ended a process of its own;
          // the code is how the job ended, whatever ending the interpreter then took.
          if (code != 0) wind_down(result);
          result.status = {.exit_code = code, .max_rss_kib = result.status.max_rss_kib};
          return result;
        }
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      // End of the socket: the interpreter died mid-job.
      wind_down(result);
      return result;
    }
    if (process_->wait_exited(std::chrono::milliseconds(0))) {
      end(result);
      return result;
    }
    if (!keep_going()) {
      process_->kill_group();
      result.stopped = true;
      end(result);
      return result;
    }
  }
}

std::string OracleServer::last_output() const {
  return fd_tail(log_fd_, run_log_start_);
}

}  // namespace kernelarc
