#include "oracle/python_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "core/json_fields.h"
#include "oracle/python_host.h"

namespace kernelarc {

PythonProcess::PythonProcess(const std::string& interpreter,
                             const std::vector<std::string>& script_and_arguments, int output_fd,
                             const std::vector<std::pair<int, int>>& fds,
                             const std::vector<std::string>& environment, bool may_use_host) {
  if (may_use_host) {
    std::vector<std::pair<int, int>> passed = {{1, output_fd}, {2, output_fd}};
    passed.insert(passed.end(), fds.begin(), fds.end());
    if (auto hosted = run_in_python_host(interpreter, script_and_arguments, passed, environment)) {
      pid_ = hosted->pid;
      host_connection_ = hosted->connection;
      return;
    }
  }
  SpawnOptions spawn;
  spawn.argv = {interpreter};
  spawn.argv.insert(spawn.argv.end(), script_and_arguments.begin(), script_and_arguments.end());
  spawn.stdout_fd = output_fd;
  spawn.fds = fds;
  spawn.environment = environment;
  pid_ = spawn_process(spawn);
}

PythonProcess::~PythonProcess() {
  if (!ended_) {
    kill_group();
    reap();
  }
  if (host_connection_ >= 0) ::close(host_connection_);
}

bool PythonProcess::wait_exited(std::chrono::milliseconds grace) {
  if (ended_) return true;
  if (!hosted()) return kernelarc::wait_exited(pid_, grace);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (host_replies_.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd readable{host_connection_, POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char buffer[256];
    const ssize_t got = ::recv(host_connection_, buffer, sizeof buffer, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      // The host is gone without a word: whatever the script was doing, it is ended now.
      kill_process_group(pid_);
      ended_ = ExitStatus{.signaled = true, .signal = SIGKILL, .killed_by_parent = true};
      return true;
    }
    host_replies_.append(buffer, static_cast<std::size_t>(got));
  }
  const OrderedJson reply =
      OrderedJson::parse(host_replies_.substr(0, host_replies_.find('\n')), nullptr, false);
  ExitStatus status;
  if (reply.is_object() && reply.contains("signal")) {
    status.signaled = true;
    status.signal = reply["signal"].get<int>();
    status.killed_by_parent = sent_kill_;
  } else if (reply.is_object() && reply.contains("exit")) {
    status.exit_code = reply["exit"].get<int>();
  } else {
    kill_process_group(pid_);
    status = ExitStatus{.signaled = true, .signal = SIGKILL, .killed_by_parent = true};
  }
  if (reply.is_object()) status.max_rss_kib = reply.value("max_rss_kib", 0L);
  ended_ = status;
  return true;
}

void PythonProcess::kill_group() {
  if (ended_) return;
  kill_process_group(pid_);
  sent_kill_ = true;
}

ExitStatus PythonProcess::reap() {
  if (ended_) return *ended_;
  if (!hosted()) {
    ended_ = reap_process(pid_);
    ended_->killed_by_parent = sent_kill_ && ended_->signaled;
    return *ended_;
  }
  while (!wait_exited(std::chrono::milliseconds(60'000))) {
  }
  return *ended_;
}

}  // namespace kernelarc
