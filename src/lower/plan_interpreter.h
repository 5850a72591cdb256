// A reference interpreter of kernel plans (docs/RECOGNITION.md §2): runs every kernel at
// concrete sizes in double precision, rounding each store to its buffer's dtype, so that a plan
// can be checked against the PyTorch reference without generating code. Temps and outputs start
// as NaN, so a read of an unwritten element or an output left unwritten shows up in a
// comparison; an out-of-range load or store throws InputError naming the buffer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/expr.h"
#include "core/json_fields.h"

namespace kernelarc {

/// Buffers by plan name, row-major, every element as a double already in its buffer's dtype.
using PlanBuffers = std::map<std::string, std::vector<double>>;

/// Runs `plan` with `inputs` (every input buffer of the plan; a scalar input has one element)
/// and returns every buffer after the last kernel. `axes` holds every axis value (const, var
/// and expr). Throws InputError when the plan is malformed or indexes outside a buffer.
PlanBuffers run_plan(const OrderedJson& plan, const AxisValues& axes, const PlanBuffers& inputs,
                     const std::map<std::string, std::vector<int64_t>>& output_shapes);

/// The points run_plan visits: for each kernel the size of its index space (a reduce kernel's
/// times one more than its stages; a matmul's batch*m*n*k, its multiply-adds). For deciding
/// whether a plan is small enough to interpret.
int64_t plan_work(const OrderedJson& plan, const AxisValues& axes);

}  // namespace kernelarc
