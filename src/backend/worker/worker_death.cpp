#include "backend/worker/worker_death.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <vector>

namespace kernelarc {
namespace {

constexpr std::size_t kTailLines = 20;
constexpr off_t kTailBytes = 64 << 10;
// A death at a peak resident size above this fraction of RLIMIT_AS is taken as a failed
// allocation: the limit counts address space, of which the worker's code and stacks take some.
constexpr double kNearLimit = 0.75;

std::string mib(std::size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

ExecuteResult classify_death(const ExitStatus& status, DeathCause cause, const std::string& during,
                             std::chrono::milliseconds waited, const WorkerOptions& options) {
  ExecuteResult result;
  result.outcome = CallOutcome::Crashed;
  if (cause == DeathCause::TimedOut) {
    result.outcome = CallOutcome::TimedOut;
    result.message = "no reply within " + std::to_string(waited.count()) + " ms " + during +
                     " (call_timeout " + std::to_string(options.call_timeout.count()) +
                     " ms per call); the worker was killed";
    return result;
  }
  if (cause == DeathCause::ClosedPipe) {
    result.message = "the worker closed its protocol pipe " + during + " and was killed";
    return result;
  }
  std::string how = describe_exit(status, {.during = during});
  auto peak = static_cast<std::size_t>(status.max_rss_kib) * 1024;
  bool limited = options.device == "cpu" && options.memory_limit_bytes > 0;
  if (killed_for_memory(status)) {
    result.outcome = CallOutcome::OutOfMemory;
    result.message = how;
  } else if (status.signaled && status.signal == SIGSYS) {
    result.message = how +
                     ": a forbidden system call: the candidate made a system call the sandbox "
                     "forbids (starting processes, running programs, tracing or reading other "
                     "processes)";
  } else if (status.signaled && status.signal == SIGXFSZ) {
    result.message =
        how + ": the worker's log reached its size limit (the candidate printed too much)";
  } else if (limited && static_cast<double>(peak) >=
                            kNearLimit * static_cast<double>(options.memory_limit_bytes)) {
    result.outcome = CallOutcome::OutOfMemory;
    result.message = how + ", at a peak of " + mib(peak) +
                     " resident against the memory limit of " + mib(options.memory_limit_bytes) +
                     ": an allocation most likely failed";
  } else {
    result.message = how;
  }
  return result;
}

std::string read_log_tail(const std::filesystem::path& log_path, off_t start) {
  std::ifstream log(log_path, std::ios::binary);
  if (!log) return {};
  log.seekg(0, std::ios::end);
  off_t size = static_cast<off_t>(log.tellg());
  off_t from =
      start <= size ? std::max(start, size - kTailBytes) : std::max<off_t>(0, size - kTailBytes);
  log.seekg(from);
  std::string text(static_cast<std::size_t>(size - from), '\0');
  log.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(log.gcount()));
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = std::min(text.find('\n', begin), text.size());
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  std::string tail;
  std::size_t first = lines.size() > kTailLines ? lines.size() - kTailLines : 0;
  for (std::size_t i = first; i < lines.size(); ++i)
    tail += lines[i] + (i + 1 < lines.size() ? "\n" : "");
  return tail;
}

std::string log_suffix(const std::string& tail) {
  return tail.empty() ? std::string() : "; worker log:\n" + tail;
}

bool log_reports_allocation_failure(const std::string& tail) {
  std::string lower(tail);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("bad_alloc") != std::string::npos ||
         lower.find("cannot allocate memory") != std::string::npos ||
         lower.find("out of memory") != std::string::npos;
}

}  // namespace kernelarc
