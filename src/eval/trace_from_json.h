// The inverse of trace_to_json, for traces measured on another host (the Redis work queue,
// src/distributed) that the orchestrator stores as if measured here.
#pragma once

#include <string>

#include "eval/trace.h"

namespace kernelarc {

/// The trace trace_to_json wrote; what it derives (SOL score, speedup) is derived again. A
/// number written as null (JSON has no NaN or infinity) reads back as NaN. InputError naming
/// `where` and the field for anything else.
Trace trace_from_json(const OrderedJson& json, const std::string& where);

}  // namespace kernelarc
