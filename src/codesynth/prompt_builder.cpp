#include "codesynth/prompt_builder.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/backend.h"
#include "codesynth/synthesized_solution.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "core/paths.h"

namespace kernelarc {

namespace {

constexpr std::string_view kNone = "(none)";
constexpr std::size_t kLogLines = 40;
constexpr std::size_t kLogChars = 4000;

struct PromptFile {
  const char* name;
  std::string PromptTemplates::*text;
};

constexpr std::array<PromptFile, 7> kPromptFiles = {{
    {"system.md", &PromptTemplates::system},
    {"draft.md", &PromptTemplates::draft},
    {"improve.md", &PromptTemplates::improve},
    {"crossover.md", &PromptTemplates::crossover},
    {"repair.md", &PromptTemplates::repair},
    {"response_format.md", &PromptTemplates::response_format},
    {"guard_rules.md", &PromptTemplates::guard_rules},
}};

// Every section a template may name. guard_rules.md and response_format.md fill two of them, so
// they may not name those two themselves.
const std::set<std::string, std::less<>> kPlaceholders = {
    "problem",         "workloads",   "abi",
    "guard_rules",     "hardware",    "strategy",
    "parent_solution", "parent_code", "parent_results",
    "parent_log",      "diagnosis",   "inspirations",
    "knowledge",       "board",       "failures",
    "response_format", "entry_file",  "entry_language",
    "flags_example"};

bool is_fragment_file(std::string_view name) {
  return name == "guard_rules.md" || name == "response_format.md";
}

bool is_placeholder_char(char c) {
  return std::islower(static_cast<unsigned char>(c)) || c == '_';
}

/// Calls `on_text(text)` for the literal runs of `source` and `on_placeholder(name)` for each
/// {{name}} (lower-case letters and '_'); any other "{{" is literal text.
template <typename OnText, typename OnPlaceholder>
void scan_template(std::string_view source, OnText on_text, OnPlaceholder on_placeholder) {
  std::size_t literal = 0;
  std::size_t at = 0;
  while ((at = source.find("{{", at)) != std::string_view::npos) {
    std::size_t end = at + 2;
    while (end < source.size() && is_placeholder_char(source[end])) ++end;
    if (end == at + 2 || source.substr(end, 2) != "}}") {
      ++at;
      continue;
    }
    on_text(source.substr(literal, at - literal));
    on_placeholder(source.substr(at + 2, end - at - 2));
    at = literal = end + 2;
  }
  on_text(source.substr(literal));
}

void check_placeholders(std::string_view text, const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  scan_template(
      text, [](std::string_view) {},
      [&](std::string_view placeholder) {
        const bool self = is_fragment_file(name) &&
                          (placeholder == "guard_rules" || placeholder == "response_format");
        if (kPlaceholders.count(placeholder) && !self) return;
        std::vector<std::string> allowed;
        for (const std::string& known : kPlaceholders)
          if (!is_fragment_file(name) || (known != "guard_rules" && known != "response_format"))
            allowed.push_back("{{" + known + "}}");
        throw InputError(fmt::format("{}: unknown placeholder {{{{{}}}}} (expected one of {})",
                                     file.string(), placeholder, fmt::join(allowed, ", ")));
      });
}

using Sections = std::map<std::string, std::string, std::less<>>;

std::string render(std::string_view source, const Sections& sections, std::string_view name) {
  std::string out;
  scan_template(
      source, [&](std::string_view text) { out += text; },
      [&](std::string_view placeholder) {
        const auto found = sections.find(placeholder);
        if (found == sections.end())
          throw InputError(
              fmt::format("prompt template {}: unknown placeholder {{{{{}}}}}", name, placeholder));
        out += found->second;
      });
  return out;
}

std::string or_none(std::string text) {
  return text.empty() ? std::string(kNone) : text;
}

std::string language_of(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".cu" || extension == ".cuh") return "cuda";
  if (extension == ".c") return "c";
  if (extension == ".py") return "python";
  if (extension == ".json") return "json";
  if (extension == ".cpp" || extension == ".cc" || extension == ".cxx" || extension == ".h" ||
      extension == ".hpp" || extension == ".hh")
    return "cpp";
  return "text";
}

/// A fenced block around `content`, its fence longer than any backtick run that starts a line of
/// it, so that the block cannot end early.
std::string fenced(std::string_view info, std::string_view content) {
  std::size_t longest = 0;
  std::size_t line_start = 0;
  while (line_start < content.size()) {
    std::size_t run = 0;
    while (line_start + run < content.size() && content[line_start + run] == '`') ++run;
    longest = std::max(longest, run);
    const std::size_t newline = content.find('\n', line_start);
    if (newline == std::string_view::npos) break;
    line_start = newline + 1;
  }
  const std::string fence(std::max<std::size_t>(3, longest + 1), '`');
  std::string block = fence + std::string(info) + "\n" + std::string(content);
  if (!block.ends_with('\n')) block += '\n';
  return block + fence;
}

std::string code_files(const std::vector<SourceFile>& sources) {
  std::vector<std::string> blocks;
  for (const SourceFile& source : sources)
    blocks.push_back(fenced(language_of(source.path) + " " + source.path, source.content));
  return fmt::format("{}", fmt::join(blocks, "\n\n"));
}

std::string shape_text(const TensorSpec& tensor) {
  if (tensor.is_scalar()) return "scalar";
  return fmt::format("[{}]", fmt::join(*tensor.shape, ", "));
}

std::string axis_description(const Definition& definition, const std::string& axis) {
  const OrderedJson& axes =
      definition.raw.contains("axes") ? definition.raw["axes"] : OrderedJson();
  if (!axes.is_object() || !axes.contains(axis)) return "";
  const OrderedJson& entry = axes[axis];
  if (!entry.is_object() || !entry.contains("description") || !entry["description"].is_string())
    return "";
  return entry["description"].get<std::string>();
}

std::string tolerance_text(const Tolerance& tolerance) {
  std::string text =
      fmt::format("max_atol {}, max_rtol {}, required matched ratio {}", tolerance.max_atol,
                  tolerance.max_rtol, tolerance.required_matched_ratio);
  if (tolerance.max_error_cap) text += fmt::format(", max error cap {}", *tolerance.max_error_cap);
  if (tolerance.allow_negative_inf) text += ", matching -inf allowed";
  return text;
}

bool all_tolerances_equal(const std::vector<Workload>& workloads) {
  return std::all_of(workloads.begin(), workloads.end(), [&](const Workload& workload) {
    return tolerance_text(workload.tolerance) == tolerance_text(workloads.front().tolerance);
  });
}

void add_tensors(std::string& out, const char* title, const std::vector<TensorSpec>& tensors) {
  out += fmt::format("{}, in ABI order:\n", title);
  for (const TensorSpec& tensor : tensors) {
    out += fmt::format("- {}: {} {}", tensor.name, dtype_name(tensor.dtype), shape_text(tensor));
    if (!tensor.description.empty()) out += ": " + tensor.description;
    out += '\n';
  }
}

std::string problem_section(const Problem& problem) {
  const Definition& definition = problem.definition;
  std::string out = fmt::format("Name: {}", definition.name);
  if (!definition.op_type.empty()) out += fmt::format(" (op_type {})", definition.op_type);
  out += '\n';
  if (!definition.description.empty()) out += definition.description + "\n";
  out += "\nAxes:\n";
  for (const Axis& axis : definition.axes) {
    out += "- " + axis.name + ": ";
    switch (axis.kind) {
      case AxisKind::Const:
        out += fmt::format("const {}", axis.value);
        break;
      case AxisKind::Var:
        out += "var (per workload)";
        break;
      case AxisKind::Expr:
        out += "expr " + axis.expression;
        break;
    }
    const std::string description = axis_description(definition, axis.name);
    if (!description.empty()) out += ": " + description;
    out += '\n';
  }
  if (!definition.constraints.empty())
    out += fmt::format("Constraints: {}\n", fmt::join(definition.constraints, "; "));
  out += '\n';
  add_tensors(out, "Inputs", definition.inputs);
  out += '\n';
  add_tensors(out, "Outputs", definition.outputs);
  const DefinitionExtension& ext = definition.ext;
  if (!ext.op_family.empty()) out += "\nOp family: " + ext.op_family + "\n";
  if (!ext.op_params.empty()) out += "Op parameters: " + ext.op_params.dump() + "\n";
  if (!ext.flops.empty()) out += "FLOPs per call: " + ext.flops + "\n";
  if (!ext.bytes.empty()) out += "Bytes moved per call: " + ext.bytes + "\n";
  if (!problem.workloads.empty() && all_tolerances_equal(problem.workloads))
    out += "\nTolerance (every workload): " + tolerance_text(problem.workloads.front().tolerance) +
           "\n";
  out += "\nReference (PyTorch; the outputs must match it):\n" +
         fenced("python", definition.reference);
  return out;
}

std::string input_note(const std::string& name, const WorkloadInput& input) {
  switch (input.kind) {
    case InputKind::Random:
      return "";
    case InputKind::Scalar:
      return fmt::format("{} = {}", name, input.scalar_value);
    case InputKind::Safetensors:
      return name + " from a file";
    case InputKind::Custom:
      return name + " from the reference's custom input function";
  }
  return "";
}

std::string workloads_section(const SynthesisRequest& request) {
  const std::vector<Workload>& workloads =
      request.workloads.empty() ? request.problem->workloads : request.workloads;
  if (workloads.empty()) return std::string(kNone);
  const bool same_tolerance = all_tolerances_equal(workloads);
  std::string out = fmt::format("{} workload{}, each timed and checked:\n", workloads.size(),
                                workloads.size() == 1 ? "" : "s");
  for (const Workload& workload : workloads) {
    std::vector<std::string> notes;
    for (const auto& [name, input] : workload.inputs)
      if (std::string note = input_note(name, input); !note.empty()) notes.push_back(note);
    if (!same_tolerance) notes.push_back("tolerance " + tolerance_text(workload.tolerance));
    out +=
        "- " + (workload.axes.empty() ? std::string("(no var axes)") : format_axes(workload.axes));
    if (!notes.empty()) out += fmt::format(" ({})", fmt::join(notes, "; "));
    out += '\n';
  }
  out.pop_back();
  return out;
}

/// An answer to a parent with a launch spec keeps it (make_synthesized_solution), so it must be
/// a kernel that the backend launches.
bool has_launch_spec(const SynthesisRequest& request) {
  return request.parent && request.parent->solution.ext.is_object() &&
         request.parent->solution.ext.contains("launch");
}

std::string abi_section(const PromptTemplates& templates, const SynthesisRequest& request) {
  std::string out = "kernelarc/abi.h:\n" + fenced("c", templates.abi_header) + "\n\n";
  if (has_launch_spec(request)) {
    out +=
        "The parent is a device-only CUDA kernel, and so is your solution: NVRTC compiles the "
        "entry file, and the backend launches the `extern \"C\" __global__` kernel named by "
        "`entry_point` with the grid and block of the solution's `kernelarc.launch` spec. Its "
        "parameters are the input pointers (definition order), then the output pointers, then "
        "one `long long` per axis of the definition, in definition order. It gets no workspace. "
        "Only the solution's own files and NVRTC's built-in headers (cuda_bf16.h, cuda_fp16.h, "
        "...) may be included. The `kernelarc.knobs` are passed as `-DNAME=value` and may "
        "appear in the launch expressions.";
  } else if (backend_for(request.device).kind() == DeviceKind::Cuda) {
    out +=
        "nvcc compiles the .cu and .cpp sources into a shared object (with the solution's "
        "cuda_cflags and ld_flags, and kernelarc/abi.h on the include path). `ka_run` gets "
        "device pointers and the cudaStream_t as `stream`: launch every kernel on it.";
  } else {
    out +=
        "The host compiler builds the sources as C++20 into a shared object (with the solution's "
        "cflags and ld_flags, and kernelarc/abi.h on the include path). `ka_run` gets host "
        "pointers; `stream` is NULL.";
  }
  return out;
}

std::string hardware_section(const SynthesisRequest& request) {
  return fmt::format("Device: {}\n{}", request.device,
                     request.hardware.empty() ? "(no calibrated facts)" : request.hardware);
}

std::string strategy_section(const SynthesisRequest& request) {
  std::vector<std::string> lines;
  if (!request.agent.empty()) lines.push_back("Agent: " + request.agent);
  if (!request.strategy.empty()) lines.push_back("Focus: " + request.strategy);
  return or_none(fmt::format("{}", fmt::join(lines, "\n")));
}

std::string solution_metadata(const Solution& solution) {
  OrderedJson json = solution_to_json(solution);
  json.erase("sources");
  // A workspace-wide candidate id says nothing to the model and differs from run to run.
  if (json.contains("kernelarc") && json["kernelarc"].is_object() &&
      json["kernelarc"].contains("synthesized") && json["kernelarc"]["synthesized"].is_object())
    json["kernelarc"]["synthesized"].erase("parent_candidate");
  return fenced("json", json.dump(2));
}

std::string log_block(const std::string& log) {
  return log.empty() ? std::string(kNone) : fenced("text", trim_failure_log(log));
}

std::string results_text(const CandidateContext& candidate) {
  std::string out =
      "Status: " +
      or_none(candidate.status ? std::string(status_name(*candidate.status)) : std::string());
  if (!candidate.results.empty()) out += "\n" + candidate.results;
  return out;
}

std::string inspirations_section(const std::vector<CandidateContext>& inspirations) {
  std::vector<std::string> parts;
  for (const CandidateContext& candidate : inspirations) {
    // Numbered by position: workspace candidate ids differ from run to run.
    std::string part =
        fmt::format("### Candidate {}\n{}\n", parts.size() + 1, results_text(candidate));
    if (!candidate.diagnosis.empty()) part += "Diagnosis: " + candidate.diagnosis + "\n";
    if (!candidate.log.empty()) part += "Log:\n" + log_block(candidate.log) + "\n";
    part += code_files(candidate.solution.sources);
    parts.push_back(std::move(part));
  }
  return or_none(fmt::format("{}", fmt::join(parts, "\n\n")));
}

std::string numbered(const std::vector<std::string>& items) {
  std::vector<std::string> parts;
  for (std::size_t index = 0; index < items.size(); ++index)
    parts.push_back(fmt::format("{}. {}", index + 1, items[index]));
  return or_none(fmt::format("{}", fmt::join(parts, "\n\n")));
}

/// Each failure's first line says which candidate failed and how; the log below it is trimmed.
std::string failures_section(const std::vector<std::string>& failures) {
  std::vector<std::string> parts;
  for (std::size_t index = 0; index < failures.size(); ++index) {
    const std::string_view failure = failures[index];
    const std::size_t newline = failure.find('\n');
    std::string part = fmt::format("{}. {}", index + 1, failure.substr(0, newline));
    if (newline != std::string_view::npos && newline + 1 < failure.size())
      part += "\n" + fenced("text", trim_failure_log(failure.substr(newline + 1)));
    parts.push_back(std::move(part));
  }
  return or_none(fmt::format("{}", fmt::join(parts, "\n\n")));
}

std::string bullets(const std::vector<std::string>& items) {
  std::vector<std::string> lines;
  for (const std::string& item : items) lines.push_back("- " + item);
  return or_none(fmt::format("{}", fmt::join(lines, "\n")));
}

/// A fragment fills a placeholder inside a line of its own; the template gives the line's end.
std::string without_final_newlines(std::string text) {
  while (text.ends_with('\n')) text.pop_back();
  return text;
}

Sections make_sections(const PromptTemplates& templates, const SynthesisRequest& request) {
  Sections sections;
  const std::optional<CandidateContext>& parent = request.parent;
  sections["problem"] = problem_section(*request.problem);
  sections["workloads"] = workloads_section(request);
  sections["abi"] = abi_section(templates, request);
  sections["hardware"] = hardware_section(request);
  sections["strategy"] = strategy_section(request);
  sections["parent_solution"] = parent ? solution_metadata(parent->solution) : std::string(kNone);
  sections["parent_code"] =
      parent ? or_none(code_files(parent->solution.sources)) : std::string(kNone);
  sections["parent_results"] = parent ? results_text(*parent) : std::string(kNone);
  sections["parent_log"] = parent ? log_block(parent->log) : std::string(kNone);
  sections["diagnosis"] = parent ? or_none(parent->diagnosis) : std::string(kNone);
  sections["inspirations"] = inspirations_section(request.inspirations);
  sections["knowledge"] = numbered(request.knowledge);
  sections["board"] = bullets(request.board);
  // A repair shows the parent's log once, under the parent, not again among the failures.
  std::vector<std::string> failures = request.recent_failures;
  if (parent && !parent->log.empty())
    std::erase_if(failures, [&](const std::string& failure) {
      return failure.find(parent->log) != std::string::npos;
    });
  sections["failures"] = failures_section(failures);
  sections["entry_file"] =
      parent ? parent->solution.entry_file : default_entry_file(request.device);
  sections["entry_language"] = language_of(sections["entry_file"]);
  sections["flags_example"] =
      backend_for(request.device).kind() == DeviceKind::Cuda
          ? R"({"cuda_cflags": ["-O3", "--use_fast_math", "-lineinfo"]})"
          : R"({"cflags": ["-O3", "-march=native", "-fopenmp"], "ld_flags": ["-fopenmp"]})";
  // The two fragments may use every other section, so they are rendered last.
  sections["guard_rules"] =
      without_final_newlines(render(templates.guard_rules, sections, "guard_rules.md"));
  sections["response_format"] =
      without_final_newlines(render(templates.response_format, sections, "response_format.md"));
  return sections;
}

const std::string& move_template(const PromptTemplates& templates, SynthesisMove move) {
  switch (move) {
    case SynthesisMove::Draft:
      return templates.draft;
    case SynthesisMove::Improve:
      return templates.improve;
    case SynthesisMove::Crossover:
      return templates.crossover;
    case SynthesisMove::Repair:
      return templates.repair;
  }
  return templates.draft;
}

/// gcc, nvcc, NVRTC and the linker all write "error:" ("kernel.cu(12): error: ...").
bool mentions_error(std::string_view line) {
  std::string lower(line);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("error:") != std::string::npos;
}

}  // namespace

