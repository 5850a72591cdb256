// A problem's native reference (definition kernelarc.native_reference: a solution.json relative
// to the problem directory): compiled once with the host compiler and run through the kernel
// ABI in an isolated worker, exactly like a candidate. Only CPU solutions are supported.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/problem.h"
#include "core/tensor.h"

namespace kernelarc {

class Worker;

class NativeReference {
 public:
  /// Loads the solution (InputError if it is missing or malformed); compiling waits for the
  /// first run.
  NativeReference(const Problem& problem, std::filesystem::path build_dir,
                  std::filesystem::path worker_executable);
  ~NativeReference();
  NativeReference(const NativeReference&) = delete;
  NativeReference& operator=(const NativeReference&) = delete;

  /// The solution's full content, for cache keys.
  const std::string& identity() const { return identity_; }

  /// The outputs on these inputs, or why the reference failed (compile, load or run).
  std::variant<TensorMap, std::string> compute(const Problem& problem, const Workload& workload,
                                               const TensorMap& inputs);

  struct Timing {
    std::vector<double> times_ns;
    std::string clock;
  };
  /// Timed runs with the cache flushed before each, or why it failed.
  std::variant<Timing, std::string> time(const Problem& problem, const Workload& workload,
                                         const TensorMap& inputs, int warmup, int iterations);

 private:
  struct Run;
  std::variant<Run, std::string> execute(const Problem& problem, const Workload& workload,
                                         const TensorMap& inputs, int warmup, int iterations,
                                         bool timed);
  std::optional<std::string> ensure_loaded();

  Solution solution_;
  std::string identity_;
  std::filesystem::path build_dir_;
  std::filesystem::path worker_executable_;
  std::unique_ptr<Worker> worker_;
  bool loaded_ = false;
  std::string load_error_;
};

}  // namespace kernelarc
