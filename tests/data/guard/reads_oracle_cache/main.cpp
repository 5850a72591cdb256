// Guard test case "reads_oracle_cache" for problems/cpu/rmsnorm_f32: looks for the oracle's cache
// of expected outputs where the guard keeps it (under the parent's working directory and the
// directories on its command line, and in the guard tests' /tmp/kernelarc-guard-test-<ppid>-N
// workspaces) and opens an *.expected.safetensors file. Had it read one, it could copy the answer
// instead of computing; here it then returns without computing, so the test fails (as it does
// when no file is found). The worker's Landlock rules hide the workspace: the listing or the open
// is refused and the call fails with the errno text. Expected status: RUNTIME_ERROR.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kernelarc/abi.h"

namespace {

char g_error[512];

struct Search {
  std::string found;    ///< the first expected-output file seen
  std::string refused;  ///< the first access the kernel refused, with its errno text
};

void note_refusal(Search& search, const std::string& path) {
  if (search.refused.empty() && (errno == EACCES || errno == EPERM)) {
    search.refused = path + ": " + std::strerror(errno);
  }
}

bool is_directory(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

/// Depth-first through `directory`, `depth` levels down at most.
void walk(const std::string& directory, int depth, Search& search) {
  DIR* listing = opendir(directory.c_str());
  if (!listing) {
    note_refusal(search, directory);
    return;
  }
  std::vector<std::string> children;
  while (const dirent* entry = readdir(listing)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = directory + "/" + name;
    const std::string suffix = ".expected.safetensors";
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      search.found = path;
      break;
    }
    if (depth > 0 && entry->d_type == DT_DIR) children.push_back(path);
  }
  closedir(listing);
  for (const auto& child : children) {
    if (!search.found.empty()) return;
    walk(child, depth - 1, search);
  }
}

std::string read_text(const std::string& path, Search& search) {
  std::ifstream file(path, std::ios::binary);
  if (!file) note_refusal(search, path);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

/// Where the guard's workspace may be: the parent's working directory, the directories on its
/// command line (also as --flag=DIR), and the guard tests' scratch workspaces.
std::vector<std::string> candidate_roots(Search& search) {
  const std::string parent = "/proc/" + std::to_string(getppid());
  std::vector<std::string> roots;
  char cwd[4096];
  const ssize_t length = readlink((parent + "/cwd").c_str(), cwd, sizeof cwd - 1);
  if (length > 0) {
    roots.emplace_back(cwd, static_cast<std::size_t>(length));
  } else {
    note_refusal(search, parent + "/cwd");
  }
  const std::string cmdline = read_text(parent + "/cmdline", search);
  for (std::size_t start = 0; start < cmdline.size();) {
    std::string argument = cmdline.substr(start, cmdline.find('\0', start) - start);
    start += argument.size() + 1;
    if (const auto equals = argument.find('='); equals != std::string::npos) {
      argument = argument.substr(equals + 1);
    }
    if (!argument.empty() && argument[0] == '/' && is_directory(argument))
      roots.push_back(argument);
  }
  // Named directly as well as listed: a /tmp that cannot be listed still lets a known name open.
  const std::string prefix = "kernelarc-guard-test-" + std::to_string(getppid()) + "-";
  for (int i = 0; i < 64; ++i) {
    const std::string path = "/tmp/" + prefix + std::to_string(i);
    if (is_directory(path)) roots.push_back(path);
  }
  return roots;
}

/// The first expected-output file found, or empty with g_error set.
std::string find_expected_file() {
  Search search;
  for (const auto& root : candidate_roots(search)) {
    walk(root, 3, search);
    if (!search.found.empty()) return search.found;
  }
  if (!search.refused.empty()) {
    std::snprintf(g_error, sizeof g_error, "looking for the oracle's cache: %s",
                  search.refused.c_str());
  } else {
    std::snprintf(g_error, sizeof g_error, "found no oracle cache file");
  }
  return {};
}

}  // namespace

extern "C" const char* ka_last_error(void) {
  return g_error;
}

extern "C" int ka_run(const ka_tensor* /*inputs*/, int n_inputs, ka_tensor* /*outputs*/,
                      int n_outputs, void* /*stream*/, void* /*workspace*/,
                      size_t /*workspace_bytes*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const std::string expected = find_expected_file();
  if (expected.empty()) return 2;
  const int fd = open(expected.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::snprintf(g_error, sizeof g_error, "opening %s: %s", expected.c_str(),
                  std::strerror(errno));
    return 2;
  }
  char header[8];
  const ssize_t read_bytes = read(fd, header, sizeof header);
  close(fd);
  if (read_bytes < 0) {
    std::snprintf(g_error, sizeof g_error, "reading %s: %s", expected.c_str(),
                  std::strerror(errno));
    return 2;
  }
  return 0;  // the answer is readable: a real cheat would copy it out here
}