std::filesystem::path default_prompt_dir() {
  return data_dir() / "prompts";
}

PromptTemplates load_prompt_templates(const std::filesystem::path& override_dir) {
  std::error_code error;
  if (!override_dir.empty()) {
    if (!std::filesystem::is_directory(override_dir, error))
      throw InputError(
          fmt::format("{}: expected a directory of prompt files", override_dir.string()));
    for (const auto& entry : std::filesystem::directory_iterator(override_dir)) {
      const std::string name = entry.path().filename().string();
      const bool known = std::any_of(kPromptFiles.begin(), kPromptFiles.end(),
                                     [&](const PromptFile& file) { return name == file.name; });
      if (entry.path().extension() == ".md" && !known) {
        std::vector<std::string> names;
        for (const PromptFile& file : kPromptFiles) names.emplace_back(file.name);
        throw InputError(fmt::format("{}: not a prompt file (expected one of {})",
                                     entry.path().string(), fmt::join(names, ", ")));
      }
    }
  }
  PromptTemplates templates;
  for (const PromptFile& file : kPromptFiles) {
    std::filesystem::path path = override_dir / file.name;
    if (override_dir.empty() || !std::filesystem::is_regular_file(path, error))
      path = default_prompt_dir() / file.name;
    std::string text = read_text_file(path);
    check_placeholders(text, path);
    templates.*file.text = std::move(text);
  }
  templates.abi_header = read_text_file(abi_include_dir() / "kernelarc" / "abi.h");
  return templates;
}

