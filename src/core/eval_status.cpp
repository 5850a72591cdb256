#include "core/eval_status.h"

namespace kernelarc {

std::string_view status_name(EvalStatus status) {
  switch (status) {
    case EvalStatus::Passed:
      return "PASSED";
    case EvalStatus::IncorrectShape:
      return "INCORRECT_SHAPE";
    case EvalStatus::IncorrectNumerical:
      return "INCORRECT_NUMERICAL";
    case EvalStatus::IncorrectDtype:
      return "INCORRECT_DTYPE";
    case EvalStatus::RuntimeError:
      return "RUNTIME_ERROR";
    case EvalStatus::CompileError:
      return "COMPILE_ERROR";
    case EvalStatus::Timeout:
      return "TIMEOUT";
    case EvalStatus::RewardHack:
      return "REWARD_HACK";
    case EvalStatus::InvalidReference:
      return "INVALID_REFERENCE";
    case EvalStatus::SynthesisFailed:
      return "SYNTHESIS_FAILED";
  }
  return "UNKNOWN";
}

std::optional<EvalStatus> status_from_name(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(EvalStatus::SynthesisFailed); ++i)
    if (status_name(static_cast<EvalStatus>(i)) == name) return static_cast<EvalStatus>(i);
  return std::nullopt;
}

}  // namespace kernelarc
