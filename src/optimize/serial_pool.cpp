#include "optimize/serial_pool.h"

#include <stdexcept>

namespace kernelarc {

void SerialPool::submit(uint64_t ticket, const Solution& solution) {
  submitted_.emplace_back(ticket, solution);
}

EvaluationPool::Done SerialPool::next() {
  if (submitted_.empty()) throw std::logic_error("SerialPool::next: nothing submitted");
  auto [ticket, solution] = std::move(submitted_.front());
  submitted_.pop_front();
  return {ticket, evaluator_->evaluate(solution), ""};
}

}  // namespace kernelarc
