// How a child process ended, and the one description of it that every parent gives: compilers,
// workers, the Python reference and its helpers. A child the kernel killed for memory ends by a
// SIGKILL it never sees coming and leaves no word of its own; saying so is the description's
// job, since "killed by signal 9" alone left users of GPU-sized problems on CPU machines
// guessing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kernelarc {

/// How a child ended, from its wait status.
struct ExitStatus {
  bool signaled = false;
  int signal = 0;        ///< when signaled
  int exit_code = 0;     ///< when not signaled
  long max_rss_kib = 0;  ///< the child's peak resident set size; 0 = unknown
  /// The parent sent the signal itself (a watchdog, a timeout, a requester that hung up), so
  /// the signal says nothing about what the child did.
  bool killed_by_parent = false;
};

/// What the parent knows around a child's end, for its description.
struct ExitContext {
  std::string during;                      ///< "during a call": said after how it ended
  std::optional<double> workload_bytes;    ///< the inputs and outputs of the workload it ran
  std::optional<int64_t> available_bytes;  ///< the memory this machine has available
};

/// "exited with status 3" or "killed by signal SIGSEGV (Segmentation fault)", then
/// `context.during`. A SIGKILL the parent did not send is most likely the kernel's
/// out-of-memory killer (nothing else kills kernelarc's children unasked), and is said to be,
/// with the child's peak resident size and the context's sizes where known.
std::string describe_exit(const ExitStatus& status, const ExitContext& context = {});

/// Whether the description blames the out-of-memory killer.
bool killed_for_memory(const ExitStatus& status);

}  // namespace kernelarc
