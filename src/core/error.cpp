#include "core/error.h"

#include <string>

namespace kernelarc {

void throw_input_error(std::string_view where, std::string_view field, std::string_view problem) {
  std::string message(where);
  if (!field.empty()) {
    message += ": ";
    message += field;
  }
  message += ": ";
  message += problem;
  throw InputError(message);
}

}  // namespace kernelarc
