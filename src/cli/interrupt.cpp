#include "cli/interrupt.h"

#include <signal.h>
#include <unistd.h>

namespace kernelarc {
namespace {

// A handler may only touch lock-free atomics and call async-signal-safe functions (write).
std::atomic<int> requested{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_interrupt(int signal) {
  requested.store(signal, std::memory_order_relaxed);
  constexpr char kNote[] =
      "\nkernelarc: stopping after the candidates in flight; the run stays resumable "
      "(once more to stop at once)\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, kNote, sizeof kNote - 1);
}

void handle(void (*handler)(int), int flags) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = flags;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

StopOnInterrupt::StopOnInterrupt() {
  requested.store(0);
  // The second signal takes its default action; system calls go on where they were.
  handle(on_interrupt, SA_RESETHAND | SA_RESTART);
}

StopOnInterrupt::~StopOnInterrupt() {
  handle(SIG_DFL, 0);
}

const std::atomic<int>& StopOnInterrupt::flag() const {
  return requested;
}

}  // namespace kernelarc
