#include "codesynth/response_parser.h"
#include "core/text.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace kernelarc {

namespace {

/// Carries a rejection's reason from deep in the parse to parse_answer; never leaves this file.
class Rejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Line {
  std::string_view text;
  int number = 0;  ///< 1-based, in the answer as received
};

struct Fence {
  char mark = '`';
  std::size_t length = 0;
  std::string info;
};

struct CodeBlock {
  std::string info;
  std::string content;
  std::string label;  ///< the last non-blank line above the block
  int line = 0;
};

struct Edit {
  std::string path;
  std::string search;
  std::string replace;
  int line = 0;
};

struct Scan {
  std::vector<CodeBlock> blocks;
  std::vector<Edit> edits;
};

std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  int number = 1;
  for (std::size_t start = 0; start < text.size(); ++number) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back({line, number});
    start = end + 1;
  }
  return lines;
}

std::optional<Fence> fence_open(std::string_view line) {
  const std::string_view text = trim(line);
  if (text.empty() || (text.front() != '`' && text.front() != '~')) return std::nullopt;
  Fence fence{text.front(), 0, ""};
  while (fence.length < text.size() && text[fence.length] == fence.mark) ++fence.length;
  if (fence.length < 3) return std::nullopt;
  fence.info = std::string(trim(text.substr(fence.length)));
  if (fence.mark == '`' && fence.info.find('`') != std::string::npos) return std::nullopt;
  return fence;
}

bool fence_closes(const Fence& fence, std::string_view line) {
  const std::string_view text = trim(line);
  return text.size() >= fence.length &&
         std::all_of(text.begin(), text.end(), [&](char c) { return c == fence.mark; });
}

bool is_edit_start(std::string_view line) {
  return trim(line).starts_with("<<<<<<< SEARCH");
}

bool is_edit_divider(std::string_view line) {
  return trim(line) == "=======";
}

bool is_edit_end(std::string_view line) {
  return trim(line).starts_with(">>>>>>> REPLACE");
}

/// Reads the edit that starts at lines[index] and leaves `index` past its REPLACE line.
Edit read_edit(const std::vector<Line>& lines, std::size_t& index,
               const std::string& default_file) {
  Edit edit;
  edit.line = lines[index].number;
  const std::string_view path = trim(trim(lines[index].text).substr(14));
  edit.path = path.empty() ? default_file : std::string(path);
  std::string* target = &edit.search;
  for (++index; index < lines.size(); ++index) {
    const std::string_view text = lines[index].text;
    if (is_edit_start(text))
      throw Rejected(
          fmt::format("the edit at line {} has no \">>>>>>> REPLACE\" before the next "
                      "SEARCH at line {}",
                      edit.line, lines[index].number));
    if (target == &edit.search && is_edit_divider(text)) {
      target = &edit.replace;
      continue;
    }
    if (target == &edit.replace && is_edit_end(text)) {
      ++index;
      return edit;
    }
    *target += text;
    *target += '\n';
  }
  throw Rejected(
      fmt::format("the answer was cut off: the SEARCH/REPLACE edit at line {} is never "
                  "closed",
                  edit.line));
}

std::string_view last_label(const std::vector<Line>& lines, std::size_t index) {
  while (index > 0) {
    const std::string_view text = trim(lines[--index].text);
    if (!text.empty()) return text;
  }
  return {};
}

/// Fenced blocks and edits, in answer order. A fence holding edits only wraps them.
Scan scan_answer(const std::vector<Line>& lines, const std::string& default_file) {
  Scan scan;
  std::optional<Fence> open;
  CodeBlock block;
  bool wraps_edits = false;
  for (std::size_t index = 0; index < lines.size();) {
    const std::string_view text = lines[index].text;
    if (is_edit_start(text)) {
      scan.edits.push_back(read_edit(lines, index, default_file));
      wraps_edits = open.has_value();
      continue;
    }
    if (open && fence_closes(*open, text)) {
      if (!wraps_edits) scan.blocks.push_back(std::move(block));
      open.reset();
    } else if (open) {
      block.content += text;
      block.content += '\n';
    } else if ((open = fence_open(text))) {
      block = {open->info, "", std::string(last_label(lines, index)), lines[index].number};
      wraps_edits = false;
    }
    ++index;
  }
  if (open)
    throw Rejected(
        fmt::format("the answer was cut off: the code block opened at line {} is "
                    "never closed",
                    block.line));
  return scan;
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::size_t start = 0;
  while ((start = text.find_first_not_of(" \t", start)) != std::string_view::npos) {
    const std::size_t end = std::min(text.find_first_of(" \t", start), text.size());
    words.emplace_back(text.substr(start, end - start));
    start = end;
  }
  return words;
}

