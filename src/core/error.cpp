#include "core/error.h"

#include <string.h>

#include <string>

#include <fmt/format.h>

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

std::string interruption_text(int signal) {
  const char* name = sigabbrev_np(signal);
  return name ? fmt::format("interrupted by SIG{}", name)
              : fmt::format("interrupted by signal {}", signal);
}

Interrupted::Interrupted(int signal)
    : std::runtime_error(interruption_text(signal)), signal_(signal) {}

}  // namespace kernelarc
