// worker_main: the child side of the worker protocol (see worker_protocol.h).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <new>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/cuda_cubin_kernel.h"
#include "backend/cuda/cuda_device.h"
#include "backend/cuda/cuda_launch.h"
#include "backend/device.h"
#include "backend/worker/shared_arena.h"
#include "backend/worker/worker.h"
#include "backend/worker/worker_execute.h"
#include "backend/worker/worker_integrity.h"
#include "backend/worker/worker_protocol.h"
#include "backend/worker/worker_sandbox.h"
#include "core/error.h"

namespace kernelarc {
namespace {

class WorkerServer {
 public:
  WorkerServer(std::unique_ptr<Device> device, ArenaMapping arena, int reply_fd,
               SandboxStatus sandbox)
      : device_(std::move(device)),
        pool_(*device_),
        arena_(std::move(arena)),
        reply_fd_(reply_fd),
        sandbox_(std::move(sandbox)) {
    // A worker started again (after a crash) maps the arena at its current size at once.
    arena_pinned_ = device_->register_host(arena_.bytes());
  }
  ~WorkerServer() { unpin_arena(); }
  WorkerServer(const WorkerServer&) = delete;
  WorkerServer& operator=(const WorkerServer&) = delete;

  /// Serves requests until the parent closes the pipe.
  int serve(int request_fd) {
    if (!write_message(
            reply_fd_,
            {{"type", "hello"},
             {"protocol", kWorkerProtocolVersion},
             {"pid", getpid()},
             {"sandbox", sandbox_.to_json()},
             {"integrity", {{"objects", integrity_.objects()}, {"bytes", integrity_.bytes()}}}}))
      return 0;
    for (;;) {
      Json message;
      std::string error;
      ReadStatus status = read_message(request_fd, std::nullopt, message, error);
      if (status == ReadStatus::Eof) return 0;
      if (status != ReadStatus::Ok) {
        std::cerr << "kernelarc worker: malformed request: " << error << std::endl;
        return 2;
      }
      if (!write_message(reply_fd_, handle(message))) return 0;
    }
  }

 private:
  Json handle(const Json& message) {
    Json id = message.value("id", Json());
    try {
      std::string type = message.at("type").get<std::string>();
      if (type == "describe") {
        const CudaDeviceInfo* info = cuda_device_info(*device_);
        return {{"type", "description"},
                {"id", id},
                {"kind", device_->kind()},
                {"description", device_->description()},
                {"arch", info ? info->arch() : std::string()}};
      }
      ExecuteResult result;
      if (type == "load") {
        result =
            load(message.at("library").get<std::string>(), message.at("symbol").get<std::string>());
        check_integrity(result);
      } else if (type == "remap") {
        result = remap(message.at("bytes").get<std::size_t>());
      } else if (type == "execute") {
        const ExecuteRequest request = request_from_json(message.at("request"));
        result = execute(request);
        // A Run request's reply is what the parent times, so the fingerprints (about 1 ms) are
        // checked by the Collect request that follows a successful one: a lasting patch is
        // caught there, and forged times meet the parent's own bounds either way. A failed Run
        // has no Collect after it.
        if (request.phase != RequestPhase::Run || result.outcome != CallOutcome::Ok)
          check_integrity(result);
      } else {
        throw InternalError("unknown request type \"" + type + "\"");
      }
      return {{"type", "result"}, {"id", id}, {"result", result_to_json(result)}};
    } catch (const std::exception& error) {
      return {{"type", "error"}, {"id", id}, {"message", error.what()}};
    }
  }

  ExecuteResult load(const std::string& library, const std::string& symbol) {
    staged_ = {};
    return load_entry_point(*device_, library, symbol, entry_);
  }

  /// A candidate that changed the worker's code or relocation tables makes the request's
  /// outcome Tampered, whatever it was: its results cannot be trusted.
  void check_integrity(ExecuteResult& result) const {
    std::string change = integrity_.changes();
    if (change.empty()) return;
    result.outcome = CallOutcome::Tampered;
    result.message = change;
  }

  ExecuteResult remap(std::size_t bytes) {
    ExecuteResult result;
    staged_ = {};
    unpin_arena();
    try {
      arena_.remap(bytes);
    } catch (const std::bad_alloc&) {
      result.outcome = CallOutcome::OutOfMemory;
      result.message = "cannot map the " + std::to_string(bytes) +
                       "-byte shared arena within the worker's memory limit";
      return result;
    }
    // Every input is copied from the arena and every checked output back into it: pinned, those
    // copies go at the link's speed. The arena is remapped only when it grows.
    arena_pinned_ = device_->register_host(arena_.bytes());
    return result;
  }

  void unpin_arena() {
    if (arena_pinned_) device_->unregister_host(arena_.bytes().data());
    arena_pinned_ = false;
  }

  ExecuteResult execute(const ExecuteRequest& request) {
    if (!entry_.loaded() && !request.null_kernel)
      throw InternalError("execute before a successful load");
    std::string problem = request_problem(request, arena_.bytes().size());
    if (!problem.empty()) throw InternalError("bad execute request: " + problem);
    return execute_request(*device_, pool_, arena_.bytes(), request,
                           request.null_kernel ? null_entry_point() : entry_, call_counter_,
                           staged_);
  }

  std::unique_ptr<Device> device_;
  BufferPool pool_;  // declared after device_, so released before the device goes
  ArenaMapping arena_;
  bool arena_pinned_ = false;
  int reply_fd_;
  SandboxStatus sandbox_;
  // Fingerprinted here, before the first candidate is loaded.
  const IntegrityCheck integrity_;
  EntryPoint entry_;
  uint64_t call_counter_ = 0;
  StagedCall staged_;
};

}  // namespace

int worker_main(int request_fd, int reply_fd, const std::string& device,
                const std::filesystem::path& arena_path, const SandboxOptions& sandbox) {
  // A dead parent must end the worker through a failed write, not a signal mid-reply.
  signal(SIGPIPE, SIG_IGN);
  // A CUDA error may abort() the worker; a core dump of a process holding a GPU context takes
  // long to write and fills the disk, and the parent classifies the death without it.
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  // stdout is the log file; line buffering keeps a crashing candidate's last prints.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // OpenMP's default spin-wait keeps idle team threads busy between calls, where they compete
  // with the worker's cache flush and copies; on a 2-core VM that tripled an rmsnorm's median
  // (6.8 ms vs 2.5 ms). Candidates are timed as they would run in an application that does other
  // work between calls. A user's own setting wins; libgomp reads it when the candidate loads it.
  setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);
  std::unique_ptr<Device> worker_device;
  ArenaMapping arena;
  try {
    worker_device = backend_for(device).make_device(/*trace_activity=*/true);
    arena = ArenaMapping(arena_path);
  } catch (const std::exception& error) {
    std::string message = std::string("kernelarc worker cannot start: ") + error.what();
    std::cerr << message << std::endl;
    write_message(reply_fd, {{"type", "error"}, {"message", message}});
    return 1;
  }
  // The candidate's temporary files go to the one directory it may write.
  if (!sandbox.scratch_directory.empty())
    setenv("TMPDIR", sandbox.scratch_directory.c_str(), /*overwrite=*/1);
  // After the device, whose driver may start helper programs and open files while it starts;
  // before the first candidate, which must never run unrestricted.
  SandboxStatus status = enter_worker_sandbox(sandbox);
  return WorkerServer(std::move(worker_device), std::move(arena), reply_fd, std::move(status))
      .serve(request_fd);
}

}  // namespace kernelarc