/// "kernel.cu", "src/ka_problem.h": a relative-looking name with an extension.
bool looks_like_path(std::string_view word) {
  const std::size_t dot = word.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == word.size()) return false;
  return std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
           c == '/';
  });
}

std::string unquote(std::string_view text) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front())
    text = text.substr(1, text.size() - 2);
  return std::string(text);
}

std::optional<std::string> path_in_info(const std::string& info) {
  for (const std::string& word : split_words(info)) {
    for (const std::string_view key : {"file=", "path=", "filename="})
      if (word.starts_with(key)) return unquote(std::string_view(word).substr(key.size()));
    if (looks_like_path(word)) return word;
  }
  return std::nullopt;
}

std::string_view strip_decoration(std::string_view text) {
  constexpr std::string_view kDecoration = "#*`: \t";
  const auto first = text.find_first_not_of(kDecoration);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kDecoration) - first + 1);
}

/// A line such as "**kernel.cu**", "### `main.cpp`" or "File: kernel.cu:" names the block below.
std::optional<std::string> path_in_label(std::string_view label) {
  label = strip_decoration(label);
  for (const std::string_view prefix : {"File:", "file:", "Filename:", "filename:"})
    if (label.starts_with(prefix)) label = strip_decoration(label.substr(prefix.size()));
  if (!looks_like_path(label)) return std::nullopt;
  return std::string(label);
}

bool is_solution_block(const CodeBlock& block) {
  return split_words(block.info) == std::vector<std::string>{"json", "solution"};
}

/// Code has a statement, a brace or a preprocessor line; prose has none of them.
bool looks_like_code(std::string_view content) {
  if (content.find_first_of(";{}") != std::string_view::npos) return true;
  for (const Line& line : split_lines(content)) {
    const std::string_view text = trim(line.text);
    for (const std::string_view start :
         {"#include", "#define", "#pragma", "#if", "import ", "def "})
      if (text.starts_with(start)) return true;
  }
  return false;
}

std::vector<std::string> flag_list(const nlohmann::json& json, const std::string& key) {
  if (!json.is_array())
    throw Rejected(fmt::format("the json solution block: {}: expected a list of strings", key));
  std::vector<std::string> flags;
  for (const nlohmann::json& flag : json) {
    if (!flag.is_string())
      throw Rejected(fmt::format("the json solution block: {}: expected a list of strings", key));
    flags.push_back(flag.get<std::string>());
  }
  return flags;
}

void read_flags(const CodeBlock& block, ParsedAnswer& answer) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(block.content);
  } catch (const nlohmann::json::parse_error& error) {
    throw Rejected(fmt::format("the json solution block at line {} is not valid JSON ({})",
                               block.line, error.what()));
  }
  if (!json.is_object())
    throw Rejected(
        "the json solution block: expected an object with cflags, cuda_cflags or "
        "ld_flags");
  for (const auto& [key, value] : json.items()) {
    if (key == "cflags") {
      answer.cflags = flag_list(value, key);
    } else if (key == "cuda_cflags") {
      answer.cuda_cflags = flag_list(value, key);
    } else if (key == "ld_flags") {
      answer.ld_flags = flag_list(value, key);
    } else {
      throw Rejected(
          fmt::format("the json solution block: unknown key \"{}\" (expected cflags, "
                      "cuda_cflags or ld_flags)",
                      key));
    }
  }
}

SourceFile* find_file(std::vector<SourceFile>& files, const std::string& path) {
  const auto found = std::find_if(files.begin(), files.end(),
                                  [&](const SourceFile& file) { return file.path == path; });
  return found == files.end() ? nullptr : &*found;
}

bool has_file(const std::vector<SourceFile>& files, const std::string& path) {
  return std::any_of(files.begin(), files.end(),
                     [&](const SourceFile& file) { return file.path == path; });
}

