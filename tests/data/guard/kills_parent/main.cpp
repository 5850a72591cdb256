// Guard test case "kills_parent" for problems/cpu/rmsnorm_f32: before any work, tries to signal
// its parent (the guard): a candidate that can kill the guard can end an evaluation on its own
// terms. It sends signal 0, which passes exactly the permission checks a SIGKILL would but
// delivers nothing, so a guard without a sandbox survives the test; a permitted signal is
// reported as an error that fails the test. The worker's seccomp filter refuses signals to other
// processes (EPERM, as does Landlock's signal scope), and the call fails with the errno text.
// Expected status: RUNTIME_ERROR.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "kernelarc/abi.h"

namespace {

char g_error[256];

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* /*inputs*/, int n_inputs, ka_tensor* /*outputs*/,
                      int n_outputs, void* /*stream*/, void* /*workspace*/,
                      size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const pid_t parent = getppid();
  if (kill(parent, 0) != 0) {
    std::snprintf(g_error, sizeof g_error, "signalling the parent (pid %d): %s",
                  static_cast<int>(parent), std::strerror(errno));
    return 2;
  }
  std::snprintf(g_error, sizeof g_error,
                "the parent (pid %d) accepted a signal: SIGKILL would have ended the guard",
                static_cast<int>(parent));
  return 3;
}
