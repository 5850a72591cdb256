#include "optimize/task_pool.h"

#include <stdexcept>

namespace kernelarc {

TaskPool::TaskPool(std::size_t threads) {
  if (threads == 0) throw std::invalid_argument("TaskPool: no thread");
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { serve(); });
}

TaskPool::~TaskPool() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

std::future<void> TaskPool::run(std::function<void()> job) {
  std::packaged_task<void()> task(std::move(job));
  std::future<void> done = task.get_future();
  {
    const std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(task));
  }
  ready_.notify_one();
  return done;
}

void TaskPool::serve() {
  while (true) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    std::packaged_task<void()> task = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    task();
  }
}

}  // namespace kernelarc
