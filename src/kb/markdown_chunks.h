// Splits a Markdown body into retrieval chunks: one per section (at #, ## and ### headings),
// a long section further at paragraph boundaries, so that BM25 scores passages of similar size
// and a hit shows the passage that matched rather than a whole document.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kernelarc {

struct MarkdownChunk {
  std::string heading;  ///< the heading path, "Vector loads > Alignment"; empty before any heading
  std::string text;     ///< the section's text (paragraphs, lists, code), without the heading line
};

/// Sections are never merged; a section over `max_words` words is split between paragraphs
/// (a blank line outside a code fence), and a single paragraph over it between words. Headings
/// inside ``` or ~~~ fences are text. Sections with no text are left out.
std::vector<MarkdownChunk> split_markdown(std::string_view markdown, int max_words = 250);

}  // namespace kernelarc
