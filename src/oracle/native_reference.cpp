#include "oracle/native_reference.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_compiler.h"
#include "backend/worker/worker.h"

namespace kernelarc {

namespace {

constexpr std::size_t kArenaAlignment = 64;

std::string describe_failure(const ExecuteResult& result) {
  std::string text = "native reference " + std::string(call_outcome_name(result.outcome));
  if (result.outcome == CallOutcome::Failed)
    text += " (return code " + std::to_string(result.return_code) + ")";
  if (!result.message.empty()) text += ": " + result.message;
  if (!result.log_tail.empty()) text += "\n" + result.log_tail;
  return text;
}

/// The scratch memory the solution declares (kernelarc.workspace_bytes: a number or an
/// expression over the axes).
std::size_t workspace_bytes(const Solution& solution, const AxisValues& axes) {
  auto declared = solution.ext.find("workspace_bytes");
  if (declared == solution.ext.end()) return 0;
  if (declared->is_number_integer()) return declared->get<std::size_t>();
  return static_cast<std::size_t>(evaluate_expr(declared->get<std::string>(), axes));
}

}  // namespace

struct NativeReference::Run {
  TensorMap outputs;
  std::vector<double> times_ns;
  std::string clock;
};

NativeReference::NativeReference(const Problem& problem, std::filesystem::path build_dir,
                                 std::filesystem::path worker_executable)
    : solution_(load_solution(problem.dir / problem.definition.ext.native_reference)),
      identity_(solution_to_json(solution_).dump()),
      build_dir_(std::move(build_dir)),
      worker_executable_(std::move(worker_executable)) {}

NativeReference::~NativeReference() = default;

std::optional<std::string> NativeReference::ensure_loaded() {
  if (loaded_) return std::nullopt;
  if (!load_error_.empty()) return load_error_;
  CpuCompileOptions options;
  options.cache_dir = build_dir_;
  CompileResult compiled = compile_cpu_solution(solution_, options);
  if (!compiled.ok) {
    load_error_ =
        "native reference " + solution_.path.string() + " does not compile:\n" + compiled.log;
    return load_error_;
  }
  WorkerOptions worker_options;
  worker_options.device = "cpu";
  worker_options.executable = worker_executable_;
  worker_ = std::make_unique<Worker>(worker_options);
  ExecuteResult loaded = worker_->load(compiled.library, solution_.entry_symbol);
  if (loaded.outcome != CallOutcome::Ok) {
    load_error_ = describe_failure(loaded);
    worker_.reset();
    return load_error_;
  }
  loaded_ = true;
  return std::nullopt;
}

std::variant<NativeReference::Run, std::string> NativeReference::execute(const Problem& problem,
                                                                         const Workload& workload,
                                                                         const TensorMap& inputs,
                                                                         int warmup, int iterations,
                                                                         bool timed) {
  if (auto error = ensure_loaded()) return *error;
  const Definition& def = problem.definition;
  AxisValues axes = resolve_axes(def, workload);

  ExecuteRequest request;
  std::size_t end = 0;
  auto place = [&](DType dtype, std::vector<int64_t> shape, const std::string& name) {
    ArenaTensor tensor{dtype, std::move(shape), end, name};
    std::size_t bytes = static_cast<std::size_t>(shape_numel(tensor.shape)) * dtype_size(dtype);
    end += (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    return tensor;
  };
  for (const TensorSpec& spec : def.inputs) {
    const HostTensor& tensor = inputs.at(spec.name);
    request.inputs.push_back(place(tensor.dtype, tensor.shape, spec.name));
  }
  for (const TensorSpec& spec : def.outputs) {
    request.outputs.push_back(place(spec.dtype, resolve_shape(spec, axes), spec.name));
    // All-ones bytes are NaN for every float type: an element the reference skips stands out.
    request.output_poison.emplace_back(dtype_size(spec.dtype), uint8_t{0xFF});
  }
  std::size_t arena_bytes = std::max(end, kArenaAlignment);
  auto arena = worker_->arena(arena_bytes);
  for (std::size_t i = 0; i < def.inputs.size(); ++i) {
    const HostTensor& tensor = inputs.at(def.inputs[i].name);
    std::memcpy(arena.data() + request.inputs[i].offset, tensor.bytes.data(), tensor.nbytes());
  }
  try {
    request.workspace_bytes = workspace_bytes(solution_, axes);
  } catch (const ExprError& error) {
    return solution_.path.string() + ": kernelarc.workspace_bytes: " + error.what();
  }
  request.warmup = warmup;
  request.iterations = iterations;
  request.flush_cache = timed;
  request.copy_back = !timed;

  ExecuteResult result = worker_->execute(request);
  if (result.outcome != CallOutcome::Ok) return describe_failure(result);
  Run run;
  run.times_ns = std::move(result.times_ns);
  run.clock = std::move(result.clock);
  if (!timed) {
    arena = worker_->arena(arena_bytes);
    for (std::size_t i = 0; i < def.outputs.size(); ++i) {
      const ArenaTensor& placed = request.outputs[i];
      HostTensor tensor(placed.dtype, placed.shape);
      std::memcpy(tensor.bytes.data(), arena.data() + placed.offset, tensor.nbytes());
      run.outputs[def.outputs[i].name] = std::move(tensor);
    }
  }
  return run;
}

std::variant<TensorMap, std::string> NativeReference::compute(const Problem& problem,
                                                              const Workload& workload,
                                                              const TensorMap& inputs) {
  auto run = execute(problem, workload, inputs, 0, 1, false);
  if (auto* error = std::get_if<std::string>(&run)) return *error;
  return std::move(std::get<Run>(run).outputs);
}

std::variant<NativeReference::Timing, std::string> NativeReference::time(const Problem& problem,
                                                                         const Workload& workload,
                                                                         const TensorMap& inputs,
                                                                         int warmup,
                                                                         int iterations) {
  auto run = execute(problem, workload, inputs, warmup, iterations, true);
  if (auto* error = std::get_if<std::string>(&run)) return *error;
  Run& done = std::get<Run>(run);
  return Timing{std::move(done.times_ns), std::move(done.clock)};
}

}  // namespace kernelarc
