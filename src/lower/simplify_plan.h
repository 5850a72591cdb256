// An algebraic pass over a kernel plan (docs/RECOGNITION.md §2): the lowering builds the coords
// of views by rebuilding a linear position and splitting it again with floordiv and mod, which a
// generated kernel pays as int64 divisions per element. This pass rewrites every integer
// expression of the plan (load and store coords, and the integer parts of store, stage and scan
// values) into a plain sum of index terms wherever the ranges of the kernel's index dims prove
// a division trivial, keeping Python's floor semantics exactly. Float arithmetic is untouched.
// A where() whose condition the ranges decide keeps only its branch, and a load no expression
// reads any more leaves the kernel.
#pragma once

#include "core/json_fields.h"
#include "core/problem.h"

namespace kernelarc {

/// The same plan with its integer expressions simplified; equal values at every point.
OrderedJson simplify_plan(const OrderedJson& plan, const Definition& definition);

}  // namespace kernelarc
