// Worker: the parent's side of the worker protocol, with the watchdog and the restart logic.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <variant>

#include "backend/process.h"
#include "backend/worker/shared_arena.h"
#include "backend/worker/worker.h"
#include "backend/worker/worker_accounting.h"
#include "backend/worker/worker_death.h"
#include "backend/worker/worker_protocol.h"
#include "backend/worker/worker_sandbox.h"
#include "core/error.h"
#include "core/paths.h"

namespace kernelarc {
namespace {

using std::chrono::milliseconds;

// Time for everything in a request that is not the candidate's own calls (copies, flushes).
constexpr milliseconds kSlack{1000};
// Starting a worker includes creating the device (a CUDA context takes seconds).
constexpr milliseconds kStartTimeout{30'000};
// A worker that closed its pipe gets this long to finish dying on its own before SIGKILL.
constexpr milliseconds kExitGrace{2000};
// How long the reading after a reply waits for the worker's threads to block: an honest worker
// is blocked within microseconds of replying, and its threads' counts are exact only then. On a
// loaded machine a thread still finishing its part of the call can wait for a core a scheduler
// slice or more: with 2 ms, such a thread's rest of the call ran after the reading and counted as
// CPU used between requests, and a 2-core machine running a build beside the tests failed an
// honest OpenMP GEMM twice ("4.6 ms of CPU between its requests, 3.6 ms allowed"). Waiting
// costs nothing where the threads are already blocked.
constexpr std::chrono::microseconds kSettlePatience{20'000};
// The log is emptied before a request once it is this large, and the worker cannot write a
// file beyond kLogLimit (RLIMIT_FSIZE), so a candidate printing in a loop cannot fill /dev/shm.
constexpr off_t kLogTrimSize = off_t{64} << 20;
constexpr std::size_t kLogLimit = std::size_t{256} << 20;

/// Why a worker's first message is not the expected hello.
std::string hello_problem(ReadStatus status, const Json& hello, const std::string& error) {
  switch (status) {
    case ReadStatus::TimedOut:
      return "it sent no hello in time";
    case ReadStatus::Eof:
      return "it exited before its hello";
    case ReadStatus::Malformed:
      return "it sent " + error;
    case ReadStatus::Ok:
      break;
  }
  if (hello.value("type", "") == "error")
    return hello.value("message", std::string("unknown error"));
  return "it sent " + hello.dump(-1, ' ', false, Json::error_handler_t::replace) +
         " instead of a hello of protocol " + std::to_string(kWorkerProtocolVersion);
}

/// A new private (0700) directory for the worker's files: the only one its candidates may write.
/// Under /dev/shm like the arena, else $TMPDIR or /tmp.
std::filesystem::path create_scratch_directory() {
  std::vector<std::string> bases = {"/dev/shm"};
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir && *tmpdir) bases.emplace_back(tmpdir);
  bases.emplace_back("/tmp");
  for (const std::string& base : bases) {
    std::string pattern = base + "/kernelarc-worker-XXXXXX";
    if (mkdtemp(pattern.data())) return pattern;
  }
  throw InternalError(
      "cannot create the worker's scratch directory in /dev/shm, $TMPDIR or /tmp: " +
      std::string(std::strerror(errno)));
}

}  // namespace

struct Worker::Impl {
  WorkerOptions options;
  SharedArena arena;
  std::filesystem::path log_path;
  int log_fd = -1;
  pid_t pid = -1;
  int socket_fd = -1;
  std::size_t worker_arena_bytes = 0;
  uint64_t next_id = 1;
  std::filesystem::path library;
  std::string symbol;
  bool library_ok = false;      ///< the last load() succeeded
  bool library_loaded = false;  ///< ... in the current worker process
  bool candidate_code = false;  ///< a library was loaded (or tried) in the current process
  off_t request_log_start = 0;
  std::filesystem::path scratch = create_scratch_directory();
  Json sandbox;  ///< the last started worker's SandboxStatus::to_json()
  /// The worker's threads and the time when its last reply was read: the start of an interval in
  /// which it only waits (ParentObservation::idle_cpu_ns).
  TaskTimes times_at_reply;
  std::chrono::steady_clock::time_point reply_time;

