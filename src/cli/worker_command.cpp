// `kernelarc worker`: with --redis, a queue worker that measures jobs of `optimize --redis`
// runs on this host's device (distributed/queue_worker.h); without it, the isolated process the
// guard starts for each evaluation (internal, hidden from --help).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/worker/worker.h"
#include "backend/worker/worker_sandbox.h"
#include "cli/commands.h"
#include "core/error.h"
#include "distributed/queue_worker.h"

namespace kernelarc {

CommandRunner add_worker_command(CLI::App& app) {
  struct Flags {
    int request_fd = -1;
    int reply_fd = -1;
    std::string device = "cpu";
    std::string arena;
    std::vector<std::string> protect;
    std::vector<std::string> readable;
    std::string scratch;
    std::string redis;
    std::string queue = kDefaultQueue;
    std::string workspace = ".kernelarc";
    std::string python;
    double reclaim_after_s = 60;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "worker", "measure jobs of `optimize --redis` runs on this host's device (--redis URL)");
  cmd->add_option("--redis", flags->redis,
                  "the queue's server, redis://host[:port][/db]: serve its jobs until stopped");
  cmd->add_option("--device", flags->device, "cpu or cuda:N (one worker per device)");
  cmd->add_option("--queue", flags->queue, "the queue's name (key prefix)");
  cmd->add_option("--workspace", flags->workspace,
                  "this worker's workspace: fetched problems, draws, builds, calibration");
  cmd->add_option("--python", flags->python, "the oracle's interpreter, should a draw be missing");
  cmd->add_option("--reclaim-after", flags->reclaim_after_s,
                  "seconds a job may go unrenewed before its worker counts as dead and another "
                  "takes it over");
  // The guard's isolated process: started by the guard, not by people.
  cmd->add_option("--request-fd", flags->request_fd)->group("");
  cmd->add_option("--reply-fd", flags->reply_fd)->group("");
  cmd->add_option("--arena", flags->arena)->group("");
  cmd->add_option("--protect", flags->protect)->group("");
  cmd->add_option("--readable", flags->readable)->group("");
  cmd->add_option("--scratch", flags->scratch)->group("");
  return [flags] {
    if (!flags->redis.empty()) {
      QueueWorkerOptions options;
      options.url = flags->redis;
      options.queue = flags->queue;
      options.device = flags->device;
      options.workspace = flags->workspace;
      options.python = flags->python;
      if (flags->reclaim_after_s <= 0)
        throw InputError(
            fmt::format("--reclaim-after {}: expected seconds above 0", flags->reclaim_after_s));
      options.reclaim_after =
          std::chrono::milliseconds(static_cast<int64_t>(flags->reclaim_after_s * 1000));
      run_queue_worker(std::move(options));
    }
    if (flags->request_fd < 0 || flags->reply_fd < 0 || flags->arena.empty())
      throw InputError(
          "worker: expected --redis URL (the guard's own workers get file "
          "descriptors and an arena)");
    SandboxOptions sandbox;
    sandbox.protected_paths.assign(flags->protect.begin(), flags->protect.end());
    sandbox.readable_paths.assign(flags->readable.begin(), flags->readable.end());
    sandbox.scratch_directory = flags->scratch;
    return worker_main(flags->request_fd, flags->reply_fd, flags->device, flags->arena, sandbox);
  };
}

}  // namespace kernelarc
