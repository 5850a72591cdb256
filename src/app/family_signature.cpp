#include "app/family_signature.h"

#include <algorithm>

namespace kernelarc {

bool mentions(const std::string& text, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const char* word) { return text.find(word) != std::string::npos; });
}

}  // namespace kernelarc