  explicit Impl(WorkerOptions worker_options) : options(std::move(worker_options)) {
    if (options.executable.empty()) options.executable = self_executable();
    if (options.log_path.empty()) {
      // Unlinked like the arena, so it disappears with the last process holding it.
      log_fd = create_anonymous_shared_file();
      fcntl(log_fd, F_SETFL, O_APPEND);
      log_path = "/proc/self/fd/" + std::to_string(log_fd);
    } else {
      log_path = options.log_path;
      log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      if (log_fd < 0)
        throw InternalError("cannot open worker log " + log_path.string() + ": " +
                            std::strerror(errno));
    }
  }

  ~Impl() {
    stop();
    close(log_fd);
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
  }

  bool running() const { return pid > 0; }

  off_t log_size() const {
    struct stat info {};
    return fstat(log_fd, &info) == 0 ? info.st_size : 0;
  }

  void mark_log_start() {
    if (log_size() > kLogTrimSize) {
      // A log that cannot be trimmed costs only diagnostics, so a failure is ignored.
      [[maybe_unused]] int ignored = ftruncate(log_fd, 0);
    }
    request_log_start = log_size();
  }

  void stop() {
    if (!running()) return;
    kill_process_group(pid);
    reap_process(pid);
    forget_process();
  }

  void forget_process() {
    close(socket_fd);
    socket_fd = -1;
    pid = -1;
    library_loaded = false;
    candidate_code = false;
    times_at_reply = {};
  }

  void start() {
    int sockets[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0)
      throw InternalError(std::string("socketpair failed: ") + std::strerror(errno));
    bool cpu = options.device == "cpu";
    SpawnOptions spawn;
    spawn.argv = {options.executable.string(),
                  "worker",
                  "--request-fd",
                  "3",
                  "--reply-fd",
                  "4",
                  "--device",
                  options.device,
                  "--arena",
                  "/proc/self/fd/5",
                  "--scratch",
                  scratch.string()};
    for (const auto& path : options.protected_paths)
      spawn.argv.insert(spawn.argv.end(), {"--protect", std::filesystem::absolute(path).string()});
    for (const auto& path : options.readable_paths) {
      // Landlock grants access to directories that exist when the worker restricts itself.
      std::error_code ignored;
      std::filesystem::create_directories(path, ignored);
      spawn.argv.insert(spawn.argv.end(), {"--readable", std::filesystem::absolute(path).string()});
    }
    spawn.environment = environment_without_secrets();
    // What an earlier worker's candidates left there is not for the next ones.
    std::error_code ignored;
    for (std::filesystem::directory_iterator it(scratch, ignored), end; !ignored && it != end;
         it.increment(ignored))
      std::filesystem::remove_all(it->path(), ignored);
    spawn.fds = {{3, sockets[1]}, {4, sockets[1]}, {5, arena.fd()}};
    spawn.stdout_fd = log_fd;
    spawn.die_with_parent = true;
    // The CUDA driver reserves huge virtual ranges, so RLIMIT_AS only works on the CPU.
    spawn.address_space_limit = cpu ? options.memory_limit_bytes : 0;
    spawn.file_size_limit = kLogLimit;
    spawn.cpus = options.cpus;
    mark_log_start();
    try {
      pid = spawn_process(spawn);
    } catch (...) {
      close(sockets[0]);
      close(sockets[1]);
      throw;
    }
    close(sockets[1]);
    socket_fd = sockets[0];
    worker_arena_bytes = arena.size();

    Json hello;
    std::string error;
    auto deadline =
        std::chrono::steady_clock::now() + std::max(options.call_timeout, kStartTimeout);
    ReadStatus status = read_message(socket_fd, deadline, hello, error);
    if (status == ReadStatus::Ok && hello.value("type", "") == "hello" &&
        hello.value("protocol", -1) == kWorkerProtocolVersion) {
      sandbox = hello.value("sandbox", Json());
      return;
    }
    std::string why = hello_problem(status, hello, error);
    const bool ended_alone = wait_exited(pid, milliseconds(0));
    kill_process_group(pid);
    ExitStatus ended = reap_process(pid);
    ended.killed_by_parent = !ended_alone;
    std::string exit = describe_exit(ended);
    forget_process();
    throw InternalError("cannot start the worker `" + options.executable.string() +
                        " worker --device " + options.device + "`: " + why + " (" + exit + ")" +
                        log_suffix(read_log_tail(log_path, request_log_start)));
  }

  /// Starts a worker if none runs; one that died between requests is replaced silently.
  void ensure_started() {
    if (running() && wait_exited(pid, milliseconds(0))) {
      kill_process_group(pid);
      reap_process(pid);
      forget_process();
    }
    if (!running()) start();
  }

