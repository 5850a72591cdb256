#include "core/json_fields.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {

std::string describe_json(const OrderedJson& value) {
  if (value.is_number_integer()) return "integer " + value.dump();
  if (value.is_number_float()) return "number " + value.dump();
  if (value.is_string()) return "string " + value.dump();
  if (value.is_boolean()) return "boolean " + value.dump();
  return value.type_name();
}

std::string json_error_text(const std::exception& error) {
  std::string_view text = error.what();
  if (text.starts_with("[json.exception.")) {
    const auto end = text.find("] ");
    if (end != std::string_view::npos) text.remove_prefix(end + 2);
  }
  return std::string(text);
}

std::string field_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return fmt::format("{}.{}", parent, key);
}

std::string field_index(std::string_view parent, std::size_t index) {
  return fmt::format("{}[{}]", parent, index);
}

std::string read_text_file(const std::filesystem::path& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw_input_error(path.string(), "", "expected a file, found a directory");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_input_error(path.string(), "", "cannot open the file (does it exist?)");
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw_input_error(path.string(), "", "read error");
  return std::move(text).str();
}

OrderedJson parse_json_text(const std::string& text, std::string_view where) {
  try {
    return OrderedJson::parse(text);
  } catch (const OrderedJson::parse_error& error) {
    throw_input_error(where, "", "invalid JSON: " + json_error_text(error));
  }
}

void expect_object(const OrderedJson& value, std::string_view where, std::string_view field) {
  if (!value.is_object()) {
    throw_input_error(where, field, "expected object, got " + describe_json(value));
  }
}

std::string expect_string(const OrderedJson& value, std::string_view where,
                          std::string_view field) {
  if (!value.is_string()) {
    throw_input_error(where, field, "expected string, got " + describe_json(value));
  }
  return value.get<std::string>();
}

int64_t expect_int(const OrderedJson& value, std::string_view where, std::string_view field) {
  if (!value.is_number_integer()) {
    throw_input_error(where, field, "expected integer, got " + describe_json(value));
  }
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    throw_input_error(where, field, "integer " + value.dump() + " does not fit in int64");
  }
  return value.get<int64_t>();
}

double expect_number(const OrderedJson& value, std::string_view where, std::string_view field) {
  if (!value.is_number()) {
    throw_input_error(where, field, "expected number, got " + describe_json(value));
  }
  return value.get<double>();
}

bool expect_bool(const OrderedJson& value, std::string_view where, std::string_view field) {
  if (!value.is_boolean()) {
    throw_input_error(where, field, "expected boolean, got " + describe_json(value));
  }
  return value.get<bool>();
}

std::vector<std::string> expect_string_list(const OrderedJson& value, std::string_view where,
                                            std::string_view field) {
  if (!value.is_array()) {
    throw_input_error(where, field, "expected array of strings, got " + describe_json(value));
  }
  std::vector<std::string> strings;
  for (std::size_t index = 0; index < value.size(); ++index) {
    strings.push_back(expect_string(value[index], where, field_index(field, index)));
  }
  return strings;
}

const OrderedJson* find_member(const OrderedJson& object, std::string_view key) {
  const auto found = object.find(key);
  return found == object.end() ? nullptr : &*found;
}

const OrderedJson* find_optional(const OrderedJson& object, std::string_view key) {
  const OrderedJson* member = find_member(object, key);
  return member == nullptr || member->is_null() ? nullptr : member;
}

const OrderedJson& require_member(const OrderedJson& object, std::string_view key,
                                  std::string_view where, std::string_view parent) {
  const OrderedJson* member = find_member(object, key);
  if (member == nullptr)
    throw_input_error(where, field_path(parent, key), "missing required field");
  return *member;
}

OrderedJson optional_number(const std::optional<double>& value) {
  return value ? OrderedJson(*value) : OrderedJson(nullptr);
}

std::optional<double> read_optional_number(const OrderedJson& object, std::string_view key,
                                           std::string_view where) {
  const OrderedJson& value = require_member(object, key, where, "");
  if (value.is_null()) return std::nullopt;
  return expect_number(value, where, key);
}

void reject_unknown_keys(const OrderedJson& object, std::initializer_list<std::string_view> allowed,
                         std::string_view where, std::string_view parent) {
  for (const auto& [key, unused] : object.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || name == key;
    if (known) continue;
    std::string names;
    for (std::string_view name : allowed) names += (names.empty() ? "" : ", ") + std::string(name);
    throw_input_error(where, field_path(parent, key),
                      fmt::format("unknown field (expected one of {})", names));
  }
}

}  // namespace kernelarc
