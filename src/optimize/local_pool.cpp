#include "optimize/local_pool.h"

#include <stdexcept>

namespace kernelarc {

LocalEvaluationPool::LocalEvaluationPool(std::vector<Slot> slots) : slots_(std::move(slots)) {
  if (slots_.empty()) throw std::invalid_argument("LocalEvaluationPool: no device");
  for (const Slot& slot : slots_) threads_.emplace_back([this, &slot] { serve(slot); });
}

LocalEvaluationPool::~LocalEvaluationPool() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    waiting_.clear();
  }
  work_ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void LocalEvaluationPool::submit(uint64_t ticket, const Solution& solution) {
  {
    const std::lock_guard lock(mutex_);
    waiting_.emplace_back(ticket, solution);
  }
  work_ready_.notify_one();
}

EvaluationPool::Done LocalEvaluationPool::next() {
  std::unique_lock lock(mutex_);
  result_ready_.wait(lock, [this] { return !finished_.empty(); });
  return take_finished();
}

std::optional<EvaluationPool::Done> LocalEvaluationPool::next_within(
    std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  if (!result_ready_.wait_for(lock, wait, [this] { return !finished_.empty(); }))
    return std::nullopt;
  return take_finished();
}

EvaluationPool::Done LocalEvaluationPool::take_finished() {
  Finished finished = std::move(finished_.front());
  finished_.pop_front();
  if (finished.error) std::rethrow_exception(finished.error);
  return std::move(finished.done);
}

void LocalEvaluationPool::serve(const Slot& slot) {
  while (true) {
    std::unique_lock lock(mutex_);
    work_ready_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
    if (stopping_) return;
    auto [ticket, solution] = std::move(waiting_.front());
    waiting_.pop_front();
    lock.unlock();
    Finished finished{{ticket, {}, slot.where}, nullptr};
    try {
      finished.done.traces = slot.evaluator->evaluate(solution);
    } catch (...) {
      finished.error = std::current_exception();
    }
    lock.lock();
    finished_.push_back(std::move(finished));
    lock.unlock();
    result_ready_.notify_one();
  }
}

}  // namespace kernelarc
