// Family "fused": a kernel plan (synth/kernel_plan.h, docs/RECOGNITION.md §2) generated into
// code. The binder (family_fused.cpp) parses kernelarc.op_params as a plan, checks it against
// the definition and calls the generator of the template's target.
//
// What every generated ka_problem.h provides to its template (docs/TEMPLATES.md, "Family:
// fused"), besides the family.h conventions: struct KaArgs and ka_bind, and the workspace the
// temps live in, whose size the binding names WORKSPACE_BYTES (each temp aligned to 256 bytes,
// in the plan's order; a template.json writes "workspace_bytes": "WORKSPACE_BYTES").
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/problem.h"
#include "synth/kernel_plan.h"
#include "synth/kernel_template.h"
#include "synth/library_matmul.h"

namespace kernelarc {

/// ka_problem.h of a CPU template (family_fused_cpu.cpp).
std::string generate_fused_header_cpu(const KernelPlan& plan, const Definition& definition,
                                      const KernelTemplate& kernel);

/// ka_problem.h of a CUDA template (family_fused_cuda.cpp), from the plan with its library
/// routes (synth/library_matmul.h).
std::string generate_fused_header_cuda(const LibraryPlan& plan, const Definition& definition,
                                       const KernelTemplate& kernel);

/// The byte offset of each temp in the workspace (in plan order, empty strings for other
/// buffers) as expressions over the axes, and the total: each temp starts at a multiple of 256.
struct FusedWorkspace {
  std::vector<std::string> offsets;  ///< per buffer of the plan; "" unless a temp
  std::string total = "0";
};
FusedWorkspace fused_workspace(const KernelPlan& plan);

/// The axes generated code cannot know: var axes no tensor's shape names, and expr axes no shape
/// names that are computed from one of those. The code leaves them out (an expr axis a shape
/// names is read from that shape when its expression needs one of them). TemplateMismatch,
/// naming the field, when a SIZE of the plan names one.
std::set<std::string> unreadable_axes(const KernelPlan& plan, const Definition& definition);

/// How many elements `buffer` holds, as a SIZE over the definition's axes: a temp's
/// `elements`, the product of a tensor's shape ("1" for a scalar). What a scatter kernel's
/// run-time index check compares its addresses with.
std::string plan_buffer_elements(const PlanBuffer& buffer, const Definition& definition);

}  // namespace kernelarc
