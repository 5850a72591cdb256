// Wall seconds of a guard phase, added to the trace so that a slow evaluation shows where its
// time went.
#pragma once

#include <chrono>
#include <string>
#include <utility>

#include "core/elapsed.h"
#include "core/json_fields.h"

namespace kernelarc {

/// Adds the seconds between construction and destruction to extra["guard_seconds"] at `phase`,
/// a path such as "timing" or "parts/worker". The trace's extra is held, not the field: JSON
/// objects move their members when a key is added, so a reference to the field could dangle.
class PhaseTimer {
 public:
  PhaseTimer(OrderedJson& extra, std::string phase) : extra_(extra), phase_(std::move(phase)) {}
  ~PhaseTimer() { add(extra_, phase_, seconds_since(start_)); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

  /// Adds `seconds` to extra["guard_seconds"] at `phase`, starting from 0.
  static void add(OrderedJson& extra, const std::string& phase, double seconds) {
    auto& field = extra[OrderedJson::json_pointer("/guard_seconds/" + phase)];
    field = (field.is_number() ? field.get<double>() : 0.0) + seconds;
  }

 private:
  OrderedJson& extra_;
  std::string phase_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace kernelarc
