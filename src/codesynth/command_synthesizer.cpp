#include "codesynth/command_synthesizer.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "backend/process.h"
#include "codesynth/synthesis_request_json.h"
#include "codesynth/synthesized_solution.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace kernelarc {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kStderrKept = 64 << 10;           ///< the end of stderr that is read
constexpr std::size_t kStderrShown = 2000;              ///< the end of it a failure quotes
constexpr std::size_t kResponseRecorded = 1 << 20;      ///< stdout kept in the exchange
constexpr std::chrono::milliseconds kPollInterval{50};  ///< how often an exit is looked for

/// Closes the descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

[[noreturn]] void throw_errno(const char* what) {
  throw InternalError(
      fmt::format("command synthesizer: {} failed: {}", what, std::strerror(errno)));
}

std::pair<Fd, Fd> make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
  return {Fd(fds[0]), Fd(fds[1])};
}

/// An anonymous file holding `text`, positioned at its start: the program's stdin. A file, not
/// a pipe, so that a large request cannot block while the program has not started reading.
Fd stdin_file(const std::string& text) {
  Fd fd(memfd_create("kernelarc-synthesis-request", MFD_CLOEXEC));
  if (fd.get() < 0) throw_errno("memfd_create");
  for (std::size_t written = 0; written < text.size();) {
    const ssize_t count = ::write(fd.get(), text.data() + written, text.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) throw_errno("writing the request");
    written += static_cast<std::size_t>(count);
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) throw_errno("lseek");
  return fd;
}

std::string shell_quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_-./=:,+@%") == std::string::npos)
    return arg;
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) line += (line.empty() ? "" : " ") + shell_quote(arg);
  return line;
}

struct ProgramRun {
  ExitStatus status;
  bool timed_out = false;
  bool over_limit = false;  ///< stdout passed max_output_bytes
  std::string out;
  std::string err;  ///< the last kStderrKept bytes or more
};

/// Reads what is ready on `fd` into `text`; false at end of file.
bool read_some(int fd, std::string& text) {
  char buffer[65536];
  for (;;) {
    const ssize_t count = ::read(fd, buffer, sizeof buffer);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) return false;
    text.append(buffer, static_cast<std::size_t>(count));
    return true;
  }
}

ProgramRun run_program(const CommandSynthesizerOptions& options, const std::string& executable,
                       const std::string& input) {
  Fd request = stdin_file(input);
  auto [out_read, out_write] = make_pipe();
  auto [err_read, err_write] = make_pipe();
  SpawnOptions spawn;
  spawn.argv = options.argv;
  spawn.argv.front() = executable;
  spawn.stdout_fd = out_write.get();  // stdout and stderr; fd 2 is then replaced below
  spawn.fds = {{0, request.get()}, {2, err_write.get()}};
  spawn.working_directory = options.working_directory;
  const pid_t pid = spawn_process(spawn);
  request.reset();
  out_write.reset();
  err_write.reset();

  ProgramRun run;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(options.timeout_s));
  pollfd polled[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
  while (polled[0].fd >= 0 || polled[1].fd >= 0) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      break;
    }
    const int ready = ::poll(polled, 2, static_cast<int>(std::min(left, kPollInterval).count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw_errno("poll");
    // Nothing to read and the program has ended: whatever still holds its pipes open is a
    // leftover it started, killed below.
    if (ready == 0 && wait_exited(pid, std::chrono::milliseconds(0))) break;
    for (int index = 0; index < 2; ++index) {
      if (polled[index].fd < 0 || polled[index].revents == 0) continue;
      if (!read_some(polled[index].fd, index == 0 ? run.out : run.err)) polled[index].fd = -1;
    }
    if (run.err.size() > 2 * kStderrKept) run.err.erase(0, run.err.size() - kStderrKept);
    if (run.out.size() > options.max_output_bytes) {
      run.over_limit = true;
      break;
    }
  }
  // Both pipes closed is not the end: the program may still be working without them.
  if (!run.timed_out && !run.over_limit) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    run.timed_out = !wait_exited(pid, std::max(left, std::chrono::milliseconds(0)));
  }
  // The program itself on a timeout or an overflow; else only what it left running.
  kill_process_group(pid);
  run.status = reap_process(pid);
  run.status.killed_by_parent = run.timed_out || run.over_limit;
  return run;
}

/// "" or "; its stderr ends with:\n<the last lines>".
std::string stderr_note(const std::string& err) {
  std::string tail = err.size() > kStderrShown ? err.substr(err.size() - kStderrShown) : err;
  const auto last = tail.find_last_not_of(" \n\r\t");
  tail.erase(last == std::string::npos ? 0 : last + 1);
  if (tail.empty()) return "";
  return (err.size() > kStderrShown ? "; its stderr ends with:\n..." : "; its stderr:\n") + tail;
}

