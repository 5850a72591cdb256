#include "app/flashinfer_import.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "core/problem.h"

namespace kernelarc {

namespace {

namespace fs = std::filesystem;

/// A dataset's workload traces, by the definition they name, with the files they came from.
struct WorkloadTraces {
  std::vector<OrderedJson> traces;
  std::set<std::string> files;
};

std::vector<fs::path> files_under(const fs::path& dir, std::string_view extension) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == extension)
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The name becomes a directory of out_dir: nothing that could leave it or need quoting.
bool usable_as_directory(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), [](unsigned char c) {
           return std::isalnum(c) || c == '_' || c == '-' || c == '.';
         });
}

std::map<std::string, WorkloadTraces> read_workload_traces(const fs::path& root,
                                                           std::vector<std::string>& stray) {
  std::map<std::string, WorkloadTraces> by_definition;
  for (const fs::path& file : files_under(root / "workloads", ".jsonl")) {
    std::ifstream in(file);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = fmt::format("{}:{}", file.string(), number);
      OrderedJson trace;
      try {
        trace = parse_json_text(line, where);
      } catch (const InputError& error) {
        stray.push_back(error.what());
        continue;
      }
      const OrderedJson* name = trace.is_object() ? find_optional(trace, "definition") : nullptr;
      if (!name || !name->is_string() || !find_optional(trace, "workload")) {
        stray.push_back(where +
                        ": expected a workload trace {\"definition\": name, \"workload\": {..}}");
        continue;
      }
      WorkloadTraces& traces = by_definition[name->get<std::string>()];
      traces.traces.push_back(std::move(trace));
      traces.files.insert(file.string());
    }
  }
  return by_definition;
}

// The dataset resolves a relative blob path against its root; the problem directory is
// elsewhere, so the path becomes absolute. A URI is left as written.
void absolutize_blob_paths(OrderedJson& trace, const fs::path& root) {
  OrderedJson& workload = trace["workload"];
  if (!workload.is_object() || !workload.contains("inputs")) return;
  OrderedJson& inputs = workload["inputs"];
  if (!inputs.is_object()) return;
  for (auto& [name, input] : inputs.items()) {
    if (!input.is_object() || !input.contains("path") || !input["path"].is_string()) continue;
    const std::string path = input["path"].get<std::string>();
    if (path.find("://") != std::string::npos || fs::path(path).is_absolute()) continue;
    input["path"] = (fs::absolute(root) / path).lexically_normal().string();
  }
}

void import_definition(const Definition& def, const fs::path& file,
                       std::map<std::string, WorkloadTraces>& workloads, const fs::path& root,
                       const fs::path& out_dir, DefinitionImport& outcome) {
  auto found = workloads.find(def.name);
  if (found == workloads.end()) {
    throw_input_error(file.string(), "name",
                      fmt::format("no workload trace under {} names definition \"{}\"",
                                  (root / "workloads").string(), def.name));
  }
  const fs::path dir = out_dir / def.name;
  const bool created = !fs::exists(dir);
  fs::create_directories(dir);
  std::string lines;
  for (OrderedJson& trace : found->second.traces) {
    absolutize_blob_paths(trace, root);
    lines += trace.dump() + "\n";
  }
  try {
    write_file_atomically(dir / "definition.json", read_text_file(file));
    write_file_atomically(dir / "workload.jsonl", lines);
    outcome.workloads = static_cast<int>(load_problem(dir).workloads.size());
  } catch (const InputError& error) {
    if (created) fs::remove_all(dir);
    std::string files;
    for (const std::string& source : found->second.files)
      files += (files.empty() ? "" : ", ") + source;
    throw InputError(
        fmt::format("{} (imported from {} and {})", error.what(), file.string(), files));
  }
  outcome.problem_dir = dir;
}

}  // namespace

bool is_trace_set(const fs::path& dir) {
  return fs::is_directory(dir / "definitions");
}

TraceSetImport import_trace_set(const fs::path& root, const fs::path& out_dir) {
  if (!is_trace_set(root)) {
    throw_input_error(root.string(), "",
                      "expected a FlashInfer-Bench dataset: a folder holding definitions/ (with "
                      "workloads/ beside it)");
  }
  TraceSetImport result;
  std::map<std::string, WorkloadTraces> workloads =
      read_workload_traces(root, result.stray_workloads);
  result.solutions = static_cast<int>(files_under(root / "solutions", ".json").size());
  std::set<std::string> names;
  for (const fs::path& file : files_under(root / "definitions", ".json")) {
    DefinitionImport outcome;
    outcome.source = file;
    try {
      const Definition def = load_definition(file);
      outcome.name = def.name;
      if (!usable_as_directory(def.name)) {
        throw_input_error(file.string(), "name",
                          fmt::format("\"{}\" cannot name a problem directory: expected letters, "
                                      "digits, '_', '-' and '.'",
                                      def.name));
      }
      if (!names.insert(def.name).second) {
        throw_input_error(file.string(), "name",
                          fmt::format("\"{}\" is the name of an earlier definition too", def.name));
      }
      import_definition(def, file, workloads, root, out_dir, outcome);
    } catch (const InputError& error) {
      outcome.error = error.what();
    }
    result.definitions.push_back(std::move(outcome));
  }
  for (const auto& [name, traces] : workloads) {
    if (names.count(name)) continue;
    result.stray_workloads.push_back(fmt::format(
        "{}: {} workload trace(s) name definition \"{}\", which no readable definition has",
        *traces.files.begin(), traces.traces.size(), name));
  }
  return result;
}

}  // namespace kernelarc
