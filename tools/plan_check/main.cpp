// plan_check: whether the lowering computes what each problem's reference computes.
//
//   plan_check [--python P] [--max-elements N] [--scratch DIR] <problem dir>...
//
// Per problem: trace, lower to a kernel plan, run the plan in double precision on the oracle's
// inputs for the workload the interpreter does least work on, and compare with the reference's
// outputs under that workload's tolerance. Prints one row per problem, then totals. Exit code
// 1 when any lowered plan FAILs.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "plan_check.h"

namespace {

std::string clipped(const std::string& text, std::size_t width) {
  std::string flat = text;
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  return flat.size() <= width ? flat : flat.substr(0, width - 3) + "...";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kernelarc;
  CLI::App app{"plan_check: runs lowered kernel plans against the PyTorch reference"};
  std::vector<std::string> dirs;
  PlanCheckOptions options;
  options.scratch = std::filesystem::temp_directory_path() /
                    fmt::format("kernelarc-plan-check-{}", static_cast<long>(getuid()));
  double max_work = static_cast<double>(options.max_work);
  std::string scratch = options.scratch.string();
  app.add_option("--python", options.python, "Python with torch (default: detect)");
  app.add_option("--max-elements", max_work,
                 "interpret only plans of at most this much work (index-space points, "
                 "multiply-adds for matmuls)");
  app.add_option("--scratch", scratch, "where traces and oracle tensors are cached");
  app.add_option("problems", dirs, "problem directories")->required();
  CLI11_PARSE(app, argc, argv);
  options.max_work = static_cast<int64_t>(max_work);
  options.scratch = scratch;

  OracleOptions oracle_options;
  oracle_options.cache_dir = options.scratch / "oracle";
  oracle_options.python = options.python;
  Oracle oracle(oracle_options);

  int traced = 0, lowered = 0, pass = 0, fail = 0, skip = 0;
  fmt::print("{:<44} {:<34} {:>10} {:>10} {:<5} {}\n", "problem", "lowered (kernels: kinds)",
             "max abs", "max rel", "check", "reason");
  for (const auto& dir : dirs) {
    const PlanCheckRow row = check_problem(dir, options, oracle);
    traced += row.traced;
    lowered += row.lowered;
    pass += row.verdict == "PASS";
    fail += row.verdict == "FAIL";
    skip += row.verdict == "skip";
    const bool compared = row.verdict == "PASS" || row.verdict == "FAIL";
    fmt::print("{:<44} {:<34} {:>10} {:>10} {:<5} {}\n", clipped(row.problem, 44),
               row.lowered ? clipped(row.kernels, 34) : "no",
               compared ? fmt::format("{:.3g}", row.max_abs) : "-",
               compared ? fmt::format("{:.3g}", row.max_rel) : "-", row.verdict,
               clipped(row.reason, 300));
    std::cout.flush();
  }
  fmt::print("\n{} problems: {} traced, {} lowered; interpreter PASS {}, FAIL {}, skip {}\n",
             dirs.size(), traced, lowered, pass, fail, skip);
  return fail > 0 ? 1 : 0;
}
