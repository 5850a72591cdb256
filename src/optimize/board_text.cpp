#include "optimize/board_text.h"

#include <fmt/format.h>

namespace kernelarc {

std::string restart_text(std::string_view agent, std::string_view template_name) {
  return fmt::format("{} plateaued; restarted from a fresh point of {}", agent, template_name);
}

std::string board_start_text(std::string_view agent, int applied, std::string_view template_name) {
  return fmt::format(
      "{} plateaued; drafted a new start from {} board conclusion(s) on {} applied together to "
      "its best",
      agent, applied, template_name);
}

std::string start_from_text(std::string_view agent, std::string_view reason,
                            std::string_view other_agent, int64_t other_candidate,
                            std::string_view other_template, std::string_view other_point) {
  return fmt::format("{} {}; took {}'s best (candidate {}, {} {}) as a new start for its own knobs",
                     agent, reason, other_agent, other_candidate, other_template, other_point);
}

}  // namespace kernelarc
