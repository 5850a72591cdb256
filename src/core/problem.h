// The problem format: SOL-ExecBench / FlashInfer-Bench definition.json, workload.jsonl and
// solution.json, read natively. kernelarc's own fields live under the "kernelarc" key of a
// definition or a solution (see docs/FORMAT.md).
//
// Every loader validates fully and raises InputError naming the file, the line (for JSONL) or
// field path, and what was expected; nothing malformed gets past it. What the upstream schemas
// accept is accepted: null for an optional field means absent, and fields kernelarc does not
// use are ignored (kept in `raw`), as pydantic ignores them. kernelarc's own "kernelarc" objects
// stay strict, so that a typo in them cannot pass silently.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/expr.h"

namespace kernelarc {

using OrderedJson = nlohmann::ordered_json;

enum class AxisKind { Const, Var, Expr };

struct Axis {
  std::string name;
  AxisKind kind = AxisKind::Var;
  int64_t value = 0;       ///< for Const
  std::string expression;  ///< for Expr
};

struct TensorSpec {
  std::string name;
  /// Axis names; nullopt for a Python scalar (shape null), empty for a 0-D tensor. An entry may
  /// also be a decimal number ("1"), a literal size as SOL-ExecBench reads it: resolve_axes
  /// gives it a value under its own text, so a shape resolves the same either way.
  std::optional<std::vector<std::string>> shape;
  DType dtype = DType::Float32;
  std::string description;

  bool is_scalar() const { return !shape.has_value(); }
};

/// SOL-ExecBench's per-workload tolerance; the defaults are SOL-ExecBench's.
struct Tolerance {
  double max_atol = 1e-2;
  double max_rtol = 1e-2;
  double required_matched_ratio = 0.99;
  std::optional<double> max_error_cap;
  bool allow_negative_inf = false;
};

/// kernelarc's extension fields of a definition ("kernelarc": {...}).
struct DefinitionExtension {
  std::string op_family;  ///< e.g. "rmsnorm", "softmax", "gemm"; maps the problem to templates
  /// The family's parameters (eps, fusion expressions, ...): an object, {} when absent. Its
  /// fields are checked by the family's binder in the synth layer, which knows them.
  OrderedJson op_params = OrderedJson::object();
  std::string flops;  ///< expression over axes; empty = not given
  std::string bytes;  ///< unique bytes read + written, expression over axes; empty = derived
  /// solution.json of a native reference, relative to the problem directory; empty = none.
  std::string native_reference;
  /// Python source defining run(...) as a PyTorch user would write the op at the problem's
  /// dtypes; timed as the eager and torch.compile baselines instead of the reference, which may
  /// compute in higher precision to be an accurate oracle (a float32 GEMM is 16x slower than
  /// the bfloat16 one a user runs). Empty = the reference is the baseline.
  std::string baseline;
  /// What `baseline` is held to against the reference before it is timed, where the code a
  /// user runs rounds more than the oracle (a bfloat16 autograd against a float32 one) and the
  /// workload's tolerance, made for kernels, would refuse it. Absent: the workload's.
  std::optional<Tolerance> baseline_tolerance;
};

struct Definition {
  std::string name;
  std::string op_type;
  std::string description;
  std::vector<Axis> axes;
  std::vector<std::string> constraints;  ///< every one, as written
  /// The constraints that name an input (FlashInfer's "n == indptr[-1].item()"): they read input
  /// data, so kernelarc keeps them for readers but does not evaluate them.
  std::vector<std::string> data_constraints;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::string reference;                 ///< Python source defining run(...)
  std::string custom_inputs_entrypoint;  ///< empty = none
  DefinitionExtension ext;
  OrderedJson raw;  ///< the file as read, for hashing and export
  std::filesystem::path path;

