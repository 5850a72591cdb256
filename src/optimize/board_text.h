// The lines an agent posts on the board when it leaves its own line of search (a redirect),
// one function per kind of post, so that every text is built in one place and tested whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kernelarc {

/// "memory plateaued; restarted from a fresh point of row_reduce".
std::string restart_text(std::string_view agent, std::string_view template_name);

/// "memory plateaued; drafted a new start from 2 board conclusion(s) on row_reduce applied
/// together to its best".
std::string board_start_text(std::string_view agent, int applied, std::string_view template_name);

/// "memory plateaued; took compute's best (candidate 7, row_reduce VEC=8) as a new start for its
/// own knobs"; `reason` is what happened to the agent ("plateaued", "was beaten beyond noise").
std::string start_from_text(std::string_view agent, std::string_view reason,
                            std::string_view other_agent, int64_t other_candidate,
                            std::string_view other_template, std::string_view other_point);

}  // namespace kernelarc