/// The solution the program's answer describes; InputError naming the field when it is
/// malformed, or with the program's own words when it answered {"error"}.
Solution parse_reply(const SynthesisRequest& request, const std::string& text,
                     std::string_view where) {
  const OrderedJson reply = parse_json_text(text, where);
  expect_object(reply, where, "");
  if (const OrderedJson* error = find_member(reply, "error"))
    throw InputError(fmt::format("{} reported an error: {}", where,
                                 error->is_string() ? error->get<std::string>() : error->dump()));
  if (!find_member(reply, "sources"))
    throw InputError(fmt::format("{}: expected an object with \"sources\" or \"error\"", where));
  reject_unknown_keys(reply, {"sources", "cflags", "cuda_cflags", "ld_flags", "description"}, where,
                      "");
  const OrderedJson& sources_json = require_member(reply, "sources", where, "");
  if (!sources_json.is_array())
    throw_input_error(where, "sources", "expected array, got " + describe_json(sources_json));
  std::vector<SourceFile> sources;
  for (std::size_t index = 0; index < sources_json.size(); ++index) {
    const std::string field = field_index("sources", index);
    const OrderedJson& entry = sources_json[index];
    expect_object(entry, where, field);
    reject_unknown_keys(entry, {"path", "content"}, where, field);
    const OrderedJson& path = require_member(entry, "path", where, field);
    const OrderedJson& content = require_member(entry, "content", where, field);
    sources.push_back({expect_string(path, where, field_path(field, "path")),
                       expect_string(content, where, field_path(field, "content"))});
  }
  const OrderedJson* cflags = find_member(reply, "cflags");
  const OrderedJson* cuda_cflags = find_member(reply, "cuda_cflags");
  const OrderedJson* ld_flags = find_member(reply, "ld_flags");
  const OrderedJson* description = find_member(reply, "description");

  SynthesizedFlags flags;
  if (cflags) flags.cflags = expect_string_list(*cflags, where, "cflags");
  if (cuda_cflags) flags.cuda_cflags = expect_string_list(*cuda_cflags, where, "cuda_cflags");
  if (ld_flags) flags.ld_flags = expect_string_list(*ld_flags, where, "ld_flags");
  Solution solution;
  try {
    solution = make_synthesized_solution(request, "command", std::move(sources), flags);
  } catch (const InputError& error) {
    throw InputError(fmt::format("{}: {}", where, error.what()));
  }
  if (description) solution.description = expect_string(*description, where, "description");
  return solution;
}

}  // namespace

CommandSynthesizer::CommandSynthesizer(CommandSynthesizerOptions options)
    : options_(std::move(options)), command_line_(join_command(options_.argv)) {
  if (options_.argv.empty() || options_.argv.front().empty())
    throw InputError("command synthesizer: expected a program to run, got none");
  if (!(options_.timeout_s > 0))
    throw InputError(fmt::format("command synthesizer: timeout: expected seconds > 0, got {}",
                                 options_.timeout_s));
}

SynthesisOutcome CommandSynthesizer::synthesize(const SynthesisRequest& request) {
  SynthesisOutcome outcome;
  const std::string& program = options_.argv.front();
  const std::optional<std::string> executable = find_executable(program);
  if (!executable) {
    outcome.failure = program.find('/') == std::string::npos
                          ? fmt::format("command synthesizer: no executable '{}' on $PATH", program)
                      : fs::exists(program)
                          ? fmt::format("command synthesizer: {} is not executable", program)
                          : fmt::format("command synthesizer: {} does not exist", program);
    return outcome;
  }
  if (!options_.working_directory.empty() && !fs::is_directory(options_.working_directory)) {
    outcome.failure = fmt::format("command synthesizer: working directory {} does not exist",
                                  options_.working_directory.string());
    return outcome;
  }

  SynthesisExchange exchange;
  exchange.model = command_line_;
  // Replacement keeps a request whose sources or logs hold invalid UTF-8 (a log trimmed inside
  // a character) sendable.
  exchange.request = synthesis_request_to_json(request).dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  const ProgramRun run = run_program(options_, *executable, exchange.request);
  exchange.response = run.out.substr(0, kResponseRecorded);
  if (run.out.size() > kResponseRecorded)
    exchange.response += fmt::format("\n[... {} more bytes]", run.out.size() - kResponseRecorded);
  outcome.exchanges.push_back(std::move(exchange));

  const std::string who = fmt::format("command synthesizer {}", program);
  const std::string err = stderr_note(run.err);
  if (run.timed_out) {
    outcome.failure =
        fmt::format("{} gave no answer within {} s and was killed{}", who, options_.timeout_s, err);
  } else if (run.over_limit) {
    outcome.failure = fmt::format("{} wrote more than {} bytes to stdout and was killed{}", who,
                                  options_.max_output_bytes, err);
  } else if (run.status.signaled || run.status.exit_code != 0) {
    outcome.failure = fmt::format("{} {}{}", who, describe_exit(run.status), err);
  } else if (run.out.find_first_not_of(" \n\r\t") == std::string::npos) {
    outcome.failure = fmt::format("{} wrote nothing to stdout{}", who, err);
  } else {
    try {
      outcome.solution = parse_reply(request, run.out, who);
    } catch (const InputError& error) {
      outcome.failure = error.what();
    }
  }
  return outcome;
}

}  // namespace kernelarc
