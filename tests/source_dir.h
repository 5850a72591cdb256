#pragma once
// The repository's root (the tests' targets define KERNELARC_SOURCE_DIR), for tests that read its
// problems, templates and scripts. One definition: files of a layer are compiled in unity
// batches, where a copy per file would be a redefinition.
#include <filesystem>

inline const std::filesystem::path kSource = KERNELARC_SOURCE_DIR;
