// One problem, oracle and guard on a scratch workspace, shared by the tests of a suite so the
// oracle's cache serves all of them; used by the CPU and the GPU guard tests.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "core/problem.h"
#include "eval/guard.h"
#include "oracle/oracle.h"

namespace kernelarc::testing {

inline OracleOptions harness_oracle_options(const std::filesystem::path& workspace,
                                            const std::string& device) {
  OracleOptions options;
  options.cache_dir = workspace / "oracle";
  options.device = backend_for(device).kind();
  options.worker_executable = KERNELARC_BINARY;
  return options;
}

inline std::filesystem::path harness_workspace() {
  static std::atomic<int> counter{0};
  return std::filesystem::temp_directory_path() /
         ("kernelarc-guard-test-" + std::to_string(getpid()) + "-" +
          std::to_string(counter.fetch_add(1)));
}

class GuardHarness {
 public:
  /// `tune` adjusts the guard's options after the harness has set device, workspace and worker.
  GuardHarness(const std::filesystem::path& problem_dir, const std::string& device,
               const std::function<void(GuardOptions&)>& tune)
      : workspace_(harness_workspace()),
        problem_(load_problem(problem_dir)),
        oracle_(harness_oracle_options(workspace_, device)),
        guard_(guard_options(device, tune), oracle_) {}
  ~GuardHarness() {
    std::error_code ignored;
    std::filesystem::remove_all(workspace_, ignored);
  }
  /// A harness for `problem` as given (e.g. with fewer workloads, so the oracle prepares less).
  GuardHarness(Problem problem, const std::string& device,
               const std::function<void(GuardOptions&)>& tune)
      : workspace_(harness_workspace()),
        problem_(std::move(problem)),
        oracle_(harness_oracle_options(workspace_, device)),
        guard_(guard_options(device, tune), oracle_) {}
  /// A harness with a workspace of its own that shares `oracle_from`'s oracle cache, so the
  /// draws that harness prepared serve this one too; `oracle_from` must outlive it.
  GuardHarness(const std::filesystem::path& problem_dir, const std::string& device,
               const std::function<void(GuardOptions&)>& tune, const GuardHarness& oracle_from)
      : workspace_(harness_workspace()),
        problem_(load_problem(problem_dir)),
        oracle_(harness_oracle_options(oracle_from.workspace_, device)),
        guard_(guard_options(device, tune), oracle_) {}
  GuardHarness(const GuardHarness&) = delete;
  GuardHarness& operator=(const GuardHarness&) = delete;

  const Problem& problem() const { return problem_; }
  Guard& guard() { return guard_; }

  /// The smallest (or largest) workload by the product of its axes.
  Workload pick_workload(bool largest) const {
    auto size = [](const Workload& workload) {
      int64_t product = 1;
      for (const auto& [name, value] : workload.axes) product *= value;
      return product;
    };
    const Workload* picked = &problem_.workloads.front();
    for (const auto& workload : problem_.workloads) {
      if (largest ? size(workload) > size(*picked) : size(workload) < size(*picked)) {
        picked = &workload;
      }
    }
    return *picked;
  }

  /// The guard's workspace (calibration, build cache); removed with the harness.
  const std::filesystem::path& workspace() const { return workspace_; }

  /// The smallest workload with at least `elements` as the product of its axes.
  Workload pick_workload_of_at_least(int64_t elements) const {
    auto size = [](const Workload& workload) {
      int64_t product = 1;
      for (const auto& [name, value] : workload.axes) product *= value;
      return product;
    };
    const Workload* picked = nullptr;
    for (const auto& workload : problem_.workloads) {
      if (size(workload) >= elements && (!picked || size(workload) < size(*picked))) {
        picked = &workload;
      }
    }
    if (!picked) {
      throw std::runtime_error("no workload of " + std::to_string(elements) + " elements");
    }
    return *picked;
  }

  /// One solution on one workload; exactly one trace comes back.
  Trace evaluate(const std::filesystem::path& solution_path, const Workload& workload) {
    const std::vector<Workload> workloads{workload};
    auto traces = guard_.evaluate(problem_, load_solution(solution_path), workloads);
    if (traces.size() != 1) throw std::runtime_error("expected one trace");
    return traces.front();
  }

 private:
  GuardOptions guard_options(const std::string& device,
                             const std::function<void(GuardOptions&)>& tune) const {
    GuardOptions options;
    options.device = device;
    options.workspace = workspace_;
    options.worker_executable = KERNELARC_BINARY;
    // Few timed calls, each on a draw of its own that the oracle computes: enough for every
    // check of the timed calls (the address slots wrap, the twin audit, the medians), without
    // the production 20 draws per workload that would make the suites slow.
    options.timing_draws = 4;
    options.min_iterations = 4;
    tune(options);
    return options;
  }

  std::filesystem::path workspace_;
  Problem problem_;
  Oracle oracle_;
  Guard guard_;
};

}  // namespace kernelarc::testing
