// `kernelarc import flashinfer <dataset> <out-dir>`: a FlashInfer-Bench dataset (definitions/,
// workloads/, solutions/) becomes problem directories that bench and optimize take as a suite.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "app/flashinfer_import.h"
#include "cli/import_commands.h"
#include "core/error.h"

namespace kernelarc {

namespace {

struct FlashInferFlags {
  std::string dataset;
  std::string out_dir;
};

int run_import_flashinfer(const FlashInferFlags& flags) {
  const TraceSetImport result = import_trace_set(flags.dataset, flags.out_dir);
  int imported = 0;
  for (const DefinitionImport& definition : result.definitions) {
    if (definition.problem_dir) {
      ++imported;
      std::cout << fmt::format("{}: {} workloads -> {}\n", definition.name, definition.workloads,
                               definition.problem_dir->string());
    } else {
      std::cerr << "not imported: " << definition.error << '\n';
    }
  }
  for (const std::string& stray : result.stray_workloads) std::cerr << "skipped: " << stray << '\n';
  std::cout << fmt::format("imported {} of {} definitions into {}", imported,
                           result.definitions.size(), flags.out_dir);
  if (result.solutions > 0) {
    std::cout << fmt::format(
        "; the dataset's {} solutions stay in it (kernelarc evaluates "
        "its own solution format)",
        result.solutions);
  }
  std::cout << '\n';
  if (imported == 0) {
    throw InputError(
        fmt::format("{}: no definition could be imported (each is listed above)", flags.dataset));
  }
  return imported == static_cast<int>(result.definitions.size()) ? 0 : 2;
}

}  // namespace

CommandRunner add_import_flashinfer(CLI::App& import) {
  auto flags = std::make_shared<FlashInferFlags>();
  auto* command = import.add_subcommand(
      "flashinfer", "a FlashInfer-Bench dataset (definitions/, workloads/ of workload traces)");
  command->add_option("dataset", flags->dataset, "the dataset's root folder")
      ->required()
      ->check(CLI::ExistingDirectory);
  command->add_option("out", flags->out_dir, "where <name>/definition.json is written")->required();
  return [flags] { return run_import_flashinfer(*flags); };
}

}  // namespace kernelarc
