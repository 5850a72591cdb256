// The SIZEs of a plan over axes a binder can read from the tensors. A var axis that no tensor's
// shape names (SOL-ExecBench's batch_size and seq_len when only batch_seq_len = batch_size *
// seq_len sizes a tensor) has no value at run time, yet the tracer writes every size over var
// axes ("batch_size*seq_len*4096"). Where the definition names such a product as an expr axis
// that a shape does name, the product is written as that axis ("batch_seq_len*4096").
#pragma once

#include "core/json_fields.h"
#include "core/problem.h"

namespace kernelarc {

/// `plan` with every monomial SIZE rewritten so that, where the definition's expr axes allow,
/// it names no var axis that is missing from every tensor shape; other SIZEs as they were.
OrderedJson name_readable_axes(const OrderedJson& plan, const Definition& definition);

}  // namespace kernelarc
