#include <string>
#include <vector>

#include "backend/worker/worker.h"
#include "backend/worker/worker_sandbox.h"
#include "cli/commands.h"

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
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("worker", "internal: the isolated process that runs candidates");
  cmd->group("");  // hidden from --help: started by the guard, not by people
  cmd->add_option("--request-fd", flags->request_fd)->required();
  cmd->add_option("--reply-fd", flags->reply_fd)->required();
  cmd->add_option("--device", flags->device);
  cmd->add_option("--arena", flags->arena)->required();
  cmd->add_option("--protect", flags->protect, "a directory the candidate may not read or write");
  cmd->add_option("--readable", flags->readable, "a directory beneath a protected one to read");
  cmd->add_option("--scratch", flags->scratch, "the directory the candidate may write");
  return [flags] {
    SandboxOptions sandbox;
    sandbox.protected_paths.assign(flags->protect.begin(), flags->protect.end());
    sandbox.readable_paths.assign(flags->readable.begin(), flags->readable.end());
    sandbox.scratch_directory = flags->scratch;
    return worker_main(flags->request_fd, flags->reply_fd, flags->device, flags->arena, sandbox);
  };
}

}  // namespace kernelarc
