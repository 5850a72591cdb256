// A line diff for the report's "winner against its parent": the longest common subsequence of
// lines, printed as kept, added and removed lines in order, as `diff -u` would show them without
// the hunk headers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kernelarc {

struct DiffLine {
  char op = ' ';  ///< ' ' kept, '+' added, '-' removed
  std::string text;
};

/// The lines of `after` against `before`; nullopt when the two files together exceed
/// `max_lines` (the table is quadratic in them: 4000 lines are 4 million cells).
std::optional<std::vector<DiffLine>> diff_lines(const std::string& before, const std::string& after,
                                                std::size_t max_lines = 4000);

}  // namespace kernelarc
