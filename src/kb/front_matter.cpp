#include "kb/front_matter.h"

#include <cctype>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/text.h"

namespace kernelarc {

namespace {

std::string lower(std::string_view text) {
  std::string result(text);
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

bool is_key_word(std::string_view word) {
  if (word.empty()) return false;
  for (const char c : word) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
        c != '+')
      return false;
  }
  return true;
}

std::string_view unquote(std::string_view value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front())
    return value.substr(1, value.size() - 2);
  return value;
}

class FrontMatterParser {
 public:
  FrontMatterParser(std::string_view source_name, MarkdownFile& file)
      : source_name_(source_name), file_(file) {}

  void line(int number, std::string_view text) {
    line_ = number;
    const std::string_view content = trim(text);
    if (content.empty() || content.front() == '#') return;
    const auto colon = content.find(':');
    if (colon == std::string_view::npos)
      fail("", fmt::format("expected \"key: value\", got \"{}\"", content));
    const std::string key(trim(content.substr(0, colon)));
    const std::string_view value = trim(content.substr(colon + 1));
    if (key == "title") {
      file_.title = std::string(unquote(value));
      if (file_.title.empty()) fail(key, "expected a title, got nothing");
    } else if (key == "families") {
      file_.keys.families = list(key, value);
    } else if (key == "hardware") {
      file_.keys.hardware = list(key, value);
    } else if (key == "bottlenecks") {
      file_.keys.bottlenecks = list(key, value);
    } else if (key == "error_kinds") {
      file_.keys.error_kinds = list(key, value);
    } else {
      fail(key, "unknown key (expected title, families, hardware, bottlenecks or error_kinds)");
    }
  }

  [[noreturn]] void fail(std::string_view field, std::string_view problem) const {
    throw_input_error(fmt::format("{}:{}", source_name_, line_), field, problem);
  }

 private:
  std::vector<std::string> list(const std::string& key, std::string_view value) const {
    if (value.size() < 2 || value.front() != '[' || value.back() != ']')
      fail(key, fmt::format("expected a list like [a, b], got \"{}\"", value));
    std::vector<std::string> items;
    std::string_view rest = trim(value.substr(1, value.size() - 2));
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const std::string_view item = unquote(trim(rest.substr(0, comma)));
      if (!is_key_word(item))
        fail(key, fmt::format("expected words of letters, digits, '_', '-', '.' or '+' between "
                              "commas, got \"{}\"",
                              value));
      items.push_back(lower(item));
      if (comma == std::string_view::npos) break;
      rest = trim(rest.substr(comma + 1));
      if (rest.empty())
        fail(key, fmt::format("expected an item after the last comma in {}", value));
    }
    return items;
  }

  std::string_view source_name_;
  MarkdownFile& file_;
  int line_ = 0;
};

/// The next line of `text` from `offset` (without its newline), advancing `offset`.
std::optional<std::string_view> next_line(std::string_view text, size_t& offset) {
  if (offset >= text.size()) return std::nullopt;
  const auto end = text.find('\n', offset);
  const size_t stop = end == std::string_view::npos ? text.size() : end;
  std::string_view line = text.substr(offset, stop - offset);
  offset = end == std::string_view::npos ? text.size() : end + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

MarkdownFile parse_markdown_file(std::string_view text, std::string_view source_name) {
  MarkdownFile file;
  size_t offset = 0;
  const auto first = next_line(text, offset);
  if (!first || trim(*first) != "---") {
    file.body = std::string(text);
    return file;
  }
  FrontMatterParser parser(source_name, file);
  int number = 1;
  while (const auto line = next_line(text, offset)) {
    ++number;
    if (trim(*line) == "---") {
      file.body = std::string(text.substr(offset));
      return file;
    }
    parser.line(number, *line);
  }
  throw_input_error(fmt::format("{}:1", source_name), "",
                    "the front matter opened by \"---\" has no closing \"---\" line");
}

}  // namespace kernelarc
