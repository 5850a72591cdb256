// Writing a file so that a reader (another thread or process) sees the old content or the new,
// never half of it.
#pragma once

#include <filesystem>
#include <string_view>

namespace kernelarc {

/// Writes through a temporary file in the same directory (unique per process and thread, so
/// concurrent writers of one path do not share it) and a rename. InternalError on an I/O error;
/// the temporary file is removed then.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace kernelarc
