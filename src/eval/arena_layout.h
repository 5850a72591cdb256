// Placing a workload's tensors in the worker's shared arena, and moving them in and out.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/worker/worker.h"
#include "core/problem.h"
#include "core/tensor.h"
#include "oracle/trial_inputs.h"

namespace kernelarc {

struct ArenaLayout {
  std::vector<ArenaTensor> inputs;   ///< definition order
  std::vector<ArenaTensor> outputs;  ///< definition order
  std::size_t bytes = 0;
};

/// Inputs then outputs, each 256-byte aligned, with their concrete shapes.
ArenaLayout make_arena_layout(const Definition& def, const AxisValues& axes);

/// Copies the named inputs into the arena; InputError if one is missing or has the wrong
/// shape or dtype (a broken oracle cache).
void write_inputs(std::span<std::byte> arena, const ArenaLayout& layout, const Definition& def,
                  const TrialInputs& inputs);
/// The outputs where the worker left them, by name, read in place: valid until the arena is
/// written or remapped.
std::map<std::string, TensorView> output_views(std::span<const std::byte> arena,
                                               const ArenaLayout& layout, const Definition& def);
/// The name of the first input whose arena bytes differ from `inputs`, if any.
std::optional<std::string> find_modified_input(std::span<const std::byte> arena,
                                               const ArenaLayout& layout, const Definition& def,
                                               const TrialInputs& inputs);

}  // namespace kernelarc
