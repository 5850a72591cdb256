#include "oracle/input_heuristics.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace kernelarc {

namespace {

template <std::size_t N>
bool one_of(std::string_view text, const std::array<std::string_view, N>& options) {
  return std::find(options.begin(), options.end(), text) != options.end();
}

template <std::size_t N>
bool ends_with_any(std::string_view text, const std::array<std::string_view, N>& suffixes) {
  return std::any_of(suffixes.begin(), suffixes.end(),
                     [&](std::string_view suffix) { return text.ends_with(suffix); });
}

std::string_view strip_trailing_digits(std::string_view name) {
  while (!name.empty() && std::isdigit(static_cast<unsigned char>(name.back()))) {
    name.remove_suffix(1);
  }
  return name;
}

bool is_norm_parameter(std::string_view name, std::string_view suffix) {
  if (!name.ends_with(suffix)) return false;
  name.remove_suffix(suffix.size());
  return strip_trailing_digits(name).ends_with("norm");
}

bool contains(std::string_view text, std::string_view word) {
  return text.find(word) != std::string_view::npos;
}

}  // namespace

InputPattern classify_input(std::string_view name, const std::vector<int64_t>& shape,
                            std::string_view description, DType dtype) {
  if (!dtype_is_floating(dtype) || dtype == DType::Float8E4M3FN || dtype == DType::Float8E5M2 ||
      dtype_is_packed(dtype)) {
    return InputPattern::Random;
  }
  std::string text(description);
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });

  if (is_norm_parameter(name, "_weight")) return InputPattern::Ones;
  if (is_norm_parameter(name, "_bias")) return InputPattern::Zeros;

  bool square = shape.size() >= 2 && shape[shape.size() - 1] == shape[shape.size() - 2];
  if (square && (name == "attention_mask" || name == "causal_mask" ||
                 (contains(text, "attention mask") && contains(text, "causal")))) {
    return InputPattern::CausalMask;
  }
  constexpr std::array<std::string_view, 5> binary_names = {
      "x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask"};
  constexpr std::array<std::string_view, 5> binary_words = {"binary", "{0, 1}", "0 or 1",
                                                            "1.0 for valid", "0.0 for masked"};
  if (one_of(name, binary_names) ||
      (name.ends_with("_mask") &&
       std::any_of(binary_words.begin(), binary_words.end(),
                   [&](std::string_view w) { return contains(text, w); }))) {
    return InputPattern::BinaryMask;
  }
  constexpr std::array<std::string_view, 3> cos_names = {"cos", "cos_cached", "rope_cos"};
  constexpr std::array<std::string_view, 3> sin_names = {"sin", "sin_cached", "rope_sin"};
  if (one_of(name, cos_names)) return InputPattern::Cos;
  if (one_of(name, sin_names)) return InputPattern::Sin;

  constexpr std::array<std::string_view, 4> positive_names = {"rstd", "std", "variance", "var"};
  constexpr std::array<std::string_view, 4> positive_suffixes = {"_rstd", "_std", "_variance",
                                                                 "_var"};
  constexpr std::array<std::string_view, 3> positive_base_suffixes = {"_rstd", "_std", "_var"};
  std::string_view base = strip_trailing_digits(name);
  if (one_of(name, positive_names) || ends_with_any(name, positive_suffixes) ||
      one_of(base, positive_names) || ends_with_any(base, positive_base_suffixes)) {
    return InputPattern::Positive;
  }
  if (name == "A_cumsum") return InputPattern::SsmACumsum;
  if (name == "A_log") return InputPattern::SsmALog;
  if (name == "A") return InputPattern::SsmA;
  if (name == "g") return InputPattern::SsmGate;

  constexpr std::array<std::string_view, 3> softmax_names = {"attn_weights", "attention_weights",
                                                             "routing_weights"};
  if (one_of(name, softmax_names) || (contains(text, "softmax") && contains(text, "output"))) {
    return InputPattern::Softmax;
  }
  constexpr std::array<std::string_view, 5> weight_suffixes = {"_weight", "_weights", "_proj",
                                                               "_projs", "_weight_matrix"};
  if (shape.size() >= 2 && (name == "weight" || ends_with_any(name, weight_suffixes) ||
                            base == "weight" || ends_with_any(base, weight_suffixes))) {
    return InputPattern::ScaledWeight;
  }
  return InputPattern::Random;
}

}  // namespace kernelarc
