// Ctrl-C and SIGTERM during `kernelarc optimize`'s search: the first asks the search to stop
// after the candidates in flight (a draw of the PyTorch reference under way ends at once: the
// oracles read the flag too) and to leave its run stopped, to be resumed; the handler then
// steps aside, so that a second one ends the process at once.
#pragma once

#include <atomic>

namespace kernelarc {

/// While it lives, SIGINT and SIGTERM set flag() to their number (it is 0 until one comes);
/// its end gives both their default action back.
class StopOnInterrupt {
 public:
  StopOnInterrupt();
  ~StopOnInterrupt();
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;

  const std::atomic<int>& flag() const;
};

}  // namespace kernelarc
