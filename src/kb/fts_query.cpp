#include "kb/fts_query.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace kernelarc {

namespace {

constexpr std::array<std::string_view, 32> kStopWords = {
    "a",   "an",   "and", "are",  "as",   "at",  "be",   "by",    "can", "do",    "does",
    "for", "from", "how", "i",    "in",   "is",  "it",   "my",    "of",  "on",    "or",
    "the", "this", "to",  "what", "when", "why", "with", "which", "not", "should"};

bool is_word_byte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return std::isalnum(byte) || byte >= 0x80;
}

bool is_joiner(char c) {
  return c == '_' || c == '-' || c == '.' || c == '+';
}

bool is_stop_word(std::string_view word) {
  return std::find(kStopWords.begin(), kStopWords.end(), word) != kStopWords.end();
}

}  // namespace

std::vector<std::string> query_words(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    if (!is_word_byte(text[i])) {
      ++i;
      continue;
    }
    std::string word;
    while (i < text.size()) {
      if (is_word_byte(text[i])) {
        word += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
        ++i;
      } else if (is_joiner(text[i]) && i + 1 < text.size() && is_word_byte(text[i + 1])) {
        word += text[i];
        ++i;
      } else {
        break;
      }
    }
    if (std::find(words.begin(), words.end(), word) == words.end()) words.push_back(word);
  }
  std::vector<std::string> content;
  std::copy_if(words.begin(), words.end(), std::back_inserter(content),
               [](const std::string& word) { return !is_stop_word(word); });
  return content.empty() ? words : content;
}

std::string fts_match_expression(std::string_view text) {
  std::string expression;
  for (const std::string& word : query_words(text)) {
    if (!expression.empty()) expression += " OR ";
    // Words hold no '"' (it is not a word byte), so quoting needs no escaping.
    expression += '"' + word + '"';
  }
  return expression;
}

}  // namespace kernelarc
