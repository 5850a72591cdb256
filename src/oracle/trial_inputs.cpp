#include "oracle/trial_inputs.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace kernelarc {

TrialInputs::TrialInputs(std::shared_ptr<const TensorMap> drawn,
                         std::shared_ptr<const TensorMap> shared,
                         std::vector<std::string> shared_names)
    : drawn_(std::move(drawn)), shared_(std::move(shared)), shared_names_(std::move(shared_names)) {
  if (!shared_) shared_names_.clear();
}

const HostTensor* TrialInputs::find(const std::string& name) const {
  const bool is_shared =
      std::find(shared_names_.begin(), shared_names_.end(), name) != shared_names_.end();
  const TensorMap& holder = is_shared ? *shared_ : *drawn_;
  const auto found = holder.find(name);
  return found == holder.end() ? nullptr : &found->second;
}

const HostTensor& TrialInputs::at(const std::string& name) const {
  if (const HostTensor* tensor = find(name)) return *tensor;
  throw std::out_of_range("no input named '" + name + "'");
}

TensorMap TrialInputs::copy() const {
  TensorMap all = *drawn_;
  for (const std::string& name : shared_names_) all[name] = shared_->at(name);
  return all;
}

}  // namespace kernelarc
