// Launch plans: how a device-only kernel compiled by NVRTC is called through the kernel ABI.
//
// A CUDA solution whose "kernelarc" object has a "launch" member holds device code only. The
// backend compiles it with NVRTC and launches the kernel itself, so the candidate needs no host
// code and compiles in milliseconds. The solution declares, with integer expressions over the
// definition's axes and the solution's knobs (core/expr.h):
//
//   "kernelarc": {
//     "launch": {"kernel": "rmsnorm<256>",             // default: the entry point's symbol
//                "grid": ["batch", 1, 1], "block": ["BLOCK"],   // 1 to 3 entries, missing = 1
//                "shared_bytes": "BLOCK * 4",          // dynamic shared memory, default 0
//                "cluster": [2, 1, 1]},                // optional thread-block cluster
//     "knobs": {"BLOCK": 256}                          // integers; also passed as -DBLOCK=256
//   }
//
// Calling convention. The kernel's parameters are, in this order:
//   1. one pointer per input, in the definition's order (a scalar input is a device pointer to
//      its one element);
//   2. one pointer per output, in the definition's order;
//   3. one `long long` (int64) per axis of the definition, in definition order: const, var and
//      expr axes alike, with this call's values.
// No workspace is passed. For example, inputs x[batch, hidden] and weight[hidden], output
// y[batch, hidden] and axes (batch, hidden) give
//   __global__ void rmsnorm(const bf16* x, const bf16* weight, bf16* y, long long batch,
//                           long long hidden)
// At call time the var axes are read off the tensors' shapes, so every var axis must appear in
// some input or output shape; expr axes are then evaluated.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/solution_knobs.h"
#include "core/problem.h"
#include "kernelarc/abi.h"

namespace kernelarc {

/// The launch expressions as the solution writes them (integers are kept as their text).
struct LaunchSpec {
  std::string kernel;  ///< the name expression NVRTC resolves ("f", "ns::f<128>")
  std::array<std::string, 3> grid{"1", "1", "1"};
  std::array<std::string, 3> block{"1", "1", "1"};
  std::string shared_bytes = "0";
  std::optional<std::array<std::string, 3>> cluster;
};

/// Reads ext["launch"] and ext["knobs"] of a solution. `default_kernel` is used when the launch
/// names no kernel. Returns an error message (naming the field) instead of throwing, since a
/// candidate's bad launch spec is a compile error of that candidate.
std::optional<std::string> parse_launch_spec(const OrderedJson& ext,
                                             const std::string& default_kernel, LaunchSpec& spec,
                                             std::map<std::string, int64_t>& knobs);

/// Everything the worker needs to run a cubin as if it were a library exporting ka_run. The
/// compiler writes it as JSON beside the cubin.
struct LaunchPlan {
  std::string cubin_file;  ///< relative to the plan file
  std::string symbol;      ///< the kernel's lowered name in the cubin
  LaunchSpec spec;
  std::map<std::string, int64_t> knobs;
  std::vector<Axis> axes;  ///< the definition's axes, in order
  /// Axis names of each input/output dimension; nullopt for a scalar input.
  std::vector<std::optional<std::vector<std::string>>> input_shapes;
  std::vector<std::optional<std::vector<std::string>>> output_shapes;

  nlohmann::json to_json() const;
  /// Throws InputError naming `where` and the field on a malformed plan.
  static LaunchPlan from_json(const nlohmann::json& json, const std::string& where);
};

/// The plan for a spec against a definition, or an error when the expressions use unknown
/// names or a var axis is in no tensor shape (then it cannot be read at call time).
std::optional<std::string> make_launch_plan(const LaunchSpec& spec,
                                            const std::map<std::string, int64_t>& knobs,
                                            const Definition& definition, LaunchPlan& plan);

/// The file name the compiler gives a plan; the worker uses it to tell a plan from a library.
inline constexpr const char* kLaunchPlanFileName = "kernel.launch.json";
/// True when `path` is a launch plan rather than a shared library.
bool is_launch_plan(const std::filesystem::path& path);

/// One call's launch, evaluated from the tensors' shapes.
struct LaunchConfig {
  std::array<int64_t, 3> grid{};
  std::array<int64_t, 3> block{};
  int64_t shared_bytes = 0;
  std::optional<std::array<int64_t, 3>> cluster;
  std::vector<int64_t> axis_values;  ///< in definition order: the kernel's trailing arguments
};

/// Binds a plan's axes to the tensors of one call and evaluates its expressions. Keeps the last
/// result, so a loop over calls of one shape evaluates nothing.
class LaunchResolver {
 public:
  explicit LaunchResolver(LaunchPlan plan);

  /// Fills `config`; returns an error message when the tensors do not match the plan (count,
  /// rank, an axis with two values) or an expression fails or gives a size below 1.
  std::optional<std::string> resolve(const ka_tensor* inputs, int n_inputs,
                                     const ka_tensor* outputs, int n_outputs, LaunchConfig& config);
  const LaunchPlan& plan() const { return plan_; }

 private:
  std::optional<std::string> bind_axes(const ka_tensor* inputs, const ka_tensor* outputs,
                                       AxisValues& values) const;

  LaunchPlan plan_;
  std::vector<std::vector<std::string>> expr_axis_variables_;  ///< per axis; empty unless expr
  std::vector<int64_t> last_key_;  ///< the tensors' dimensions of the cached config
  LaunchConfig last_config_;
  bool has_last_ = false;
};

}  // namespace kernelarc
