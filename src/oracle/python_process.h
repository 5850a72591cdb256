// A Python script run by kernelarc (the oracle, the graph tracer, the KernelBench importer):
// forked by the interpreter host (python/kernelarc_python_host.py), which has torch imported
// already, or else executed as a child of this process. Importing torch costs 1-2 s of CPU per
// interpreter on a CPU machine, and kernelarc runs many short scripts from separate processes;
// a host serves every kernelarc process of this user with the same interpreter and environment,
// and ends after two idle minutes. Either way the script leads its own process group, reads
// /dev/null and writes its stdout and stderr to one descriptor, and how it ended is known.
// KERNELARC_PYTHON_HOST=0 turns the host off.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/process.h"

namespace kernelarc {

class PythonProcess {
 public:
  /// Starts `interpreter` (a path) on `script_and_arguments` with stdout and stderr on
  /// `output_fd`, `fds` ((child fd, parent fd) pairs) passed on, and `environment` (NAME=value);
  /// in the host unless `may_use_host` is false (then any program can be `interpreter`).
  /// Throws InternalError when fork itself fails.
  PythonProcess(const std::string& interpreter,
                const std::vector<std::string>& script_and_arguments, int output_fd,
                const std::vector<std::pair<int, int>>& fds,
                const std::vector<std::string>& environment, bool may_use_host);
  /// Kills a script that still runs, and waits for it.
  ~PythonProcess();
  PythonProcess(const PythonProcess&) = delete;
  PythonProcess& operator=(const PythonProcess&) = delete;

  /// Waits at most `grace` for the script to end; true once it has.
  bool wait_exited(std::chrono::milliseconds grace);
  /// SIGKILL to its process group.
  void kill_group();
  /// Waits until it has ended, and says how (killed_by_parent after kill_group).
  ExitStatus reap();
  /// Whether the interpreter host forked it (false: this process executed the interpreter).
  bool hosted() const { return host_connection_ >= 0; }

 private:
  pid_t pid_ = -1;
  int host_connection_ = -1;  ///< the request's connection to the host; -1 for a child
  std::string host_replies_;
  std::optional<ExitStatus> ended_;
  bool sent_kill_ = false;
};

}  // namespace kernelarc
