#include "oracle/tensor_memo.h"

#include <algorithm>

#include "core/host_memory.h"

namespace kernelarc {

std::shared_ptr<const TensorMap> TensorMemo::find(const std::string& key) {
  const auto slot = slots_.find(key);
  if (slot == slots_.end()) return nullptr;
  uses_.splice(uses_.begin(), uses_, slot->second.use);
  return slot->second.tensors;
}

std::shared_ptr<const TensorMap> TensorMemo::put(const std::string& key, TensorMap tensors) {
  erase(key);
  std::size_t bytes = 0;
  for (const auto& [name, tensor] : tensors) bytes += tensor.nbytes();
  auto shared = std::make_shared<const TensorMap>(std::move(tensors));
  if (bytes > max_bytes_) return shared;
  while (bytes_ + bytes > max_bytes_ && !uses_.empty()) erase(uses_.back());
  uses_.push_front(key);
  slots_[key] = {shared, bytes, uses_.begin()};
  bytes_ += bytes;
  return shared;
}

void TensorMemo::erase(const std::string& key) {
  const auto slot = slots_.find(key);
  if (slot == slots_.end()) return;
  bytes_ -= slot->second.bytes;
  uses_.erase(slot->second.use);
  slots_.erase(slot);
}

std::size_t TensorMemo::default_max_bytes() {
  constexpr std::size_t kCeiling = std::size_t{16} << 30;
  const auto physical = physical_memory_bytes();
  if (!physical) return std::size_t{1} << 30;
  return std::min(kCeiling, static_cast<std::size_t>(*physical) / 4);
}

}  // namespace kernelarc
