// One trial's input tensors as the oracle holds them: those drawn for the trial, and the shared
// parameters of its workload (oracle/shared_parameters.h), held by reference. Copying a MoE
// layer's 1.2 GB of expert weights into every trial's map cost the guard ~2 s a call on the CPU
// machine (fresh pages zeroed, then filled), and the copies crowded the oracle's memo so that
// a candidate's 14 draws evicted each other in turn.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kernelarc {

class TrialInputs {
 public:
  /// `shared` holds the tensors named in `shared_names` (null when the trial shares none); every
  /// other input is in `drawn`.
  TrialInputs(std::shared_ptr<const TensorMap> drawn, std::shared_ptr<const TensorMap> shared,
              std::vector<std::string> shared_names);

  /// The input named `name`, or null.
  const HostTensor* find(const std::string& name) const;
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  /// The input named `name`; std::out_of_range when there is none.
  const HostTensor& at(const std::string& name) const;
  /// Every input by name, copied: for the callers that hand one map on.
  TensorMap copy() const;

 private:
  std::shared_ptr<const TensorMap> drawn_;
  std::shared_ptr<const TensorMap> shared_;
  std::vector<std::string> shared_names_;
};

}  // namespace kernelarc
