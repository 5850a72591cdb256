#include "codesynth/code_synthesizer.h"

namespace kernelarc {

const char* synthesis_move_name(SynthesisMove move) {
  switch (move) {
    case SynthesisMove::Draft:
      return "draft";
    case SynthesisMove::Improve:
      return "improve";
    case SynthesisMove::Crossover:
      return "crossover";
    case SynthesisMove::Repair:
      return "repair";
  }
  return "?";
}

}  // namespace kernelarc
