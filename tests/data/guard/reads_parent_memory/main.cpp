// Guard test case "reads_parent_memory" for problems/cpu/rmsnorm_f32: opens /proc/<ppid>/mem and
// reads the first readable page of the parent (the guard, which holds the expected outputs in
// memory). Had it read it, it could search the parent for the answer; here it then returns
// without computing, so the test fails. Landlock keeps the sandboxed worker from tracing
// processes outside its domain, so opening the parent's memory is refused and the call fails
// with the errno text. Expected status: RUNTIME_ERROR.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kernelarc/abi.h"

namespace {

char g_error[256];

int fail(const std::string& what) {
  std::snprintf(g_error, sizeof g_error, "%s: %s", what.c_str(), std::strerror(errno));
  return 2;
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* /*inputs*/, int n_inputs, ka_tensor* /*outputs*/,
                      int n_outputs, void* /*stream*/, void* /*workspace*/,
                      size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const std::string parent = "/proc/" + std::to_string(getppid());
  // The address is only a target: reading the maps would need the same permission, and a
  // refused maps read would hide which of the two the kernel refused.
  uintptr_t address = 0x400000;
  if (std::ifstream maps(parent + "/maps"); maps) {
    std::string line;
    while (std::getline(maps, line)) {
      if (line.find(" r") == std::string::npos) continue;
      address = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
      break;
    }
  }
  const int fd = open((parent + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("opening " + parent + "/mem");
  std::vector<char> page(4096);
  const ssize_t got = pread(fd, page.data(), page.size(), static_cast<off_t>(address));
  close(fd);
  if (got < 0) return fail("reading " + parent + "/mem");
  return 0;  // the parent's memory is readable: a real cheat would search it here
}
