// A family recognised from a definition's tensors and text rather than by tracing its
// reference: what the signature matchers (recognize_attention, recognize_moe) return.
#pragma once

#include <initializer_list>
#include <string>

#include "lower/family_match.h"

namespace kernelarc {

struct FamilySignature {
  FamilyMatch match;  ///< the family with the inferred op_params
  std::string bytes;  ///< the bytes an ideal kernel moves; empty = derived elsewhere
  std::string flops;  ///< empty where the data decides it (ragged lengths, routing)
};

/// Whether `text` contains any of `words`.
bool mentions(const std::string& text, std::initializer_list<const char*> words);

}  // namespace kernelarc
