#include <string>

#include "backend/worker.h"
#include "cli/commands.h"

namespace kernelarc {

CommandRunner add_worker_command(CLI::App& app) {
  struct Flags {
    int request_fd = -1;
    int reply_fd = -1;
    std::string device = "cpu";
    std::string arena;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("worker", "internal: the isolated process that runs candidates");
  cmd->group("");  // hidden from --help: started by the guard, not by people
  cmd->add_option("--request-fd", flags->request_fd)->required();
  cmd->add_option("--reply-fd", flags->reply_fd)->required();
  cmd->add_option("--device", flags->device);
  cmd->add_option("--arena", flags->arena)->required();
  return [flags] {
    return worker_main(flags->request_fd, flags->reply_fd, flags->device, flags->arena);
  };
}

}  // namespace kernelarc
