#include "synth/bound_template.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "core/hash.h"
#include "core/json_fields.h"

namespace kernelarc {

namespace {

FamilyBinding bind_problem(const KernelTemplate& kernel, const Problem& problem) {
  const std::string& family = problem.definition.ext.op_family;
  const std::string where = (problem.dir / "definition.json").string();
  if (family.empty())
    throw TemplateMismatch(where + ": kernelarc.op_family: not given, so no template applies");
  if (!kernel.serves(family)) {
    throw TemplateMismatch(
        fmt::format("template {} does not serve op family \"{}\"", kernel.name, family));
  }
  const FamilyBinder* binder = find_family_binder(family);
  if (binder == nullptr)
    throw TemplateMismatch(where + ": kernelarc.op_family: no binder for \"" + family + "\"");
  return binder->bind(problem.definition, kernel);
}

/// What knob constraints see besides the knobs: const axes, the binding's constants and the
/// device limits.
AxisValues constraint_variables(const Definition& definition, const FamilyBinding& binding,
                                const DeviceLimits& limits) {
  AxisValues values;
  for (const Axis& axis : definition.axes)
    if (axis.kind == AxisKind::Const) values[axis.name] = axis.value;
  for (const auto& [name, value] : binding.constants) values[name] = value;
  values["MAX_THREADS"] = limits.max_threads;
  values["MAX_SHARED_BYTES"] = limits.max_shared_bytes;
  values["MAX_SHARED_BYTES_PER_SM"] = limits.max_shared_bytes_per_sm;
  return values;
}

/// The launch spec with every size and constant of the binding written out, so that only axes
/// and knobs are left for the backend to bind.
OrderedJson resolve_launch_names(const KernelTemplate& kernel, const FamilyBinding& binding) {
  if (kernel.launch.is_null()) return nullptr;
  std::map<std::string, std::string> names(binding.sizes.begin(), binding.sizes.end());
  for (const auto& [name, value] : binding.constants) names[name] = std::to_string(value);
  OrderedJson launch = kernel.launch;
  auto rewrite = [&](OrderedJson& value) {
    if (value.is_string()) value = substitute_names(value.get<std::string>(), names);
  };
  for (auto& [key, value] : launch.items()) {
    if (value.is_array()) {
      for (auto& element : value) rewrite(element);
    } else {
      rewrite(value);
    }
  }
  if (!launch.contains("kernel")) launch["kernel"] = kernel.entry_point;
  return launch;
}

/// The knob space with each constraint's SHARED_BYTES written out as the launch's shared_bytes,
/// so that a constraint on shared memory (per block, or per multiprocessor with several blocks
/// resident) reads the one formula the launch uses instead of a copy of it.
KnobSpace with_launch_shared_bytes(const KernelTemplate& kernel, const OrderedJson& launch) {
  constexpr const char* kName = "SHARED_BYTES";
  std::vector<std::string> constraints = kernel.knobs.constraints();
  const bool named = std::ranges::any_of(constraints, [&](const std::string& constraint) {
    return expr_variables(constraint).contains(kName);
  });
  if (!named) return kernel.knobs;
  if (launch.is_null() || !launch.contains("shared_bytes")) {
    throw InputError("template " + kernel.name + ": a constraint names " + kName +
                     ", and its launch has no shared_bytes for it to stand for");
  }
  const OrderedJson& shared = launch["shared_bytes"];
  const std::map<std::string, std::string> names{
      {kName, shared.is_string() ? shared.get<std::string>() : shared.dump()}};
  for (std::string& constraint : constraints) constraint = substitute_names(constraint, names);
  return KnobSpace(kernel.knobs.knobs(), std::move(constraints));
}

int64_t evaluate_size(const OrderedJson& value, const AxisValues& variables) {
  return value.is_number_integer() ? value.get<int64_t>()
                                   : evaluate_expr(value.get<std::string>(), variables);
}

std::array<int64_t, 3> evaluate_dims(const OrderedJson& list, const AxisValues& variables) {
  std::array<int64_t, 3> dims{1, 1, 1};
  for (std::size_t i = 0; i < list.size() && i < 3; ++i)
    dims[i] = evaluate_size(list[i], variables);
  return dims;
}

std::string describe_axes(const AxisValues& axes) {
  std::string text;
  for (const auto& [name, value] : axes)
    text += fmt::format("{}{}={}", text.empty() ? "" : " ", name, value);
  return text;
}

/// Why a launch with these dimensions cannot happen, or an empty string.
std::string launch_limit_violation(const std::array<int64_t, 3>& grid,
                                   const std::array<int64_t, 3>& block, int64_t shared_bytes,
                                   const DeviceLimits& limits) {
  const int64_t threads = block[0] * block[1] * block[2];
  if (block[0] < 1 || block[1] < 1 || block[2] < 1)
    return fmt::format("block ({}, {}, {}) has an empty dimension", block[0], block[1], block[2]);
  if (threads > limits.max_threads)
    return fmt::format("a block of {} threads exceeds the limit of {}", threads,
                       limits.max_threads);
  if (block[2] > 64) return fmt::format("block z {} exceeds 64", block[2]);
  if (grid[0] < 0 || grid[1] < 0 || grid[2] < 0)
    return fmt::format("grid ({}, {}, {}) is negative", grid[0], grid[1], grid[2]);
  if (grid[0] > (int64_t{1} << 31) - 1) return fmt::format("grid x {} exceeds 2^31-1", grid[0]);
  if (grid[1] > 65535 || grid[2] > 65535)
    return fmt::format("grid ({}, {}, {}) exceeds 65535 in y or z", grid[0], grid[1], grid[2]);
  if (shared_bytes < 0 || shared_bytes > limits.max_shared_bytes) {
    return fmt::format("{} bytes of dynamic shared memory exceed the limit of {}", shared_bytes,
                       limits.max_shared_bytes);
  }
  return "";
}

/// Defines for every label of every enum knob, so a template writes `MODE == KA_MODE_table`.
std::string enum_label_defines(const KnobSpace& space) {
  std::string text;
  for (const Knob& knob : space.knobs()) {
    if (knob.type() != KnobType::Enum) continue;
    for (uint64_t i = 0; i < knob.size(); ++i) {
      text += fmt::format("#define KA_{}_{} {}\n", knob.name(),
                          std::get<std::string>(knob.value_at(i)), i);
    }
  }
  return text;
}

}  // namespace

BoundTemplate::BoundTemplate(const KernelTemplate& kernel, const Problem& problem,
                             DeviceLimits limits)
    : kernel_(&kernel),
      problem_(&problem),
      binding_(bind_problem(kernel, problem)),
      limits_(limits),
      launch_(resolve_launch_names(kernel, binding_)),
      space_(with_launch_shared_bytes(kernel, launch_),
             constraint_variables(problem.definition, binding_, limits)) {}

std::map<std::string, int64_t> BoundTemplate::knob_defines(const KnobPoint& point) const {
  const KnobCoords coords = space_.space().coords_of(point);
  std::map<std::string, int64_t> defines;
  const auto& knobs = space_.space().knobs();
  for (std::size_t i = 0; i < knobs.size(); ++i)
    defines[knobs[i].name()] = knobs[i].expr_value_at(coords[i]);
  return defines;
}

std::optional<std::string> BoundTemplate::infeasible(const KnobPoint& point) const {
  if (launch_.is_null()) return std::nullopt;
  const auto defines = knob_defines(point);
  for (const Workload& workload : problem_->workloads) {
    AxisValues variables = resolve_axes(problem_->definition, workload);
    const std::string where =
        fmt::format("workload {} ({})", workload.uuid, describe_axes(workload.axes));
    variables.insert(defines.begin(), defines.end());
    try {
      const auto grid = evaluate_dims(launch_.at("grid"), variables);
      const auto block = evaluate_dims(launch_.at("block"), variables);
      const int64_t shared =
          launch_.contains("shared_bytes") ? evaluate_size(launch_["shared_bytes"], variables) : 0;
      if (std::string violation = launch_limit_violation(grid, block, shared, limits_);
          !violation.empty()) {
        return where + ": " + violation;
      }
    } catch (const ExprError& error) {
      return where + ": launch spec: " + error.what();
    }
  }
  return std::nullopt;
}

Solution BoundTemplate::instantiate(const KnobPoint& point,
                                    const std::map<std::string, std::string>& extra_files) const {
  const std::string point_text = format_knob_point(point);
  if (!space_.is_valid(point)) {
    std::string why = "it is outside the knob domains or fails a constraint";
    if (space_.satisfies(point)) why = "it failed before and is in the failure cache";
    const auto& constraints = space_.space().constraints();
    if (!space_.satisfies(point)) {
      AxisValues variables =
          space_.space().expr_variables_at(space_.space().coords_of(point), space_.axes());
      for (const std::string& constraint : constraints) {
        try {
          if (evaluate_expr(constraint, variables) == 0) {
            why = "it fails the constraint \"" + constraint + "\"";
            break;
          }
        } catch (const ExprError& error) {
          why = "the constraint \"" + constraint + "\" cannot be evaluated: " + error.what();
          break;
        }
      }
    }
    throw InputError(fmt::format("template {}: knob point \"{}\" is not valid: {}", kernel_->name,
                                 point_text, why));
  }
  const Definition& definition = problem_->definition;
  Solution solution;
  solution.name = fmt::format("{}__{}__{}", definition.name, kernel_->name,
                              content_hash(point_text).substr(0, 10));
  solution.definition = definition.name;
  solution.author = "kernelarc templates";
  solution.description =
      fmt::format("template {} at {}: {}", kernel_->name,
                  point_text.empty() ? "its only point" : point_text, kernel_->description);
  solution.languages = {kernel_->target == DeviceKind::Cuda ? "cuda_cpp" : "cpp"};
  solution.target_hardware = {std::string(device_kind_name(kernel_->target))};
  solution.entry_file = kernel_->sources.front();
  solution.entry_symbol = kernel_->entry_point;
  solution.cflags = kernel_->cflags;
  solution.cuda_cflags = kernel_->cuda_cflags;
  solution.ld_flags = kernel_->ld_flags;
  for (const std::string& source : kernel_->sources)
    solution.sources.push_back({source, read_text_file(kernel_->dir / source)});
  for (const std::string& common : kernel_->common)
    solution.sources.push_back({common, read_text_file(kernel_->common_dir / common)});
  solution.sources.push_back(
      {"ka_problem.h", binding_.header + "\n" + enum_label_defines(space_.space())});
  for (const auto& [name, content] : extra_files) solution.sources.push_back({name, content});

  OrderedJson ext = OrderedJson::object();
  const std::map<std::string, int64_t> defines = knob_defines(point);
  ext["knobs"] = defines;
  // Carried with the solution, so that every report of it (bench rows, exports) can say so.
  if (auto trades = space_.space().accuracy_trades(point); !trades.empty())
    ext["trades_accuracy"] = std::move(trades);
  if (!launch_.is_null()) ext["launch"] = launch_;
  if (!kernel_->arch.empty()) ext["arch"] = kernel_->arch;
  if (kernel_->workspace_bytes.is_string()) {
    // A size the binding names (the fused family's WORKSPACE_BYTES), a constant or a knob (a
    // route that needs more room) is written out, so that the solution's expression names axes
    // only.
    std::map<std::string, std::string> names(binding_.sizes.begin(), binding_.sizes.end());
    for (const auto& [name, value] : binding_.constants) names[name] = std::to_string(value);
    for (const auto& [name, value] : defines) names[name] = std::to_string(value);
    ext["workspace_bytes"] = substitute_names(kernel_->workspace_bytes.get<std::string>(), names);
  } else if (!kernel_->workspace_bytes.is_null()) {
    ext["workspace_bytes"] = kernel_->workspace_bytes;
  }
  ext["template"] = {
      {"name", kernel_->name}, {"family", definition.ext.op_family}, {"point", point_text}};
  solution.ext = ext;
  solution.path = kernel_->dir / "template.json";
  return solution;
}

std::vector<TemplateMatch> match_templates(const std::vector<KernelTemplate>& library,
                                           const Problem& problem, DeviceKind target,
                                           DeviceLimits limits) {
  std::vector<TemplateMatch> matches;
  for (const KernelTemplate& kernel : library) {
    if (kernel.target != target || !kernel.serves(problem.definition.ext.op_family)) continue;
    TemplateMatch match;
    match.kernel = &kernel;
    try {
      match.bound.emplace(kernel, problem, limits);
      if (match.bound->space().first_valid(1).empty()) {
        match.reason = "no knob point satisfies the constraints for this problem (" +
                       fmt::format("{}", fmt::join(kernel.knobs.constraints(), "; ")) + ")";
        match.bound.reset();
      }
    } catch (const InputError& error) {
      match.reason = error.what();
    }
    matches.push_back(std::move(match));
  }
  return matches;
}

std::string describe_no_template(const std::vector<KernelTemplate>& library, const Problem& problem,
                                 DeviceKind target) {
  const Definition& definition = problem.definition;
  const std::string& family = definition.ext.op_family;
  if (family.empty()) {
    return fmt::format(
        "problem {} ({}) has no kernelarc.op_family in its definition, so no template serves it",
        definition.name, problem.dir.string());
  }
  std::set<std::string> families;
  for (const KernelTemplate& kernel : library)
    if (kernel.target == target) families.insert(kernel.families.begin(), kernel.families.end());
  return fmt::format(
      "no {} template serves op family \"{}\" of problem {} (the {} templates "
      "serve: {})",
      device_kind_name(target), family, definition.name, device_kind_name(target),
      fmt::join(families, ", "));
}

std::string substitute_names(std::string_view expression,
                             const std::map<std::string, std::string>& names) {
  std::string result;
  std::size_t i = 0;
  while (i < expression.size()) {
    const char c = expression[i];
    const bool starts_name = std::isalpha(static_cast<unsigned char>(c)) || c == '_';
    // A name never starts inside a number such as 1e5.
    const bool after_digit = i > 0 && std::isdigit(static_cast<unsigned char>(expression[i - 1]));
    if (!starts_name || after_digit) {
      result += c;
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < expression.size() &&
           (std::isalnum(static_cast<unsigned char>(expression[end])) || expression[end] == '_'))
      ++end;
    const std::string name(expression.substr(i, end - i));
    const auto found = names.find(name);
    result += found == names.end() ? name : "(" + found->second + ")";
    i = end;
  }
  return result;
}

}  // namespace kernelarc
