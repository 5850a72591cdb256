// Typed access to JSON fields, for every layer's loaders of user files.
//
// Every accessor names the file (`where`, e.g. "p/definition.json" or "p/workload.jsonl:3") and
// the field path ("inputs.x.dtype", "sources[1].path") in its InputError, and reports a wrong
// type as "expected <type>, got <type> <value>".
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kernelarc {

using OrderedJson = nlohmann::ordered_json;

/// "object", "array", "string", "integer", "number", "boolean" or "null", followed by the value
/// for scalars ("integer 5", "string \"f32\"").
std::string describe_json(const OrderedJson& value);
/// nlohmann's message without its "[json.exception.x.y] " prefix.
std::string json_error_text(const std::exception& error);
/// "parent.key", or "key" for an empty parent.
std::string field_path(std::string_view parent, std::string_view key);
/// "parent[index]".
std::string field_index(std::string_view parent, std::size_t index);

/// The whole file; InputError naming it if it cannot be read.
std::string read_text_file(const std::filesystem::path& path);
/// InputError "<where>: invalid JSON: parse error at line L, column C: ..." on a syntax error.
OrderedJson parse_json_text(const std::string& text, std::string_view where);

void expect_object(const OrderedJson& value, std::string_view where, std::string_view field);
std::string expect_string(const OrderedJson& value, std::string_view where, std::string_view field);
int64_t expect_int(const OrderedJson& value, std::string_view where, std::string_view field);
double expect_number(const OrderedJson& value, std::string_view where, std::string_view field);
bool expect_bool(const OrderedJson& value, std::string_view where, std::string_view field);
std::vector<std::string> expect_string_list(const OrderedJson& value, std::string_view where,
                                            std::string_view field);

/// The member, or nullptr when absent. `object` must be an object.
const OrderedJson* find_member(const OrderedJson& object, std::string_view key);
/// The member, or nullptr when absent or null: SOL-ExecBench and FlashInfer-Bench write null
/// for an optional field they leave unset, so for an optional field null means absent.
const OrderedJson* find_optional(const OrderedJson& object, std::string_view key);
/// The member; InputError "<where>: <parent.key>: missing required field" when absent.
const OrderedJson& require_member(const OrderedJson& object, std::string_view key,
                                  std::string_view where, std::string_view parent);
/// The number, or null when there is none.
OrderedJson optional_number(const std::optional<double>& value);
/// The required member `key` of `object`: nullopt when it is null, else a number.
std::optional<double> read_optional_number(const OrderedJson& object, std::string_view key,
                                           std::string_view where);
/// InputError for the first key not in `allowed`, listing the allowed ones.
void reject_unknown_keys(const OrderedJson& object, std::initializer_list<std::string_view> allowed,
                         std::string_view where, std::string_view parent);

}  // namespace kernelarc