  const Axis* find_axis(std::string_view name) const;
};

enum class InputKind { Random, Scalar, Safetensors, Custom };

struct WorkloadInput {
  InputKind kind = InputKind::Random;
  double scalar_value = 0;  ///< for Scalar
  std::string path;         ///< for Safetensors, relative to the problem directory
  std::string tensor_key;   ///< for Safetensors
};

struct Workload {
  std::string uuid;
  AxisValues axes;  ///< the var axes only, as written
  std::map<std::string, WorkloadInput> inputs;
  Tolerance tolerance;
  OrderedJson raw;  ///< the bare workload object as read
  int line = 0;     ///< 1-based line in workload.jsonl
};

struct SourceFile {
  std::string path;  ///< relative, no "..", unique
  std::string content;
};

struct Solution {
  std::string name;
  std::string definition;
  std::string author;
  std::string description;
  std::vector<std::string> languages;  ///< "cpp" (CPU) or "cuda_cpp"/"cuda" (CUDA), ...
  std::vector<std::string> target_hardware;
  std::string entry_file;    ///< the part of entry_point before "::"
  std::string entry_symbol;  ///< the part after "::"
  bool destination_passing_style = true;
  std::vector<std::string> cflags;
  std::vector<std::string> cuda_cflags;
  std::vector<std::string> ld_flags;
  std::string binding;  ///< spec.binding ("torch", "tvm-ffi"); empty = not given (kernelarc ABI)
  std::vector<SourceFile> sources;
  OrderedJson ext;  ///< the "kernelarc" object, {} when absent
  OrderedJson raw;  ///< the file as read (fields kernelarc does not use are kept only here)
  std::filesystem::path path;
};

struct Problem {
  std::filesystem::path dir;
  Definition definition;
  std::vector<Workload> workloads;
};

Definition parse_definition(const OrderedJson& json, const std::string& where);
Definition load_definition(const std::filesystem::path& path);
/// Reads workload.jsonl: bare workloads (SOL-ExecBench) or trace-wrapped lines (FlashInfer-Bench,
/// {"definition":..,"workload":{..}}). Empty lines are skipped. Each workload is validated
/// against the definition (every var axis given, no unknown axis or input, custom inputs all or
/// none, constraints hold).
std::vector<Workload> load_workloads(const std::filesystem::path& path, const Definition& def);
/// A tolerance object (a workload's `tolerance`, a definition's `kernelarc.baseline_tolerance`):
/// absent or null fields keep SOL-ExecBench's defaults; `field` names it in errors.
Tolerance parse_tolerance(const OrderedJson& value, std::string_view where,
                          const std::string& field);
/// Loads <dir>/definition.json and <dir>/workload.jsonl.
Problem load_problem(const std::filesystem::path& dir);

/// Reads a solution.json (or a directory holding one). A source given as {"path", "content"} is
/// used as is; {"path"} alone is read from the file beside solution.json.
Solution load_solution(const std::filesystem::path& path);
Solution parse_solution(const OrderedJson& json, const std::string& where,
                        const std::filesystem::path& base_dir);
/// SOL-ExecBench form, sources inline.
OrderedJson solution_to_json(const Solution& solution);
/// kernelarc.trades_accuracy: "KNOB=value: what is given up" for each knob value of a template
/// solution that gives up accuracy the reference keeps (synth/knob.h); empty for most.
std::vector<std::string> solution_accuracy_trades(const Solution& solution);

/// Every axis value for a workload: const, var (from the workload) and expr (evaluated in
/// dependency order). Throws InputError on a missing or negative value, a cyclic or failing
/// expression, or a constraint that does not hold.
AxisValues resolve_axes(const Definition& def, const Workload& workload);
/// The definition's axis names, in definition order.
std::vector<std::string> axis_names(const Definition& def);
/// The problem's workload with this uuid (a trace's "workload"."uuid"), or nullptr.
const Workload* find_workload(const Problem& problem, std::string_view uuid);
/// Concrete shape of a tensor ({} for scalars and 0-D tensors).
std::vector<int64_t> resolve_shape(const TensorSpec& spec, const AxisValues& axes);
/// The bytes of every input and output tensor at these axis values, each counted once: what a
/// workload holds in memory before any intermediate.
double tensor_bytes(const Definition& def, const AxisValues& axes);
/// The size a shape entry that is a decimal number stands for ("128" -> 128); nullopt for an
/// axis name (or a number too large for int64).
std::optional<int64_t> literal_size(std::string_view shape_entry);

}  // namespace kernelarc
