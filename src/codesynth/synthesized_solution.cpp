#include "codesynth/synthesized_solution.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "backend/backend.h"
#include "backend/build_input_policy.h"
#include "core/error.h"
#include "core/hash.h"

namespace kernelarc {

namespace {

bool is_cuda(const std::string& device) {
  return backend_for(device).kind() == DeviceKind::Cuda;
}

void check_sources(const std::vector<SourceFile>& sources, const std::string& entry_file) {
  if (sources.empty()) throw InputError("the answer holds no source file");
  std::set<std::string> seen;
  for (const SourceFile& source : sources) {
    if (source.path.empty() || source.path.front() == '/' ||
        source.path.find("..") != std::string::npos)
      throw InputError(
          fmt::format("source path \"{}\": expected a relative path inside the "
                      "solution",
                      source.path));
    if (!seen.insert(source.path).second)
      throw InputError(fmt::format("source path \"{}\" given twice", source.path));
  }
  if (!seen.count(entry_file))
    throw InputError(fmt::format("the sources lack the entry file {}", entry_file));
}

Solution draft_metadata(const SynthesisRequest& request) {
  Solution solution;
  solution.entry_symbol = "ka_run";
  solution.entry_file = default_entry_file(request.device);
  if (is_cuda(request.device)) {
    solution.languages = {"cuda_cpp"};
    solution.target_hardware = {"LOCAL"};
    solution.cuda_cflags = {"-O3"};
  } else {
    solution.languages = {"cpp"};
    solution.target_hardware = {"cpu"};
  }
  return solution;
}

}  // namespace

std::string default_entry_file(const std::string& device) {
  return is_cuda(device) ? "kernel.cu" : "main.cpp";
}

Solution make_synthesized_solution(const SynthesisRequest& request, const std::string& synthesizer,
                                   std::vector<SourceFile> sources, const SynthesizedFlags& flags) {
  Solution solution = request.parent ? request.parent->solution : draft_metadata(request);
  if (flags.cflags) solution.cflags = *flags.cflags;
  if (flags.cuda_cflags) solution.cuda_cflags = *flags.cuda_cflags;
  if (flags.ld_flags) solution.ld_flags = *flags.ld_flags;
  check_sources(sources, solution.entry_file);
  std::sort(sources.begin(), sources.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
  ContentHasher hasher;
  for (const SourceFile& source : sources) hasher.add(source.path).add(source.content);
  for (const auto* list : {&solution.cflags, &solution.cuda_cflags, &solution.ld_flags}) {
    hasher.add(std::to_string(list->size()));
    for (const std::string& flag : *list) hasher.add(flag);
  }
  const std::string& definition = request.problem->definition.name;
  solution.name = fmt::format("{}__{}_{}", definition, synthesizer, hasher.hex().substr(0, 10));
  solution.definition = definition;
  solution.author = fmt::format("kernelarc {} ({} agent, {})", synthesizer, request.agent,
                                synthesis_move_name(request.move));
  solution.description.clear();
  // A template parent's launch spec and knob defines still build and launch the new code; its
  // template provenance no longer describes it.
  if (solution.ext.is_object()) solution.ext.erase("template");
  solution.ext["synthesized"] = {{"synthesizer", synthesizer},
                                 {"agent", request.agent},
                                 {"move", synthesis_move_name(request.move)}};
  if (request.parent)
    solution.ext["synthesized"]["parent_candidate"] = request.parent->candidate_id;
  solution.sources = std::move(sources);
  solution.path.clear();
  // Checked before the solution is stored or built: a flag such as -wrapper runs programs.
  if (auto refused = refuse_build_inputs(solution))
    throw InputError("refused the answer's build inputs: " + *refused);
  return solution;
}

}  // namespace kernelarc
