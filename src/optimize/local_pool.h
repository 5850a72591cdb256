// The evaluation pool of one host: one evaluator per local device (a GPU, or a disjoint set of
// CPU cores), each on a thread of its own that takes the next submitted candidate when it is
// free. A device measures one candidate at a time, so timing stays exclusive per device.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "optimize/evaluation_pool.h"
#include "optimize/evaluator.h"

namespace kernelarc {

class LocalEvaluationPool : public EvaluationPool {
 public:
  /// One evaluator per device and where it measures ("cuda:1", "cpu 2-3"), in device order.
  /// The evaluators must outlive the pool, and none may be used elsewhere while a submitted
  /// evaluation is unfinished.
  struct Slot {
    CandidateEvaluator* evaluator = nullptr;
    std::string where;
  };
  explicit LocalEvaluationPool(std::vector<Slot> slots);
  /// Waits for the evaluations in flight to end (their results are dropped).
  ~LocalEvaluationPool() override;
  LocalEvaluationPool(const LocalEvaluationPool&) = delete;
  LocalEvaluationPool& operator=(const LocalEvaluationPool&) = delete;

  std::size_t capacity() const override { return slots_.size(); }
  void submit(uint64_t ticket, const Solution& solution) override;
  /// The next finished evaluation, in the order they finish; an evaluator's exception is
  /// rethrown here.
  Done next() override;
  std::optional<Done> next_within(std::chrono::milliseconds wait) override;

 private:
  struct Finished {
    Done done;
    std::exception_ptr error;
  };
  void serve(const Slot& slot);
  /// Takes the oldest finished evaluation (the lock held), rethrowing an evaluator's exception.
  Done take_finished();

  std::vector<Slot> slots_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable result_ready_;
  std::deque<std::pair<uint64_t, Solution>> waiting_;
  std::deque<Finished> finished_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kernelarc
