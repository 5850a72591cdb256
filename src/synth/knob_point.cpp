#include "synth/knob_point.h"

#include <algorithm>
#include <charconv>

namespace kernelarc {

namespace {

[[noreturn]] void fail(std::string_view text, const std::string& problem) {
  throw InputError("knob point \"" + std::string(text) + "\": " + problem);
}

}  // namespace

std::string format_knob_point(const KnobPoint& point) {
  std::string text;
  for (const auto& [name, value] : point) {
    if (!text.empty()) text += ',';
    text += name;
    text += '=';
    text += knob_value_text(value);
  }
  return text;
}

KnobPoint parse_knob_point(std::string_view text) {
  KnobPoint point;
  if (text.empty()) return point;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view entry = text.substr(start, comma - start);
    const std::size_t equals = entry.find('=');
    if (equals == std::string_view::npos) {
      fail(text, "entry \"" + std::string(entry) + "\": expected name=value");
    }
    const std::string name(entry.substr(0, equals));
    const std::string value(entry.substr(equals + 1));
    if (!is_identifier(name))
      fail(text, "expected a knob name (an identifier), got \"" + name + "\"");
    if (point.contains(name)) fail(text, "knob '" + name + "': given twice");
    int64_t number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (!value.empty() && error == std::errc() && end == value.data() + value.size()) {
      point.emplace(name, number);
    } else if (is_identifier(value)) {
      point.emplace(name, value);
    } else {
      fail(text, "knob '" + name + "': expected an integer or a label, got \"" + value + "\"");
    }
    start = comma + 1;
  }
  return point;
}

nlohmann::json knob_value_to_json(const KnobValue& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

nlohmann::json knob_point_to_json(const KnobPoint& point) {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [name, value] : point) json[name] = knob_value_to_json(value);
  return json;
}

KnobPoint knob_point_from_json(const nlohmann::json& json) {
  KnobPoint point;
  for (const auto& [name, value] : json.items()) {
    if (value.is_string())
      point[name] = value.get<std::string>();
    else if (value.is_number_integer())
      point[name] = value.get<int64_t>();
    else
      throw InputError("knob point " + json.dump() + ": knob " + name +
                       " is neither an integer nor a label");
  }
  return point;
}

}  // namespace kernelarc
