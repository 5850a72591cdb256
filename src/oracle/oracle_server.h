// One long-lived interpreter running python/kernelarc_oracle.py --serve 3: job files are handed to
// it one after another, so torch is imported once per kernelarc process instead of once per job
// file (1-2 s each on a CPU machine, more with CUDA), and not even once when the interpreter host
// forks it (python_process.h). A job file's outcome reads like a process
// that ran it alone: an exit code, a signal, or stopped by the watchdog. After anything but
// exit code 0 the interpreter is gone and the next job file needs a new server.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "oracle/python_process.h"
#include "oracle/subprocess.h"

namespace kernelarc {

class OracleServer {
 public:
  /// Starts `interpreter script --serve 3` in its own process group (fd 3: its end of a socket
  /// pair). Its output goes to a file made in `log_dir` and unlinked at once (read through this
  /// object only, so nothing is left behind). When it cannot be executed, run() says so as
  /// run_process would (ProcessResult::started false). With `may_use_host`, `interpreter` is a
  /// Python and the interpreter host may fork it (python_process.h).
  OracleServer(const std::string& interpreter, const std::filesystem::path& script,
               const std::filesystem::path& log_dir, const std::vector<std::string>& environment,
               bool may_use_host = false);
  /// Ends the interpreter: its requests are closed, and it is killed if it lingers.
  ~OracleServer();
  OracleServer(const OracleServer&) = delete;
  OracleServer& operator=(const OracleServer&) = delete;

  /// Hands it one job file and waits for its reply, polling `keep_going` as run_process does.
  ProcessResult run(const std::filesystem::path& job_file, const std::function<bool()>& keep_going);
  /// What the interpreter wrote to its log during the last run().
  std::string last_output() const;

  bool alive() const { return process_.has_value(); }
  const std::string& interpreter() const { return interpreter_; }

 private:
  /// Gives the interpreter 2 s to exit by itself, kills it after that, then ends it.
  void wind_down(ProcessResult& result);
  /// Closes the socket and reaps the interpreter; its exit code or signal goes into `result`.
  void end(ProcessResult& result);

  std::string interpreter_;
  int log_fd_ = -1;
  std::optional<PythonProcess> process_;
  int socket_ = -1;
  std::string spawn_error_;
  std::uintmax_t run_log_start_ = 0;
};

}  // namespace kernelarc