ChatRequest build_prompt(const PromptTemplates& templates, const SynthesisRequest& request) {
  if (request.problem == nullptr) throw InputError("build_prompt: the request has no problem");
  const Sections sections = make_sections(templates, request);
  ChatRequest chat;
  chat.system = render(templates.system, sections, "system.md");
  const std::string move = fmt::format("{}.md", synthesis_move_name(request.move));
  chat.messages.push_back({"user", render(move_template(templates, request.move), sections, move)});
  return chat;
}

namespace {

/// Every number (digits, with a fraction or exponent) replaced by '#'.
std::string mask_numbers(std::string_view text) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    if (!std::isdigit(static_cast<unsigned char>(text[at]))) {
      out += text[at++];
      continue;
    }
    while (at < text.size() && (std::isdigit(static_cast<unsigned char>(text[at])) ||
                                text[at] == '.' || text[at] == 'e' || text[at] == 'E'))
      ++at;
    out += '#';
  }
  return out;
}

void mask_candidate(CandidateContext& candidate) {
  candidate.candidate_id = 0;
  candidate.results = mask_numbers(candidate.results);
  candidate.diagnosis = mask_numbers(candidate.diagnosis);
  candidate.log = mask_numbers(candidate.log);
}

}  // namespace

std::string cache_identity(const PromptTemplates& templates, const SynthesisRequest& request) {
  SynthesisRequest masked = request;
  masked.hardware = mask_numbers(masked.hardware);
  if (masked.parent) mask_candidate(*masked.parent);
  for (CandidateContext& candidate : masked.inspirations) mask_candidate(candidate);
  for (std::string& line : masked.board) line = mask_numbers(line);
  for (std::string& failure : masked.recent_failures) failure = mask_numbers(failure);
  const ChatRequest chat = build_prompt(templates, masked);
  std::string identity = chat.system;
  for (const ChatMessage& message : chat.messages)
    identity += "\n\n[" + message.role + "]\n" + message.content;
  return identity;
}

std::string trim_failure_log(std::string_view log) {
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start < log.size();) {
    std::size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    lines.push_back(log.substr(start, end - start));
    start = end + 1;
  }
  const auto first_error = std::find_if(lines.begin(), lines.end(), mentions_error);
  const std::size_t first =
      first_error == lines.end() ? 0 : static_cast<std::size_t>(first_error - lines.begin());
  std::string out;
  std::size_t kept = 0;
  bool cut_line = false;
  for (std::size_t index = first; index < lines.size() && kept < kLogLines; ++index) {
    std::string_view line = lines[index];
    if (out.size() + line.size() + 1 > kLogChars) {
      if (kept > 0) break;
      // An overlong first line is cut rather than dropped.
      line = line.substr(0, kLogChars);
      cut_line = true;
    }
    out += line;
    out += '\n';
    ++kept;
  }
  if (first == 0 && kept == lines.size() && !cut_line) return std::string(log);
  out += fmt::format("[log trimmed: kept lines {} to {} of {}]", first + 1, first + kept,
                     lines.size());
  return out;
}

}  // namespace kernelarc
