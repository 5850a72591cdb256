#include "kb/markdown_chunks.h"
#include "core/text.h"

#include <sstream>

namespace kernelarc {

namespace {

constexpr int kMaxHeadingLevel = 3;

int count_words(std::string_view text) {
  int words = 0;
  bool in_word = false;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

bool is_fence(std::string_view line) {
  const std::string_view text = trim(line);
  return text.starts_with("```") || text.starts_with("~~~");
}

/// The level (1-3) of an ATX heading line, or 0 for any other line. Deeper headings stay text:
/// they rarely carry a passage of their own.
int heading_level(std::string_view line) {
  int level = 0;
  while (level < static_cast<int>(line.size()) && line[level] == '#') ++level;
  if (level == 0 || level > kMaxHeadingLevel) return 0;
  if (level < static_cast<int>(line.size()) && line[level] != ' ' && line[level] != '\t') return 0;
  return level;
}

std::string heading_text(std::string_view line, int level) {
  std::string_view text = trim(line.substr(level));
  while (!text.empty() && text.back() == '#') text.remove_suffix(1);  // closing "##" sequence
  return std::string(trim(text));
}

std::string join_path(const std::vector<std::string>& path) {
  std::string joined;
  for (const std::string& part : path) {
    if (part.empty()) continue;
    if (!joined.empty()) joined += " > ";
    joined += part;
  }
  return joined;
}

bool ends_sentence(const std::string& word) {
  const char last = word.back();
  return last == '.' || last == '!' || last == '?' || last == ':';
}

/// One paragraph over the limit is cut after the last sentence that fits (a prompt shows a
/// chunk whole, and half a sentence misleads), between words only when no sentence ends within
/// the limit; its lines' words stay in order.
std::vector<std::string> split_words(std::string_view paragraph, int max_words) {
  std::vector<std::string> pieces;
  std::istringstream stream{std::string(paragraph)};
  std::vector<std::string> words;
  const auto emit = [&pieces, &words](std::size_t count) {
    std::string piece;
    for (std::size_t i = 0; i < count; ++i) piece += (i ? " " : "") + words[i];
    pieces.push_back(std::move(piece));
    words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(count));
  };
  for (std::string word; stream >> word;) {
    words.push_back(word);
    if (static_cast<int>(words.size()) < max_words) continue;
    std::size_t cut = words.size();
    for (std::size_t i = words.size(); i-- > 0;) {
      if (ends_sentence(words[i])) {
        cut = i + 1;
        break;
      }
    }
    emit(cut);
  }
  if (!words.empty()) emit(words.size());
  return pieces;
}

/// Packs paragraphs into pieces of at most `max_words` words each.
std::vector<std::string> split_section(const std::vector<std::string>& paragraphs, int max_words) {
  std::vector<std::string> pieces;
  std::string piece;
  int piece_words = 0;
  auto flush = [&] {
    if (!piece.empty()) pieces.push_back(piece);
    piece.clear();
    piece_words = 0;
  };
  for (const std::string& paragraph : paragraphs) {
    const int words = count_words(paragraph);
    if (words > max_words) {
      flush();
      for (std::string& part : split_words(paragraph, max_words)) pieces.push_back(std::move(part));
      continue;
    }
    if (piece_words + words > max_words) flush();
    if (!piece.empty()) piece += "\n\n";
    piece += paragraph;
    piece_words += words;
  }
  flush();
  return pieces;
}

class Splitter {
 public:
  explicit Splitter(int max_words) : max_words_(max_words) {}

  void line(std::string_view line) {
    if (is_fence(line)) in_fence_ = !in_fence_;
    const int level = in_fence_ ? 0 : heading_level(line);
    if (level > 0) {
      end_section();
      path_.resize(level);
      path_[level - 1] = heading_text(line, level);
      return;
    }
    if (!in_fence_ && trim(line).empty()) {
      end_paragraph();
      return;
    }
    if (!paragraph_.empty()) paragraph_ += '\n';
    paragraph_ += line;
  }

  std::vector<MarkdownChunk> finish() {
    end_section();
    return std::move(chunks_);
  }

 private:
  void end_paragraph() {
    const std::string_view text = trim(paragraph_);
    if (!text.empty()) paragraphs_.emplace_back(text);
    paragraph_.clear();
  }

  void end_section() {
    end_paragraph();
    const std::string heading = join_path(path_);
    for (std::string& piece : split_section(paragraphs_, max_words_))
      chunks_.push_back({heading, std::move(piece)});
    paragraphs_.clear();
  }

  int max_words_;
  bool in_fence_ = false;
  std::vector<std::string> path_;
  std::string paragraph_;
  std::vector<std::string> paragraphs_;
  std::vector<MarkdownChunk> chunks_;
};

}  // namespace

std::vector<MarkdownChunk> split_markdown(std::string_view markdown, int max_words) {
  Splitter splitter(max_words);
  while (!markdown.empty()) {
    const auto end = markdown.find('\n');
    std::string_view line = markdown.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    splitter.line(line);
    markdown.remove_prefix(end == std::string_view::npos ? markdown.size() : end + 1);
  }
  return splitter.finish();
}

}  // namespace kernelarc