  /// Classifies a worker that ended (or was killed) during a request, and forgets it.
  ExecuteResult bury(DeathCause cause, milliseconds waited, const std::string& during) {
    if (cause == DeathCause::Exited && !wait_exited(pid, kExitGrace)) {
      cause = DeathCause::ClosedPipe;
    }
    kill_process_group(pid);  // a hung or lingering worker, and anything the candidate started
    ExitStatus status = reap_process(pid);
    forget_process();
    ExecuteResult result = classify_death(status, cause, during, waited, options);
    result.log_tail = read_log_tail(log_path, request_log_start);
    if (result.outcome == CallOutcome::Crashed && log_reports_allocation_failure(result.log_tail)) {
      result.outcome = CallOutcome::OutOfMemory;
      result.message += "; the log reports a failed allocation";
    }
    return result;
  }

  ExecuteResult kill_for(CallOutcome outcome, const std::string& message) {
    kill_process_group(pid);
    reap_process(pid);
    forget_process();
    ExecuteResult result;
    result.outcome = outcome;
    result.message = message;
    result.log_tail = read_log_tail(log_path, request_log_start);
    return result;
  }

  /// Sends a request and waits for its reply, or classifies the worker's death.
  std::variant<Json, ExecuteResult> transact(Json request, milliseconds timeout,
                                             const std::string& during) {
    mark_log_start();
    uint64_t id = next_id++;
    request["id"] = id;
    if (!write_message(socket_fd, request))
      return bury(DeathCause::Exited, milliseconds(0), during);
    Json reply;
    std::string error;
    switch (read_message(socket_fd, std::chrono::steady_clock::now() + timeout, reply, error)) {
      case ReadStatus::Ok:
        break;
      case ReadStatus::Eof:
        return bury(DeathCause::Exited, timeout, during);
      case ReadStatus::TimedOut:
        return bury(DeathCause::TimedOut, timeout, during);
      case ReadStatus::Malformed:
        return kill_for(CallOutcome::Crashed,
                        "the worker sent " + error + " " + during +
                            " (the candidate may have written to the protocol pipe)");
    }
    if (reply.value("id", Json()) != Json(id))
      return kill_for(CallOutcome::Crashed,
                      "the worker sent a reply out of turn " + during +
                          " (the candidate may have written to the protocol pipe)");
    if (reply.value("type", "") == "error")
      throw InternalError("the worker rejected a request: " +
                          reply.value("message", std::string()));
    return reply;
  }

  /// A result-bearing request; a worker that crashed in it is classified instead.
  ExecuteResult transact_result(Json request, milliseconds timeout, const std::string& during) {
    auto outcome = transact(std::move(request), timeout, during);
    if (auto* died = std::get_if<ExecuteResult>(&outcome)) return std::move(*died);
    const Json& reply = std::get<Json>(outcome);
    ExecuteResult result;
    try {
      result = result_from_json(reply.at("result"));
    } catch (const std::exception& error) {
      return kill_for(CallOutcome::Crashed, std::string("the worker sent a malformed result ") +
                                                during + ": " + error.what());
    }
    if (result.outcome != CallOutcome::Ok)
      result.log_tail = read_log_tail(log_path, request_log_start);
    return result;
  }

  ExecuteResult load_library() {
    ensure_started();
    candidate_code = true;  // its constructors may run even when the load fails
    ExecuteResult result =
        transact_result({{"type", "load"}, {"library", library.string()}, {"symbol", symbol}},
                        options.call_timeout + kSlack, "while loading " + library.string());
    library_loaded = result.outcome == CallOutcome::Ok;
    // A worker whose code a candidate changed cannot be trusted with the next one.
    if (running() && result.outcome == CallOutcome::Tampered) stop();
    return result;
  }

  /// The worker's description reply (kind, description, arch).
  Json describe() {
    ensure_started();
    auto outcome = transact({{"type", "describe"}}, options.call_timeout + kSlack,
                            "while describing the device");
    if (auto* died = std::get_if<ExecuteResult>(&outcome))
      throw InternalError("the worker failed to describe its device: " + died->message);
    return std::get<Json>(std::move(outcome));
  }

