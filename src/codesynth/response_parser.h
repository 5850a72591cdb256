// What a model's answer becomes: the complete source files of a candidate, taken from fenced code
// blocks (whole files) or from SEARCH/REPLACE edits applied to the parent's sources, plus
// optional compiler flags. An answer that cannot be used (empty, truncated, without code, with an
// edit that does not apply) is rejected with the reason, which the run records; the format the
// model is asked for is prompts/response_format.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.h"

namespace kernelarc {

struct ParsedAnswer {
  /// The candidate's files: the parent's (when there is one) with the answer's files and edits
  /// applied, in the parent's order, then new files in the order the answer gave them.
  std::vector<SourceFile> sources;
  /// Set by a ```json solution block: replace the solution's flags of that name.
  std::optional<std::vector<std::string>> cflags;
  std::optional<std::vector<std::string>> cuda_cflags;
  std::optional<std::vector<std::string>> ld_flags;
  /// Why the answer was rejected ("the answer holds no code block"); empty on success.
  std::string failure;

  bool ok() const { return failure.empty(); }
};

/// Whole files: one fenced block per file whose info string names its path (```cuda kernel.cu,
/// ```cpp file=main.cpp, or a line holding only the path just above the block); when no block is
/// named, a single unnamed block is `default_file`. Edits: "<<<<<<< SEARCH <path>", the old
/// text, "=======", the new text, ">>>>>>> REPLACE" (inside a fence or not; the path defaults to
/// `default_file`); each SEARCH text must occur exactly once in the file as earlier edits left
/// it, and an empty one creates a new file. A reasoning model's <think> section is skipped.
/// `parent_sources` is null for a draft.
ParsedAnswer parse_answer(std::string_view text, const std::vector<SourceFile>* parent_sources,
                          const std::string& default_file);

}  // namespace kernelarc