std::size_t count_occurrences(std::string_view text, std::string_view part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string_view::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

std::string first_line(std::string_view text) {
  std::string line(trim(text.substr(0, text.find('\n'))));
  if (line.size() > 80) line = line.substr(0, 77) + "...";
  return line;
}

void apply_edit(std::vector<SourceFile>& files, const Edit& edit, std::size_t number) {
  const std::string where = fmt::format("edit {} (line {}) of {}", number, edit.line, edit.path);
  SourceFile* file = find_file(files, edit.path);
  if (edit.search.empty()) {
    if (file != nullptr)
      throw Rejected(where +
                     ": the SEARCH text is empty, but the file exists (an empty SEARCH "
                     "creates a new file)");
    files.push_back({edit.path, edit.replace});
    return;
  }
  if (file == nullptr) {
    std::vector<std::string> paths;
    for (const SourceFile& known : files) paths.push_back(known.path);
    throw Rejected(
        fmt::format("{}: the parent has no such file (it has {})", where, fmt::join(paths, ", ")));
  }
  // Edits are whole lines; a file without a final newline still matches its last line.
  const bool add_newline = !file->content.ends_with('\n');
  std::string content = file->content + (add_newline ? "\n" : "");
  const std::size_t count = count_occurrences(content, edit.search);
  if (count == 0)
    throw Rejected(fmt::format("{}: the SEARCH text is not in the file (it begins \"{}\")", where,
                               first_line(edit.search)));
  if (count > 1)
    throw Rejected(
        fmt::format("{}: the SEARCH text occurs {} times in the file; it must occur "
                    "once (it begins \"{}\")",
                    where, count, first_line(edit.search)));
  content.replace(content.find(edit.search), edit.search.size(), edit.replace);
  if (add_newline && content.ends_with('\n')) content.pop_back();
  file->content = std::move(content);
}

/// The whole files the answer gives, by path, in answer order.
std::vector<SourceFile> whole_files(const Scan& scan, const std::string& default_file) {
  std::vector<SourceFile> files;
  std::vector<const CodeBlock*> unnamed;
  for (const CodeBlock& block : scan.blocks) {
    if (is_solution_block(block)) continue;
    std::optional<std::string> path = path_in_info(block.info);
    if (!path) path = path_in_label(block.label);
    if (!path) {
      unnamed.push_back(&block);
      continue;
    }
    if (has_file(files, *path)) throw Rejected(fmt::format("the answer gives {} twice", *path));
    files.push_back({*path, block.content});
  }
  // Unnamed blocks beside named files or edits are illustrations (a command, a snippet).
  if (files.empty() && scan.edits.empty()) {
    if (unnamed.size() > 1)
      throw Rejected(
          fmt::format("the answer holds {} code blocks and names none of them; name "
                      "each file in its info string (```cuda kernel.cu)",
                      unnamed.size()));
    if (unnamed.size() == 1) files.push_back({default_file, unnamed.front()->content});
  }
  for (const SourceFile& file : files) {
    if (trim(file.content).empty())
      throw Rejected(fmt::format("the code block for {} is empty", file.path));
    if (!looks_like_code(file.content))
      throw Rejected(
          fmt::format("the block for {} is not code (no ';', brace or preprocessor "
                      "line): prose where code was expected",
                      file.path));
  }
  return files;
}

/// The answer after a reasoning model's <think> section, which may hold draft code.
std::string_view final_answer(std::string_view text) {
  const std::size_t close = text.rfind("</think>");
  if (close != std::string_view::npos) return text.substr(close + 8);
  if (trim(text).starts_with("<think>"))
    throw Rejected("the answer was cut off inside its <think> section, before any code");
  return text;
}

ParsedAnswer parse(std::string_view text, const std::vector<SourceFile>* parent_sources,
                   const std::string& default_file) {
  text = final_answer(text);
  if (trim(text).empty()) throw Rejected("the answer is empty");
  const Scan scan = scan_answer(split_lines(text), default_file);
  ParsedAnswer answer;
  const CodeBlock* flags = nullptr;
  for (const CodeBlock& block : scan.blocks) {
    if (!is_solution_block(block)) continue;
    if (flags != nullptr)
      throw Rejected(fmt::format("the answer holds two json solution blocks (lines {} and {})",
                                 flags->line, block.line));
    flags = &block;
  }
  if (flags != nullptr) read_flags(*flags, answer);
  const std::vector<SourceFile> files = whole_files(scan, default_file);
  if (files.empty() && scan.edits.empty()) throw Rejected("the answer holds no code block");
  if (!scan.edits.empty() && parent_sources == nullptr)
    throw Rejected(
        fmt::format("the answer edits {}, but there is no parent to edit: a draft "
                    "gives whole files",
                    scan.edits.front().path));
  for (const Edit& edit : scan.edits)
    if (has_file(files, edit.path))
      throw Rejected(fmt::format("the answer both gives {} whole and edits it", edit.path));

  answer.sources = parent_sources ? *parent_sources : std::vector<SourceFile>{};
  for (std::size_t index = 0; index < scan.edits.size(); ++index)
    apply_edit(answer.sources, scan.edits[index], index + 1);
  for (const SourceFile& file : files) {
    if (SourceFile* existing = find_file(answer.sources, file.path))
      existing->content = file.content;
    else
      answer.sources.push_back(file);
  }
  return answer;
}

}  // namespace

ParsedAnswer parse_answer(std::string_view text, const std::vector<SourceFile>* parent_sources,
                          const std::string& default_file) {
  try {
    return parse(text, parent_sources, default_file);
  } catch (const Rejected& rejected) {
    ParsedAnswer answer;
    answer.failure = rejected.what();
    return answer;
  }
}

}  // namespace kernelarc
