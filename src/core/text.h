// Small text and statistics helpers that several layers need alike.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kernelarc {

/// `text` without leading and trailing white space (std::isspace).
std::string_view trim(std::string_view text);

/// `text` in lower case (ASCII letters; other bytes unchanged).
std::string to_lower(std::string_view text);

/// The first line of a file ("" when it cannot be read), e.g. a sysfs value.
std::string read_first_line(const std::filesystem::path& path);

/// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

/// A size in decimal units to three digits: "8.59 GB", "1.5 MB", "24 bytes".
std::string byte_size_text(double bytes);

}  // namespace kernelarc
