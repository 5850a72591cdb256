// Turns a user's free text into an FTS5 MATCH expression that can never be a syntax error: the
// text is cut into words here, and each word becomes a quoted string, so FTS5 operators (AND,
// OR, NOT, NEAR, *, ^, :, parentheses, quotes) in the text are only ever searched for as words.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kernelarc {

/// The words of `text`, lower-cased: runs of letters, digits and bytes >= 0x80, joined across a
/// single '_', '-', '.' or '+' between them ("sm_90", "16-byte", "avx-512" stay one word), with
/// very common English words dropped unless nothing else is left. Duplicates are removed.
std::vector<std::string> query_words(std::string_view text);

/// `"w1" OR "w2" ...` for the words of `text`; empty when it has none. The FTS5 tokenizer splits
/// a quoted word with punctuation into a phrase ("sm_90" matches "sm_90" and "sm 90").
std::string fts_match_expression(std::string_view text);

}  // namespace kernelarc
