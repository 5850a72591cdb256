#include "oracle/python_host.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "backend/process.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "core/paths.h"

namespace kernelarc {
namespace {

// Long enough that the commands of one working session share a host, short enough that an
// idle machine (or CI after its tests) gets its memory back soon.
constexpr const char* kIdleSeconds = "120";
// A host that was just started imports torch before it answers: seconds on a loaded machine.
constexpr std::chrono::seconds kFirstReplyPatience{120};

std::filesystem::path host_script() {
  return data_dir() / "python" / "kernelarc_python_host.py";
}

/// Whether `interpreter` is a Python binary (an ELF file named python*, links resolved): a
/// wrapper script or another program is never handed the host script, whose arguments it
/// would take for its own.
bool is_python_binary(const std::string& interpreter) {
  std::error_code error;
  const std::filesystem::path resolved = std::filesystem::canonical(interpreter, error);
  if (error || !resolved.filename().string().starts_with("python")) return false;
  std::ifstream file(resolved, std::ios::binary);
  char magic[4] = {};
  return file.read(magic, sizeof magic) && std::string_view(magic, 4) ==
                                               "\x7f"
                                               "ELF";
}

bool host_turned_off() {
  const char* setting = std::getenv("KERNELARC_PYTHON_HOST");
  return setting != nullptr && std::string_view(setting) == "0";
}

/// The hosts' directory, made when missing; nullopt when it is not this user's alone.
std::optional<std::filesystem::path> host_directory() {
  std::filesystem::path directory;
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime == '/')
    directory = std::filesystem::path(runtime) / "kernelarc-python";
  else
    directory = "/tmp/kernelarc-python-" + std::to_string(getuid());
  ::mkdir(directory.c_str(), 0700);
  struct stat info {};
  if (::lstat(directory.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != getuid() ||
      (info.st_mode & 077) != 0)
    return std::nullopt;
  return directory;
}

std::string host_key(const std::string& interpreter, const std::vector<std::string>& environment) {
  std::ifstream script(host_script(), std::ios::binary);
  std::stringstream text;
  text << script.rdbuf();
  std::vector<std::string> sorted = environment;
  std::sort(sorted.begin(), sorted.end());
  ContentHasher hasher;
  hasher.add(interpreter).add(text.str());
  for (const std::string& entry : sorted) hasher.add(entry);
  return hasher.hex().substr(0, 24);
}

int connect_to(const std::filesystem::path& socket_path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = socket_path.string();
  if (path.size() >= sizeof address.sun_path) return -1;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Starts a host on `socket_path`; true once it listens (its starter process exited 0).
bool start_host(const std::string& interpreter, const std::filesystem::path& socket_path,
                const std::filesystem::path& log_path,
                const std::vector<std::string>& environment) {
  const int log_fd =
      ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (log_fd < 0) return false;
  SpawnOptions spawn;
  spawn.argv = {interpreter, host_script().string(), socket_path.string(), kIdleSeconds};
  spawn.stdout_fd = log_fd;
  spawn.environment = environment;
  spawn.working_directory = "/";
  pid_t pid = -1;
  try {
    pid = spawn_process(spawn);
  } catch (const std::exception&) {
    ::close(log_fd);
    return false;
  }
  ::close(log_fd);
  // It exits as soon as it listens; one that does not is not a host.
  if (!wait_exited(pid, std::chrono::seconds(30))) kill_process_group(pid);
  const ExitStatus status = reap_process(pid);
  return !status.signaled && status.exit_code == 0;
}

/// A connection to the host of this key, which is started when none answers. -1 when none can
/// be had. Holding the key's lock, concurrent kernelarc processes start one host, not several.
int connect_to_host(const std::string& interpreter, const std::vector<std::string>& environment) {
  const auto directory = host_directory();
  if (!directory) return -1;
  const std::string key = host_key(interpreter, environment);
  const std::filesystem::path socket_path = *directory / (key + ".sock");
  if (const int fd = connect_to(socket_path); fd >= 0) return fd;
  const std::filesystem::path lock_path = *directory / (key + ".lock");
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd < 0) return -1;
  int fd = -1;
  if (::flock(lock_fd, LOCK_EX) == 0) {
    fd = connect_to(socket_path);
    if (fd < 0 && start_host(interpreter, socket_path, *directory / (key + ".log"), environment))
      fd = connect_to(socket_path);
  }
  ::close(lock_fd);
  return fd;
}

bool send_request(int connection, const std::string& body,
                  const std::vector<std::pair<int, int>>& fds) {
  std::string message(4, '\0');
  const auto length = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) message[i] = static_cast<char>((length >> (24 - 8 * i)) & 0xff);
  message += body;
  std::vector<int> passed;
  for (const auto& [child_fd, parent_fd] : fds) passed.push_back(parent_fd);
  std::vector<char> control(CMSG_SPACE(sizeof(int) * passed.size()));
  iovec part{message.data(), message.size()};
  msghdr header{};
  header.msg_iov = &part;
  header.msg_iovlen = 1;
  header.msg_control = control.data();
  header.msg_controllen = control.size();
  cmsghdr* rights = CMSG_FIRSTHDR(&header);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int) * passed.size());
  std::memcpy(CMSG_DATA(rights), passed.data(), sizeof(int) * passed.size());
  ssize_t sent = ::sendmsg(connection, &header, MSG_NOSIGNAL);
  if (sent < 0) return false;
  // The descriptors went with the first bytes; the rest of a long request follows plainly.
  for (auto done = static_cast<std::size_t>(sent); done < message.size();) {
    sent = ::send(connection, message.data() + done, message.size() - done, MSG_NOSIGNAL);
    if (sent <= 0) return false;
    done += static_cast<std::size_t>(sent);
  }
  return true;
}

