// The pieces of ncu's CSV output (internal to the diagnosis layer): quoted fields that may hold
// commas, and numbers with thousands separators and scaled units.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kernelarc {

/// ncu's output by line, without the line ends ("\n" or "\r\n").
std::vector<std::string> split_lines(std::string_view text);

/// The fields of one CSV line: RFC 4180 quoting ("a, b" is one field, "" inside quotes is a
/// quote). nullopt for a line whose quotes do not close.
std::optional<std::vector<std::string>> split_csv_line(std::string_view line);

/// "1,234,567" -> 1234567, "4.2e-05" -> 4.2e-05; nullopt for "n/a", "" or anything else that
/// is not a number.
std::optional<double> parse_ncu_number(std::string_view text);

/// The factor from `unit` to its base unit and the base unit's name: "Kbyte" -> {1e3, "byte"},
/// "usecond" -> {1e3, "nsecond"}, "%" -> {1, "%"}. Units without a known prefix map to
/// themselves with factor 1.
std::pair<double, std::string> ncu_base_unit(std::string_view unit);

}  // namespace kernelarc
