#include "store/workspace.h"

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {
namespace {

// Runs before the members are built, so that they find the folder in place.
const std::filesystem::path& created_folder(const std::filesystem::path& root) {
  std::error_code error;
  if (std::filesystem::exists(root, error) && !std::filesystem::is_directory(root, error)) {
    throw InputError(
        fmt::format("{}: expected a workspace directory, found a file", root.string()));
  }
  std::filesystem::create_directories(root, error);
  if (error) {
    throw InputError(
        fmt::format("{}: cannot create the workspace: {}", root.string(), error.message()));
  }
  return root;
}

}  // namespace

Workspace::Workspace(const std::filesystem::path& root)
    : root_(created_folder(root)), objects_(root_ / "objects"), database_(root_ / "kernelarc.db") {}

}  // namespace kernelarc