/// The host's first reply line, waiting at most `patience`; "" when none came.
std::string first_reply(int connection, std::chrono::seconds patience) {
  std::string reply;
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (reply.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "";
    pollfd readable{connection, POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return "";
    // One byte at a time: what follows the line ({"exit": ...}) is the process handle's to read.
    char byte = 0;
    const ssize_t got = ::recv(connection, &byte, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return "";
    reply += byte;
  }
  return reply;
}

// Interpreters whose host could not be had in this process are not asked again: a Python
// without torch would otherwise start a host for nothing before every script.
std::mutex failed_mutex;
std::set<std::string> failed_interpreters;

}  // namespace

std::optional<HostedScript> run_in_python_host(const std::string& interpreter,
                                               const std::vector<std::string>& script_and_arguments,
                                               const std::vector<std::pair<int, int>>& fds,
                                               const std::vector<std::string>& environment) {
  if (host_turned_off() || !is_python_binary(interpreter) ||
      !std::filesystem::exists(host_script()))
    return std::nullopt;
  {
    std::lock_guard lock(failed_mutex);
    if (failed_interpreters.count(interpreter)) return std::nullopt;
  }
  auto give_up = [&]() -> std::optional<HostedScript> {
    std::lock_guard lock(failed_mutex);
    failed_interpreters.insert(interpreter);
    return std::nullopt;
  };
  const int connection = connect_to_host(interpreter, environment);
  if (connection < 0) return give_up();
  OrderedJson request = {{"argv", script_and_arguments},
                         {"cwd", std::filesystem::current_path().string()},
                         {"fds", OrderedJson::array()}};
  for (std::size_t i = 0; i < fds.size(); ++i)
    request["fds"].push_back(OrderedJson::array({fds[i].first, i}));
  if (!send_request(connection, request.dump(), fds)) {
    ::close(connection);
    return give_up();
  }
  const OrderedJson reply =
      OrderedJson::parse(first_reply(connection, kFirstReplyPatience), nullptr, false);
  if (!reply.is_object() || !reply.contains("pid") || !reply["pid"].is_number_integer()) {
    ::close(connection);
    return give_up();
  }
  return HostedScript{reply["pid"].get<pid_t>(), connection};
}

}  // namespace kernelarc
