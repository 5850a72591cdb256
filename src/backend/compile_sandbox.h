// The sandbox a compiler runs in when it builds a synthesized solution (one whose code a language
// model or an external program wrote). Its sources may `#include` any path, and a compiler reads
// whatever it is pointed at, so a build could otherwise read the workspace (the calibration, the
// oracle's expected outputs) into a candidate. The compiler process (g++/clang++, nvcc and every
// pass it starts) enters the worker's sandbox helpers (worker_sandbox.h) in build mode:
// - Landlock: read and execute beneath the system's program, library and header directories
//   (/usr, /bin, /sbin, /lib*, /etc, and the directory of each tool), kernelarc's ABI headers,
//   /proc/cpuinfo and the CPU topology in /sys; read and write beneath the build directory only,
//   which is also its TMPDIR and HOME. No TCP (Landlock ABI 4 and later).
// - seccomp: no sockets but AF_UNIX and AF_NETLINK, no ptrace or process_vm_*.
// - the environment: child_environment.h's allowlist.
// When Landlock or seccomp is unavailable the compiler is not run (process.h: exit status 126).
//
// NVRTC runs inside kernelarc, and its #include reads the filesystem too, so a synthesized
// device-only kernel is compiled in a forked child that enters the worker's own sandbox (no
// programs, no sockets but AF_UNIX) with read access to the system and CUDA directories only,
// and hands the cubin back through a pipe.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cuda/cuda_nvrtc.h"
#include "backend/worker/worker_sandbox.h"

namespace kernelarc {

/// The sandbox of a compiler that builds in `build_dir`; `tools` are the executables it runs
/// (the resolved compiler or nvcc): the directory above each one's bin/ becomes readable.
SandboxOptions compile_sandbox(const std::filesystem::path& build_dir,
                               const std::vector<std::filesystem::path>& tools);

/// The compiler's environment: environment_without_secrets() (the allowlist of
/// child_environment.h) with TMPDIR and HOME set to `build_dir`.
std::vector<std::string> compile_environment(const std::filesystem::path& build_dir);

/// nvrtc_compile(request) in a sandboxed child (see above); a child that does not answer within
/// `timeout` is killed and the result says so. libnvrtc must already be loaded (nvrtc_version()).
NvrtcResult nvrtc_compile_in_sandbox(const NvrtcRequest& request,
                                     std::chrono::milliseconds timeout);

}  // namespace kernelarc