  ExecuteResult execute(const ExecuteRequest& request) {
    std::string problem = request_problem(request, arena.size());
    if (!problem.empty()) throw InternalError("Worker::execute: " + problem);
    if (!library_ok && !request.null_kernel)
      throw InternalError("Worker::execute needs a successful load() first");
    const pid_t staged_by = pid;
    ensure_started();
    // A worker that died after staging a call lost it; a new one must not be asked to run it.
    if ((request.phase == RequestPhase::Run || request.phase == RequestPhase::Collect) &&
        pid != staged_by) {
      ExecuteResult lost;
      lost.outcome = CallOutcome::Crashed;
      lost.message = "the worker died between the parts of a call, while no call ran";
      return lost;
    }
    if (!library_loaded && !request.null_kernel) {
      ExecuteResult loaded = load_library();
      if (loaded.outcome != CallOutcome::Ok) return loaded;
    }
    if (worker_arena_bytes != arena.size()) {
      ExecuteResult remapped =
          transact_result({{"type", "remap"}, {"bytes", arena.size()}},
                          options.call_timeout + kSlack, "while mapping the arena");
      if (remapped.outcome != CallOutcome::Ok) return remapped;
      worker_arena_bytes = arena.size();
    }
    milliseconds timeout =
        options.call_timeout * (request.warmup + request.iterations + 1) + kSlack;
    ParentObservation observed;
    const TaskTimes before = read_task_times(pid);
    const double parent_waited_before = this_thread_run_queue_wait();
    const auto sent = std::chrono::steady_clock::now();
    if (times_at_reply.valid && before.valid) {
      observed.idle_cpu_ns = cpu_used(times_at_reply, before);
      observed.idle_wall_ns = std::chrono::duration<double, std::nano>(sent - reply_time).count();
    }
    const pid_t worker_pid = pid;
    ExecuteResult result = transact_result(
        {{"type", "execute"}, {"request", request_to_json(request)}}, timeout, "during a call");
    reply_time = std::chrono::steady_clock::now();
    const double parent_waited = this_thread_run_queue_wait() - parent_waited_before;
    if (running()) {
      const TaskTimes after = read_task_times_at_rest(worker_pid, kSettlePatience);
      observed.valid = before.valid && after.valid;
      observed.wall_ns = std::chrono::duration<double, std::nano>(reply_time - sent).count();
      observed.main_cpu_ns = cpu_used_by(before, after, worker_pid);
      observed.main_wait_ns = run_queue_wait_of(before, after, worker_pid);
      observed.parent_wait_ns = std::max(0.0, parent_waited);
      observed.other_cpu_ns = cpu_used_except(before, after, worker_pid);
      observed.other_threads = std::max(before.tasks(), after.tasks()) - 1;
      observed.tasks_after = after.tasks();
      times_at_reply = after;
    }
    result.observed = observed;
    // After an allocation failure or an exception the worker is alive but its heap is suspect.
    // After tampering the worker's own code is suspect.
    if (running() &&
        (result.outcome == CallOutcome::OutOfMemory || result.outcome == CallOutcome::Crashed ||
         result.outcome == CallOutcome::Tampered))
      stop();
    return result;
  }
};

Worker::Worker(WorkerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Worker::~Worker() = default;

ExecuteResult Worker::load(const std::filesystem::path& library, const std::string& symbol) {
  // Every library gets a process no other candidate's code ran in: what that code left behind
  // (a thread that rewrites replies, a hijacked descriptor, CUPTI's activity switched off, a
  // kernel still spinning) would otherwise act on this one's calls. On an H100 the guard case
  // forges_reported_time, run after cupti_disable in one worker, was refused for "no GPU
  // activity" instead of for its own forgery.
  if (impl_->candidate_code) impl_->stop();
  impl_->library = std::filesystem::absolute(library);
  impl_->symbol = symbol;
  ExecuteResult result = impl_->load_library();
  impl_->library_ok = result.outcome == CallOutcome::Ok;
  return result;
}

std::span<std::byte> Worker::arena(std::size_t bytes) {
  return impl_->arena.reserve(bytes);
}

ExecuteResult Worker::execute(const ExecuteRequest& request) {
  return impl_->execute(request);
}

std::string Worker::device_description() {
  Json reply = impl_->describe();
  return reply.value("kind", std::string()) + ": " + reply.value("description", std::string());
}

std::string Worker::device_arch() {
  return impl_->describe().value("arch", std::string());
}

nlohmann::json Worker::sandbox_status() const {
  return impl_->sandbox;
}

void Worker::stop() {
  impl_->stop();
}

bool Worker::candidate_loaded() const {
  return impl_->running() && impl_->candidate_code;
}

}  // namespace kernelarc
