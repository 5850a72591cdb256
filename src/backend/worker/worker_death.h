// How the parent explains a worker that died or was killed during a request.
#pragma once

#include <sys/types.h>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>

#include "backend/process.h"
#include "backend/worker/worker.h"

namespace kernelarc {

enum class DeathCause {
  Exited,      ///< the worker ended on its own (signal or exit)
  TimedOut,    ///< the watchdog killed it
  ClosedPipe,  ///< it closed the protocol pipe but kept running, and was killed
};

/// The outcome and message for a dead worker. `during` says what it was doing ("during a
/// call"); `waited` is how long the parent waited for the reply. Killed by SIGKILL that the
/// parent did not send (the kernel's OOM killer), or dead at a peak resident size near the
/// CPU memory limit, is OutOfMemory; a hang is TimedOut; anything else Crashed.
ExecuteResult classify_death(const ExitStatus& status, DeathCause cause, const std::string& during,
                             std::chrono::milliseconds waited, const WorkerOptions& options);

/// The last lines (at most 20) the worker wrote to its log from byte `start` on.
std::string read_log_tail(const std::filesystem::path& log_path, off_t start);
/// "; worker log:\n<tail>", or "" for an empty tail.
std::string log_suffix(const std::string& tail);
/// Whether a log tail shows a failed allocation (std::bad_alloc, ENOMEM, "out of memory").
bool log_reports_allocation_failure(const std::string& tail);

}  // namespace kernelarc
