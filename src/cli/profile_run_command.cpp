#include <string>
#include <vector>

#include "backend/worker/profile_run.h"
#include "cli/commands.h"

namespace kernelarc {

CommandRunner add_profile_run_command(CLI::App& app) {
  struct Flags {
    ProfileRunOptions run;
    std::vector<std::string> protect;
    std::vector<std::string> readable;
    std::string scratch;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("profile-run",
                                 "internal: a candidate's calls for Nsight Compute to profile");
  cmd->group("");  // hidden from --help: started under ncu by --profile, not by people
  cmd->add_option("--device", flags->run.device);
  cmd->add_option("--library", flags->run.library)->required();
  cmd->add_option("--symbol", flags->run.symbol);
  cmd->add_option("--request", flags->run.request)->required();
  cmd->add_option("--arena", flags->run.arena)->required();
  cmd->add_option("--log", flags->run.log)->required();
  cmd->add_option("--protect", flags->protect, "a directory the candidate may not read or write");
  cmd->add_option("--readable", flags->readable, "a directory beneath a protected one to read");
  cmd->add_option("--scratch", flags->scratch, "the directory the candidate may write");
  return [flags] {
    ProfileRunOptions options = flags->run;
    options.sandbox.protected_paths.assign(flags->protect.begin(), flags->protect.end());
    options.sandbox.readable_paths.assign(flags->readable.begin(), flags->readable.end());
    options.sandbox.scratch_directory = flags->scratch;
    // ncu's injected library keeps shared memory with the ncu process there.
    options.sandbox.writable_paths = {"/dev/shm"};
    return profile_run_main(options);
  };
}

}  // namespace kernelarc
