// `kernelarc kb add|search|list`: the knowledge base of a workspace (<workspace>/knowledge.sqlite),
// which always holds kernelarc's shipped notes (docs/kb) beside the user's own.
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "kb/knowledge_base.h"
#include "store/workspace.h"

namespace kernelarc {

namespace {

// A hit shows this many lines of its chunk, each at most kTextWidth columns after the indent:
// enough to judge a passage, short enough that five hits fit on a screen.
constexpr int kShownLines = 8;
constexpr size_t kTextWidth = 96;

struct KbFlags {
  std::string workspace = kDefaultWorkspace;
  std::vector<std::string> paths;
  std::vector<std::string> words;
  KbKeys keys;
  int limit = 5;
};

/// The text's lines, long ones wrapped at spaces (a word longer than the width is cut).
std::vector<std::string> wrapped_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream input(text);
  std::string line;
  while (std::getline(input, line)) {
    while (line.size() > kTextWidth) {
      size_t cut = line.rfind(' ', kTextWidth);
      if (cut == std::string::npos || cut == 0) cut = kTextWidth;
      lines.push_back(line.substr(0, cut));
      line = line.substr(line[cut] == ' ' ? cut + 1 : cut);
    }
    lines.push_back(line);
  }
  return lines;
}

/// Where a hit sits: its heading path, led by the document's title unless the path starts
/// with it already.
std::string hit_location(const KbHit& hit) {
  if (hit.heading.empty()) return hit.title;
  if (hit.heading.starts_with(hit.title)) return hit.heading;
  return hit.title + " > " + hit.heading;
}

int run_add(const KbFlags& flags) {
  KnowledgeBase kb = open_knowledge_base(flags.workspace);
  kb.ensure_builtin_notes();
  for (const std::string& path : flags.paths) {
    const int changed = kb.add_markdown(path);
    std::cout << fmt::format("{}: {} document(s) added or updated\n", path, changed);
  }
  return 0;
}

int run_search(const KbFlags& flags) {
  const KbQuery query{fmt::format("{}", fmt::join(flags.words, " ")), flags.keys, flags.limit};
  const KbKeys& keys = query.keys;
  if (query.text.empty() && keys.families.empty() && keys.hardware.empty() &&
      keys.bottlenecks.empty() && keys.error_kinds.empty())
    throw InputError(
        "kb search: expected query words or at least one of --family, --hardware, --bottleneck, "
        "--error");
  KnowledgeBase kb = open_knowledge_base(flags.workspace);
  kb.ensure_builtin_notes();
  const std::vector<KbHit> hits = kb.search(query);
  if (hits.empty()) {
    std::cout << "no matching notes\n";
    return 0;
  }
  for (size_t i = 0; i < hits.size(); ++i) {
    const KbHit& hit = hits[i];
    std::cout << fmt::format("{}. [{:.2f}] {}  {}\n", i + 1, hit.score, hit.source,
                             hit_location(hit));
    const std::vector<std::string> lines = wrapped_lines(hit.text);
    const size_t shown = std::min(lines.size(), static_cast<size_t>(kShownLines));
    for (size_t line = 0; line < shown; ++line)
      std::cout << (lines[line].empty() ? "" : "    ") << lines[line] << '\n';
    if (lines.size() > shown)
      std::cout << fmt::format("    ... ({} more lines)\n", lines.size() - shown);
    std::cout << '\n';
  }
  return 0;
}

int run_list(const KbFlags& flags) {
  KnowledgeBase kb = open_knowledge_base(flags.workspace);
  kb.ensure_builtin_notes();
  const auto documents = kb.documents();
  size_t width = 0;
  for (const auto& [source, title] : documents) width = std::max(width, source.size());
  for (const auto& [source, title] : documents)
    std::cout << fmt::format("{:<{}}  {}\n", source, width, title);
  std::cout << fmt::format("{} document(s)\n", documents.size());
  return 0;
}

void add_workspace_option(CLI::App& command, KbFlags& flags) {
  command.add_option("--workspace", flags.workspace, "the workspace")->capture_default_str();
}

}  // namespace

CommandRunner add_kb_commands(CLI::App& app) {
  auto flags = std::make_shared<KbFlags>();
  auto* kb = app.add_subcommand("kb", "the knowledge base: kernelarc's notes and your own");
  kb->require_subcommand(1);

  auto* add = kb->add_subcommand("add", "index Markdown files, or every .md under folders");
  add->add_option("paths", flags->paths, "files or folders")->required();
  add_workspace_option(*add, *flags);

  auto* search = kb->add_subcommand("search", "ranked passages for words and/or keys");
  search->add_option("words", flags->words, "query words");
  // One value per occurrence, so `--family gemm tiling` leaves "tiling" to the query words.
  auto key_option = [&](const char* name, std::vector<std::string>& values, const char* help) {
    search->add_option(name, values, help)->allow_extra_args(false);
  };
  key_option("--family", flags->keys.families, "op family key, e.g. rmsnorm (repeatable)");
  key_option("--hardware", flags->keys.hardware, "hardware key, e.g. sm_90 (repeatable)");
  key_option("--bottleneck", flags->keys.bottlenecks,
             "bottleneck key: memory, compute, latency, occupancy, launch (repeatable)");
  key_option("--error", flags->keys.error_kinds,
             "error kind key, e.g. incorrect_numerical (repeatable)");
  search->add_option("--limit", flags->limit, "most hits to show")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_workspace_option(*search, *flags);

  auto* list = kb->add_subcommand("list", "every document: source and title");
  add_workspace_option(*list, *flags);

  return [flags, add, search] {
    if (add->parsed()) return run_add(*flags);
    if (search->parsed()) return run_search(*flags);
    return run_list(*flags);
  };
}

}  // namespace kernelarc
