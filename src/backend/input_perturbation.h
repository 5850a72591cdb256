// Makes every call's inputs new: the lowest bit of a few random finite, non-zero elements of each
// floating input is flipped after the input is copied in. A result cache keyed on the contents
// (a full hash of the inputs) then never hits, so a timed call cannot return a stored result; a
// change of one unit in the last place leaves the computation and its cost as they were.
#pragma once

#include <cstddef>

#include "backend/device.h"
#include "core/dtype.h"
#include "core/rng.h"

namespace kernelarc {

/// Elements flipped per floating input and call.
inline constexpr int kPerturbedElements = 4;

/// Flips up to kPerturbedElements elements of the tensor at `device_data` (numel elements of
/// `dtype`), reading their values from `pristine`, the host copy of the same contents. Does
/// nothing for non-floating dtypes and tensors of fewer than two elements.
void perturb_input(Device& device, std::byte* device_data, const std::byte* pristine, DType dtype,
                   std::size_t numel, Rng& rng);

}  // namespace kernelarc
