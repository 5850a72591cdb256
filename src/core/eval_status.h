// What the guard concluded about one solution on one workload, kept as this enum by every layer
// and turned into SOL-ExecBench's names only where it is written out (traces, the store, prompts).
#pragma once

#include <optional>
#include <string_view>

namespace kernelarc {

enum class EvalStatus {
  Passed,
  IncorrectShape,
  IncorrectNumerical,
  IncorrectDtype,
  RuntimeError,
  CompileError,
  Timeout,
  RewardHack,
  InvalidReference,
  /// Never the guard's: a code synthesizer gave no program to evaluate (kernelarc's own name).
  SynthesisFailed,
};

/// "PASSED", "INCORRECT_NUMERICAL", ... as SOL-ExecBench writes them; "SYNTHESIS_FAILED".
std::string_view status_name(EvalStatus status);
/// The status status_name names; nullopt for any other text.
std::optional<EvalStatus> status_from_name(std::string_view name);

}  // namespace kernelarc
