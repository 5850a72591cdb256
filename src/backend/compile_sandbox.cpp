#include "backend/compile_sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "backend/process.h"
#include "core/error.h"
#include "core/paths.h"

namespace kernelarc {

namespace fs = std::filesystem;

namespace {

void write_all(int fd, const void* data, std::size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t count = ::write(fd, bytes, size);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) return;
    bytes += count;
    size -= static_cast<std::size_t>(count);
  }
}

/// A field on the pipe: its length (8 bytes) then its bytes.
void write_field(int fd, const std::string& text) {
  const uint64_t size = text.size();
  write_all(fd, &size, sizeof size);
  write_all(fd, text.data(), text.size());
}

/// Reads `fields` length-prefixed fields from `data`; false when it is incomplete.
bool read_fields(const std::string& data, std::vector<std::string>& fields, std::size_t count) {
  std::size_t at = 0;
  for (std::size_t index = 0; index < count; ++index) {
    uint64_t size = 0;
    if (data.size() - at < sizeof size) return false;
    std::memcpy(&size, data.data() + at, sizeof size);
    at += sizeof size;
    if (data.size() - at < size) return false;
    fields.push_back(data.substr(at, size));
    at += size;
  }
  return true;
}

[[noreturn]] void nvrtc_child(const NvrtcRequest& request, int fd) {
  SandboxOptions sandbox;
  sandbox.protected_paths = {"/"};
  sandbox.readable_paths = {"/usr", "/lib", "/lib32", "/lib64", "/etc", "/opt/nvidia"};
  for (const fs::path& dir : nvrtc_include_dirs()) {
    sandbox.readable_paths.push_back(dir);
    sandbox.readable_paths.push_back(dir.parent_path());  // the toolkit's lib beside include
  }
  const SandboxStatus status = enter_worker_sandbox(sandbox);
  if (status.landlock_abi == 0 || !status.seccomp) {
    write_field(fd, "0");
    write_field(fd, "the NVRTC sandbox could not be entered, so NVRTC was not run: " +
                        (status.landlock_abi == 0 ? "Landlock: " + status.landlock_note
                                                  : "seccomp: " + status.seccomp_note));
    write_field(fd, "");
    write_field(fd, "");
    _exit(0);
  }
  const NvrtcResult result = nvrtc_compile(request);
  write_field(fd, result.ok ? "1" : "0");
  write_field(fd, result.log);
  write_field(fd, result.cubin);
  write_field(fd, result.lowered_name);
  _exit(0);
}

}  // namespace

SandboxOptions compile_sandbox(const fs::path& build_dir, const std::vector<fs::path>& tools) {
  // Absolute: the child enters the sandbox after changing into the build directory.
  const fs::path build = fs::absolute(build_dir);
  SandboxOptions options;
  options.allow_programs = true;
  // Everything is hidden; only the readable paths (those that exist) are granted.
  options.protected_paths = {"/"};
  options.readable_paths = {"/usr",
                            "/bin",
                            "/sbin",
                            "/lib",
                            "/lib32",
                            "/lib64",
                            "/libx32",
                            "/etc",
                            "/proc/cpuinfo",
                            "/proc/meminfo",
                            "/sys/devices/system/cpu",
                            abi_include_dir()};
  for (const fs::path& tool : tools) {
    std::error_code error;
    const fs::path real = fs::weakly_canonical(tool, error);
    // <prefix>/bin/nvcc: the prefix holds the tool's own headers, libraries and passes.
    const fs::path prefix = (error ? tool : real).parent_path().parent_path();
    if (!prefix.empty() && prefix != prefix.root_path()) options.readable_paths.push_back(prefix);
  }
  options.scratch_directory = build;
  return options;
}

std::vector<std::string> compile_environment(const fs::path& build_dir) {
  std::vector<std::string> environment = environment_without_secrets();
  std::erase_if(environment, [](const std::string& entry) {
    return entry.starts_with("TMPDIR=") || entry.starts_with("HOME=");
  });
  const std::string build = fs::absolute(build_dir).string();
  environment.push_back("TMPDIR=" + build);
  environment.push_back("HOME=" + build);
  return environment;
}

NvrtcResult nvrtc_compile_in_sandbox(const NvrtcRequest& request,
                                     std::chrono::milliseconds timeout) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw InternalError(std::string("pipe2 failed: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(fds[0]);
    setpgid(0, 0);
    nvrtc_child(request, fds[1]);
  }
  const int error = errno;
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    throw InternalError(std::string("fork failed for NVRTC: ") + std::strerror(error));
  }
  std::string data;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd polled{fds[0], POLLIN, 0};
    const int ready = ::poll(&polled, 1, static_cast<int>(left.count()) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    const ssize_t got = ::read(fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    data.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  if (timed_out) kill_process_group(pid);
  const ExitStatus status = reap_process(pid);
  NvrtcResult result;
  std::vector<std::string> fields;
  if (timed_out) {
    result.log = "NVRTC did not finish within " + std::to_string(timeout.count() / 1000) +
                 " s and was killed";
  } else if (!read_fields(data, fields, 4)) {
    result.log = "the sandboxed NVRTC process " + describe_exit(status) +
                 " without an answer (a kernel that #includes a path outside the toolkit "
                 "is refused by the sandbox)";
  } else {
    result.ok = fields[0] == "1";
    result.log = fields[1];
    result.cubin = fields[2];
    result.lowered_name = fields[3];
  }
  return result;
}

}  // namespace kernelarc
