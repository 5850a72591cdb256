// A FlashInfer-Bench dataset (a "trace set": definitions/**/*.json, workloads/**/*.jsonl of
// workload traces naming their definition, solutions/**/*.json) made into kernelarc problem
// directories, one per definition that has workloads, so that `bench` and `optimize` take it as
// a suite. Each definition is imported or refused alone; an import that succeeds is a problem
// that loads.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kernelarc {

/// What became of one definition file of the dataset.
struct DefinitionImport {
  std::filesystem::path source;  ///< the definition file in the dataset
  std::string name;              ///< the definition's name ("" when the file did not read)
  int workloads = 0;
  std::optional<std::filesystem::path> problem_dir;  ///< set when imported
  std::string error;                                 ///< why not, naming the file and field
};

struct TraceSetImport {
  std::vector<DefinitionImport> definitions;  ///< in the order of their files' paths
  /// Workload lines that name no definition of the dataset, or do not read as a trace.
  std::vector<std::string> stray_workloads;
  /// Solutions the dataset holds (not imported: they are the other project's own builds).
  int solutions = 0;
};

/// True when `dir` looks like a trace set (it holds a definitions/ folder).
bool is_trace_set(const std::filesystem::path& dir);

/// Imports every definition of the trace set at `root` into `out_dir`/<name>/. A safetensors
/// input's relative path is made absolute against `root`, where the dataset resolves it.
/// InputError when `root` is not a trace set.
TraceSetImport import_trace_set(const std::filesystem::path& root,
                                const std::filesystem::path& out_dir);

}  // namespace kernelarc
