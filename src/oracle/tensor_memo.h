// The oracle's trial tensors kept in memory between candidates: the guard reads every trial's
// inputs and expected outputs for every candidate, and reading a 128 MiB safetensors file back
// each time cost more than the kernel's whole evaluation.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <string>

#include "core/tensor.h"

namespace kernelarc {

/// Least-recently-used, bounded by the bytes of the tensors it holds (never holds more than the
/// bound; a map larger than the bound is not kept).
class TensorMemo {
 public:
  explicit TensorMemo(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  /// The map stored under `key`, or null.
  std::shared_ptr<const TensorMap> find(const std::string& key);
  /// Stores `tensors` under `key` (replacing it), dropping the least recently used maps until
  /// it fits; returns it either way.
  std::shared_ptr<const TensorMap> put(const std::string& key, TensorMap tensors);
  void erase(const std::string& key);

  std::size_t bytes() const { return bytes_; }

  /// A quarter of the machine's memory, at most 16 GiB: the default bound.
  static std::size_t default_max_bytes();

 private:
  struct Slot {
    std::shared_ptr<const TensorMap> tensors;
    std::size_t bytes = 0;
    std::list<std::string>::iterator use;
  };
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::map<std::string, Slot> slots_;
  std::list<std::string> uses_;  ///< most recent first
};

}  // namespace kernelarc
