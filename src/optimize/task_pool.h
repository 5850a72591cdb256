// A fixed number of threads that run queued jobs in the order they were queued: the search's
// compiles ahead, bounded by the host's cores however many candidates wait (one thread per
// candidate would start a compiler for each of them at once).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace kernelarc {

class TaskPool {
 public:
  explicit TaskPool(std::size_t threads);
  /// Waits for the running jobs; the queued ones are dropped (their futures then hold
  /// std::future_error, broken_promise).
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  /// Queues `job`; the future is ready when it has run (holding what it threw).
  std::future<void> run(std::function<void()> job);

 private:
  void serve();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kernelarc
