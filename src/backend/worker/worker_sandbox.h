// The worker's sandbox, entered after the device exists and before any candidate is loaded.
//
// Candidates are written to maximize a score, so the worker assumes they may try to cheat:
// - seccomp kills the worker when it starts processes or programs (execve, fork, clone without
//   CLONE_THREAD) or reads other processes (ptrace, process_vm_*), and refuses (EPERM) signals
//   to other processes and sockets other than AF_UNIX and AF_NETLINK. Threads keep working.
// - Landlock lets the worker read only what a kernel needs (allowed_read_roots: system
//   directories, libraries, the build cache), never the protected workspace nor any other, lets the
//   worker write only its scratch directory and a few devices, and keeps it from tracing or
//   signalling processes outside its domain (the parent).
// Either is skipped, and the status says why, where the kernel or architecture lacks it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kernelarc {

struct SandboxOptions {
  /// Directories the candidate may neither read nor write (absolute; need not exist yet).
  std::vector<std::filesystem::path> protected_paths;
  /// Directories beneath a protected one that stay readable (the build cache holding the
  /// candidates' libraries); only those that exist when the sandbox is entered count.
  std::vector<std::filesystem::path> readable_paths;
  /// The one directory the candidate may write (its TMPDIR); empty = none.
  std::filesystem::path scratch_directory;
  /// Further directories it may read and write, those that exist (a profiled run: /dev/shm,
  /// where Nsight Compute's injected library talks to ncu).
  std::vector<std::filesystem::path> writable_paths;
  /// A build sandbox (compile_sandbox.h): the process may start programs (a compiler driver
  /// runs its passes), so seccomp leaves execve, fork, clone and signals alone; the socket,
  /// ptrace and process_vm rules stay.
  bool allow_programs = false;
};

struct SandboxStatus {
  bool seccomp = false;
  std::string seccomp_note;   ///< why seccomp is off; empty when on
  int landlock_abi = 0;       ///< the Landlock ABI enforced; 0 = none
  std::string landlock_note;  ///< why Landlock is off; empty when on

  /// {"seccomp": bool, "seccomp_note"?: str, "landlock_abi": int, "landlock_note"?: str}
  nlohmann::json to_json() const;
};

/// Restricts this process for good (no-new-privileges, seccomp on every thread, Landlock on
/// the calling thread and every thread it starts from now on). Never throws: what could not be
/// applied is reported in the status.
SandboxStatus enter_worker_sandbox(const SandboxOptions& options);

/// The directories to grant read access beneath so that everything except `protected_paths`
/// (and with the exception of `readable_paths`) stays readable: for each ancestor of a
/// protected path, every child not on the way to one; then the readable paths. Children that
/// are symbolic links are left out (their targets are covered where they live). Exposed for
/// tests.
std::vector<std::filesystem::path> readable_roots(
    const std::vector<std::filesystem::path>& protected_paths,
    const std::vector<std::filesystem::path>& readable_paths);

/// What a worker that protects a workspace may read: the system's directories (/usr, /lib*,
/// /bin, /sbin, /etc, /opt, /sys, its own /proc), the directories of the libraries loaded in this
/// process and of LD_LIBRARY_PATH, and `readable_paths` (the build cache), less the protected
/// directories. Nothing else: no home directory, no /tmp, no other workspace, wherever it lies.
/// Without protected paths (a worker that guards nothing, as in the worker's own tests):
/// readable_roots({}, readable_paths), everything. Exposed for tests.
std::vector<std::filesystem::path> allowed_read_roots(
    const std::vector<std::filesystem::path>& protected_paths,
    const std::vector<std::filesystem::path>& readable_paths);

/// Whether an environment variable's name marks a secret (contains KEY, TOKEN, SECRET,
/// PASSWORD or CREDENTIAL, in any case); such variables never reach the worker.
bool is_secret_variable(std::string_view name);

/// This process's environment ("NAME=value" entries) reduced to the allowlist of
/// child_environment.h, and without secret-named variables: what a process that runs candidate
/// code (the worker, ncu and its target) is started with.
std::vector<std::string> environment_without_secrets();

}  // namespace kernelarc
