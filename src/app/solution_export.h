// `kernelarc export`: a kernelarc solution rewritten as a solution that SOL-ExecBench's or
// FlashInfer-Bench's own harness builds (torch.utils.cpp_extension) and scores. The result is a
// PyTorch extension: a generated main.cpp whose `run` takes the definition's arguments as those
// harnesses pass them, and the solution's sources, wrapped so that each build of it (its knobs,
// or each shape variant's) is one set of translation units with symbols of its own.
//
//  * A kernel ABI solution (ka_run, CPU or CUDA): main.cpp describes the torch tensors as
//    ka_tensors, allocates the declared workspace and calls ka_run on the current stream.
//  * A device-only CUDA kernel (kernelarc.launch, built by NVRTC in kernelarc): one launcher .cu
//    per variant computes the launch from the expressions and launches the kernel as kernelarc's
//    backend does; main.cpp picks the variant by the `when` expressions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/problem.h"

namespace kernelarc {

enum class ExportFormat { SolExecBench, FlashInfer };

struct ExportOptions {
  ExportFormat format = ExportFormat::SolExecBench;
  /// true: outputs are passed after the inputs and written in place; false: `run` returns them.
  bool destination_passing_style = true;
  std::string name;  ///< empty: the solution's name with "_torch" appended
  /// The GPU the export is built for ("sm_90": the H200), with the "a" suffix added when the
  /// kernel needs it (wgmma), as kernelarc's backend chooses; kernelarc.arch overrides it.
  std::string arch = "sm_90";
};

/// "sol-execbench" or "flashinfer", as the command line spells them.
std::string_view export_format_name(ExportFormat format);
/// The format a command-line name stands for; nullopt for any other text.
std::optional<ExportFormat> export_format_from_name(std::string_view name);

/// The solution in the other project's form: binding "torch", entry point main.cpp::run, every
/// source inline. Throws InputError naming the solution's field when it cannot be exported (a
/// language kernelarc does not build, an existing binding, FlashInfer-Bench and an
/// architecture-specific target that its builder cannot be told) or the definition's field (an
/// axis that no argument carries).
Solution export_torch_solution(const Solution& solution, const Definition& definition,
                               const ExportOptions& options);

/// The exported solution as the format's solution.json: SOL-ExecBench's is kernelarc's own
/// solution writer; FlashInfer-Bench's names one `spec.language` and takes no compile options.
OrderedJson exported_solution_json(const Solution& exported, ExportFormat format);

}  // namespace kernelarc
