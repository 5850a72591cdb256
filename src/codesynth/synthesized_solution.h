// The solution a code synthesizer's sources become: the parent's metadata (languages, entry
// point, flags) when it has a parent, else the device's defaults, under a name that identifies
// the sources, so that the same code is the same candidate in every run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codesynth/code_synthesizer.h"

namespace kernelarc {

/// The entry file a draft must provide on the device: "main.cpp" (CPU) or "kernel.cu" (CUDA).
std::string default_entry_file(const std::string& device);

/// Flag lists an answer sets (the others stay as the parent's or the draft defaults).
struct SynthesizedFlags {
  std::optional<std::vector<std::string>> cflags;
  std::optional<std::vector<std::string>> cuda_cflags;
  std::optional<std::vector<std::string>> ld_flags;
};

/// The name hashes the sources and the flags, so that the same code built two ways is two
/// candidates. The solution's "kernelarc" object keeps the parent's launch spec and knobs and
/// records the synthesizer, agent, move and parent under "synthesized". InputError when `sources`
/// is empty, a path is absolute, holds "..", or repeats, or the entry file is missing.
Solution make_synthesized_solution(const SynthesisRequest& request, const std::string& synthesizer,
                                   std::vector<SourceFile> sources,
                                   const SynthesizedFlags& flags = {});

}  // namespace kernelarc
