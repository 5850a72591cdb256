// The client of the interpreter host (python/kernelarc_python_host.py, python_process.h): finds
// the host of an interpreter and environment through its socket, starts it when there is none,
// and asks it to fork a script.
//
// Hosts live in $XDG_RUNTIME_DIR/kernelarc-python, or /tmp/kernelarc-python-UID, a directory
// only this user may enter (one that is not is never used); each host's socket, lock and log
// are named by a hash of the interpreter, the host script and the environment, since torch
// reads some variables (thread counts, devices) when it is imported.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kernelarc {

/// A script the host forked: its pid (leader of its own process group) and the connection on
/// which the host reports how it ended ({"exit": N} or {"signal": N} as a JSON line).
struct HostedScript {
  pid_t pid = -1;
  int connection = -1;
};

/// Asks the host of `interpreter` and `environment` to run `script_and_arguments` in this
/// process' working directory, with `fds` ((child fd, parent fd) pairs) passed on. nullopt when
/// no host serves (turned off, none can be started, or it refused): the caller then executes
/// the interpreter itself.
std::optional<HostedScript> run_in_python_host(const std::string& interpreter,
                                               const std::vector<std::string>& script_and_arguments,
                                               const std::vector<std::pair<int, int>>& fds,
                                               const std::vector<std::string>& environment);

}  // namespace kernelarc
