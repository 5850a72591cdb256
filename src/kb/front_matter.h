// The front matter of a knowledge-base Markdown file: a leading block between two "---" lines
// holding `key: value` and `key: [a, b]` lines (a tiny subset of YAML, parsed by hand; the format
// is described in docs/kb/README.md).
#pragma once

#include <string>
#include <string_view>

#include "kb/knowledge_base.h"

namespace kernelarc {

/// A Markdown file split into its front matter and its body. `source_name` names the file in
/// errors: a malformed block is an InputError "<file>:<line>: <key>: <what was expected>". A
/// file without front matter has an empty title and no keys; its whole text is the body.
struct MarkdownFile {
  std::string title;
  KbKeys keys;
  std::string body;
};

MarkdownFile parse_markdown_file(std::string_view text, std::string_view source_name);

}  // namespace kernelarc
