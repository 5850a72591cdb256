#include "cli/guard_flags.h"

namespace kernelarc {

void add_guard_flags(CLI::App& cmd, GuardFlags& flags) {
  cmd.add_option("--json", flags.json_path, "write the traces (SOL-ExecBench form) to this file");
  cmd.add_option("--workspace", flags.workspace, "caches and calibration")->capture_default_str();
  cmd.add_option("--device", flags.device, "cpu or cuda:N")->capture_default_str();
  cmd.add_option("--python", flags.python, "Python with torch for the reference (default: detect)");
  cmd.add_option("--cflags", flags.cflags,
                 "host compiler flags, replacing -O3 -march=native -fopenmp");
  cmd.add_option("--workloads", flags.workloads,
                 "only workloads whose uuid starts with these (\"largest\": the one with the "
                 "largest product of its axes)");
  cmd.add_option("--trials", flags.trials, "correctness draws per workload")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd.add_option("--warmup", flags.warmup, "untimed calls before timing")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  cmd.add_option("--iterations", flags.iterations, "timed calls at most")
      ->capture_default_str()
      ->check(CLI::Range(3, 100000));
  cmd.add_option("--timing-budget", flags.budget_s,
                 "timing budget per workload, seconds (candidates and PyTorch baselines alike)")
      ->capture_default_str();
  cmd.add_option("--baseline-warmup-limit", flags.baseline_warmup_limit_s,
                 "a PyTorch baseline whose warm-up calls (torch.compile's compilation included) "
                 "take longer, in seconds, is reported unavailable")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--timeout-ms", flags.timeout_ms, "a call longer than this is a hang")
      ->capture_default_str()
      ->check(CLI::Range(1, 3'600'000));
  cmd.add_option("--input-seed", flags.seed, "input seed")->capture_default_str();
  cmd.add_flag("--no-baseline", flags.no_baseline, "do not time the PyTorch reference");
}

}  // namespace kernelarc
