// The knob spec file loader (declared in knob_space.h).
#include "core/json_fields.h"
#include "synth/knob_space.h"

namespace kernelarc {

namespace {

std::optional<int64_t> optional_int(const OrderedJson& spec, std::string_view key,
                                    std::string_view where, const std::string& field) {
  const OrderedJson* member = find_member(spec, key);
  if (!member) return std::nullopt;
  return expect_int(*member, where, field_path(field, key));
}

int64_t required_int(const OrderedJson& spec, std::string_view key, std::string_view where,
                     const std::string& field) {
  return expect_int(require_member(spec, key, where, field), where, field_path(field, key));
}

std::vector<int64_t> int_list(const OrderedJson& spec, std::string_view where,
                              const std::string& field) {
  const OrderedJson& list = require_member(spec, "values", where, field);
  const std::string list_field = field_path(field, "values");
  if (!list.is_array())
    throw_input_error(where, list_field, "expected array, got " + describe_json(list));
  std::vector<int64_t> values;
  for (std::size_t i = 0; i < list.size(); ++i)
    values.push_back(expect_int(list[i], where, field_index(list_field, i)));
  return values;
}

// The knob of `spec`'s type, without its roles; throws KnobDomainError for a bad domain.
Knob parse_domain(const std::string& name, const OrderedJson& spec, std::string_view where,
                  const std::string& field) {
  const std::string type =
      expect_string(require_member(spec, "type", where, field), where, field_path(field, "type"));
  const OrderedJson* default_json = find_member(spec, "default");
  const std::string default_field = field_path(field, "default");
  if (type == "int_range") {
    reject_unknown_keys(spec, {"type", "min", "max", "step", "default", "roles", "trades_accuracy"},
                        where, field);
    return Knob::int_range(name, required_int(spec, "min", where, field),
                           required_int(spec, "max", where, field),
                           optional_int(spec, "step", where, field).value_or(1),
                           optional_int(spec, "default", where, field));
  }
  if (type == "pow2") {
    reject_unknown_keys(spec, {"type", "min", "max", "default", "roles", "trades_accuracy"}, where,
                        field);
    return Knob::pow2(name, required_int(spec, "min", where, field),
                      required_int(spec, "max", where, field),
                      optional_int(spec, "default", where, field));
  }
  if (type == "int_set") {
    reject_unknown_keys(spec, {"type", "values", "default", "roles", "trades_accuracy"}, where,
                        field);
    return Knob::int_set(name, int_list(spec, where, field),
                         optional_int(spec, "default", where, field));
  }
  if (type == "enum") {
    reject_unknown_keys(spec, {"type", "values", "default", "roles", "trades_accuracy"}, where,
                        field);
    std::optional<std::string> default_label;
    if (default_json) default_label = expect_string(*default_json, where, default_field);
    return Knob::enumeration(name,
                             expect_string_list(require_member(spec, "values", where, field), where,
                                                field_path(field, "values")),
                             default_label);
  }
  if (type == "bool") {
    reject_unknown_keys(spec, {"type", "default", "roles", "trades_accuracy"}, where, field);
    return Knob::boolean(name, default_json && expect_bool(*default_json, where, default_field));
  }
  throw_input_error(where, field_path(field, "type"),
                    "expected one of int_range, pow2, int_set, enum, bool, got \"" + type + "\"");
}

// A value of `knob`'s type as the spec writes it: true/false for a bool, a label for an enum.
KnobValue spec_value(const Knob& knob, const OrderedJson& value, std::string_view where,
                     const std::string& field) {
  if (knob.type() == KnobType::Bool) return int64_t{expect_bool(value, where, field) ? 1 : 0};
  if (knob.type() == KnobType::Enum) return expect_string(value, where, field);
  return expect_int(value, where, field);
}

// {"values": [...], "note": "what is given up"}: the values at which the knob trades accuracy.
void parse_accuracy_trades(Knob& knob, const OrderedJson& spec, std::string_view where,
                           const std::string& field) {
  expect_object(spec, where, field);
  reject_unknown_keys(spec, {"values", "note"}, where, field);
  const OrderedJson& list = require_member(spec, "values", where, field);
  const std::string list_field = field_path(field, "values");
  if (!list.is_array())
    throw_input_error(where, list_field, "expected array, got " + describe_json(list));
  if (list.empty()) throw_input_error(where, list_field, "expected at least one value");
  std::vector<KnobValue> values;
  for (std::size_t i = 0; i < list.size(); ++i)
    values.push_back(spec_value(knob, list[i], where, field_index(list_field, i)));
  const std::string note =
      expect_string(require_member(spec, "note", where, field), where, field_path(field, "note"));
  if (note.empty())
    throw_input_error(where, field_path(field, "note"), "expected what is given up");
  try {
    knob.with_accuracy_trades(values, note);
  } catch (const KnobDomainError& error) {
    throw_input_error(where, field_path(field, error.field()), error.problem());
  }
}

Knob parse_knob(const std::string& name, const OrderedJson& spec, std::string_view where) {
  const std::string field = field_path("knobs", name);
  expect_object(spec, where, field);
  try {
    Knob knob = parse_domain(name, spec, where, field);
    if (const OrderedJson* roles = find_member(spec, "roles"))
      knob.with_roles(expect_string_list(*roles, where, field_path(field, "roles")));
    if (const OrderedJson* trades = find_member(spec, "trades_accuracy"))
      parse_accuracy_trades(knob, *trades, where, field_path(field, "trades_accuracy"));
    return knob;
  } catch (const KnobDomainError& error) {
    throw_input_error(where, field_path(field, error.field()), error.problem());
  }
}

}  // namespace

KnobSpace parse_knob_space(std::string_view text, std::string_view where,
                           const std::optional<std::set<std::string>>& axis_names) {
  const OrderedJson root = parse_json_text(std::string(text), where);
  expect_object(root, where, "");
  reject_unknown_keys(root, {"knobs", "constraints"}, where, "");
  const OrderedJson& knobs_json = require_member(root, "knobs", where, "");
  expect_object(knobs_json, where, "knobs");
  std::vector<Knob> knobs;
  for (const auto& [name, spec] : knobs_json.items()) {
    if (!is_identifier(name)) {
      throw_input_error(where, field_path("knobs", name),
                        "expected an identifier ([A-Za-z_][A-Za-z0-9_]*) as the name");
    }
    if (axis_names && axis_names->contains(name)) {
      throw_input_error(where, field_path("knobs", name),
                        "a knob cannot be named like the problem axis '" + name + "'");
    }
    knobs.push_back(parse_knob(name, spec, where));
  }
  std::vector<std::string> constraints;
  if (const OrderedJson* list = find_member(root, "constraints"))
    constraints = expect_string_list(*list, where, "constraints");
  std::optional<KnobSpace> space;
  try {
    space.emplace(std::move(knobs), std::move(constraints));
  } catch (const InputError& error) {
    throw InputError(std::string(where) + ": " + error.what());
  }
  if (axis_names) {
    for (std::size_t i = 0; i < space->constraints().size(); ++i) {
      for (const std::string& variable : space->constraint_variables(i)) {
        if (!space->knob_index(variable) && !axis_names->contains(variable)) {
          throw_input_error(where, field_index("constraints", i),
                            "\"" + space->constraints()[i] + "\" names '" + variable +
                                "', which is neither a knob nor a problem axis");
        }
      }
    }
  }
  return std::move(*space);
}

KnobSpace load_knob_space(const std::filesystem::path& path,
                          const std::optional<std::set<std::string>>& axis_names) {
  return parse_knob_space(read_text_file(path), path.string(), axis_names);
}

}  // namespace kernelarc
