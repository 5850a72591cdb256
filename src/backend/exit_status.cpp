#include "backend/exit_status.h"

#include <signal.h>

#include <cstring>

#include "core/text.h"

namespace kernelarc {
namespace {

/// ": it peaked at 16.1 GB resident, its workload's inputs and outputs take 8.59 GB, this
/// machine has 22.1 GB available", each part only where known; "" when none is.
std::string memory_facts(const ExitStatus& status, const ExitContext& context) {
  std::string facts;
  auto add = [&](const std::string& fact) { facts += (facts.empty() ? ": " : ", ") + fact; };
  if (status.max_rss_kib > 0)
    add("it peaked at " + byte_size_text(static_cast<double>(status.max_rss_kib) * 1024) +
        " resident");
  if (context.workload_bytes)
    add("its workload's inputs and outputs take " + byte_size_text(*context.workload_bytes));
  if (context.available_bytes)
    add("this machine has " + byte_size_text(static_cast<double>(*context.available_bytes)) +
        " available");
  return facts;
}

}  // namespace

bool killed_for_memory(const ExitStatus& status) {
  return status.signaled && status.signal == SIGKILL && !status.killed_by_parent;
}

std::string describe_exit(const ExitStatus& status, const ExitContext& context) {
  const std::string during = context.during.empty() ? "" : " " + context.during;
  if (!status.signaled) return "exited with status " + std::to_string(status.exit_code) + during;
  const char* abbreviation = sigabbrev_np(status.signal);
  const std::string name =
      abbreviation ? std::string("SIG") + abbreviation : std::to_string(status.signal);
  std::string how = "killed by signal " + name + " (" + strsignal(status.signal) + ")" + during;
  if (killed_for_memory(status))
    how += ", most likely by the kernel's out-of-memory killer" + memory_facts(status, context);
  return how;
}

}  // namespace kernelarc
