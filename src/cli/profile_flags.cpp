#include "cli/profile_flags.h"

namespace kernelarc {

void add_profile_flags(CLI::App& cmd, ProfileFlags& flags, bool with_top) {
  CLI::Option* profile = cmd.add_flag(
      "--profile", flags.enabled,
      with_top ? "profile the winner with Nsight Compute (CUDA) on its largest workload"
               : "profile the solution with Nsight Compute (CUDA) on its largest "
                 "passed workload");
  if (with_top) {
    cmd.add_option("--profile-top", flags.top, "with --profile: the best K finalists")
        ->capture_default_str()
        ->check(CLI::Range(1, 100));
  }
  cmd.add_flag("--profile-source", flags.source,
               "with --profile: also Nsight Compute's source page, the SASS instructions the "
               "warps were sampled stalled in most (a second ncu run)")
      ->needs(profile);
  cmd.add_option("--ncu", flags.ncu,
                 "Nsight Compute's ncu (default: $KERNELARC_NCU, ncu on PATH, "
                 "/usr/local/cuda/bin/ncu)");
  cmd.add_option("--profile-timeout", flags.timeout_s, "seconds one ncu run may take")
      ->capture_default_str()
      ->check(CLI::Range(1, 86'400));
}

}  // namespace kernelarc
