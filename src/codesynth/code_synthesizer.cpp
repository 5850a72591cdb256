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

std::vector<std::string> knowledge_for_request(const std::vector<std::string>& pool, uint64_t seed,
                                               std::size_t count) {
  if (pool.size() <= count) return pool;
  std::vector<std::string> chosen;
  const std::size_t start = static_cast<std::size_t>(seed % pool.size());
  for (std::size_t index = 0; index < count; ++index)
    chosen.push_back(pool[(start + index) % pool.size()]);
  return chosen;
}

}  // namespace kernelarc
