#include "synth/knob.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <limits>

namespace kernelarc {

namespace {

std::string join_ints(const std::vector<int64_t>& values) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text;
}

std::string join_labels(const std::vector<std::string>& labels) {
  std::string text;
  for (std::size_t i = 0; i < labels.size(); ++i) text += (i ? ", " : "") + labels[i];
  return text;
}

bool is_pow2(int64_t value) {
  return value > 0 && std::has_single_bit(static_cast<uint64_t>(value));
}

}  // namespace

const char* knob_type_name(KnobType type) {
  switch (type) {
    case KnobType::IntRange:
      return "int_range";
    case KnobType::Pow2:
      return "pow2";
    case KnobType::IntSet:
      return "int_set";
    case KnobType::Enum:
      return "enum";
    case KnobType::Bool:
      return "bool";
  }
  return "?";
}

std::string knob_value_text(const KnobValue& value) {
  if (const auto* number = std::get_if<int64_t>(&value)) return std::to_string(*number);
  return std::get<std::string>(value);
}

const std::vector<std::string>& knob_role_names() {
  static const std::vector<std::string> names = {"memory", "parallelism", "compute", "fusion",
                                                 "library"};
  return names;
}

KnobDomainError::KnobDomainError(std::string field, std::string problem)
    : InputError(field + ": " + problem), field_(std::move(field)), problem_(std::move(problem)) {}

Knob Knob::int_range(std::string name, int64_t min, int64_t max, int64_t step,
                     std::optional<int64_t> default_value) {
  if (min > max) {
    throw KnobDomainError(
        "max", "expected max >= min (" + std::to_string(min) + "), got " + std::to_string(max));
  }
  if (step <= 0)
    throw KnobDomainError("step", "expected a positive step, got " + std::to_string(step));
  if (static_cast<uint64_t>(max) - static_cast<uint64_t>(min) ==
          std::numeric_limits<uint64_t>::max() &&
      step == 1) {
    throw KnobDomainError("max", "expected at most 2^64 - 1 values in the range");
  }
  Knob knob(std::move(name), KnobType::IntRange);
  knob.min_ = min;
  knob.max_ = max;
  knob.step_ = step;
  knob.set_default(default_value ? std::optional<KnobValue>(*default_value) : std::nullopt);
  return knob;
}

Knob Knob::pow2(std::string name, int64_t min, int64_t max, std::optional<int64_t> default_value) {
  if (!is_pow2(min))
    throw KnobDomainError("min", "expected a power of two >= 1, got " + std::to_string(min));
  if (!is_pow2(max))
    throw KnobDomainError("max", "expected a power of two >= 1, got " + std::to_string(max));
  if (min > max) {
    throw KnobDomainError(
        "max", "expected max >= min (" + std::to_string(min) + "), got " + std::to_string(max));
  }
  Knob knob(std::move(name), KnobType::Pow2);
  knob.min_ = min;
  knob.max_ = max;
  knob.set_default(default_value ? std::optional<KnobValue>(*default_value) : std::nullopt);
  return knob;
}

Knob Knob::int_set(std::string name, std::vector<int64_t> values,
                   std::optional<int64_t> default_value) {
  if (values.empty()) throw KnobDomainError("values", "expected at least one value");
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values[i]) !=
        values.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw KnobDomainError("values[" + std::to_string(i) + "]",
                            "duplicate value " + std::to_string(values[i]));
    }
  }
  std::sort(values.begin(), values.end());
  Knob knob(std::move(name), KnobType::IntSet);
  knob.values_ = std::move(values);
  knob.set_default(default_value ? std::optional<KnobValue>(*default_value) : std::nullopt);
  return knob;
}

Knob Knob::enumeration(std::string name, std::vector<std::string> labels,
                       std::optional<std::string> default_value) {
  if (labels.empty()) throw KnobDomainError("values", "expected at least one label");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string field = "values[" + std::to_string(i) + "]";
    if (!is_identifier(labels[i])) {
      throw KnobDomainError(
          field, "expected an identifier ([A-Za-z_][A-Za-z0-9_]*), got \"" + labels[i] + "\"");
    }
    if (std::find(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(i), labels[i]) !=
        labels.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw KnobDomainError(field, "duplicate label \"" + labels[i] + "\"");
    }
  }
  Knob knob(std::move(name), KnobType::Enum);
  knob.labels_ = std::move(labels);
  knob.set_default(default_value ? std::optional<KnobValue>(*default_value) : std::nullopt);
  return knob;
}

Knob Knob::boolean(std::string name, bool default_value) {
  Knob knob(std::move(name), KnobType::Bool);
  knob.default_index_ = default_value ? 1 : 0;
  return knob;
}

void Knob::set_default(const std::optional<KnobValue>& value) {
  if (!value) return;
  const std::optional<uint64_t> index = index_of(*value);
  if (!index) {
    throw KnobDomainError("default",
                          "expected " + describe_domain() + ", got " + knob_value_text(*value));
  }
  default_index_ = *index;
}

uint64_t Knob::size() const {
  switch (type_) {
    case KnobType::IntRange:
      // Unsigned arithmetic: max - min can exceed INT64_MAX.
      return (static_cast<uint64_t>(max_) - static_cast<uint64_t>(min_)) /
                 static_cast<uint64_t>(step_) +
             1;
    case KnobType::Pow2:
      return static_cast<uint64_t>(std::countr_zero(static_cast<uint64_t>(max_)) -
                                   std::countr_zero(static_cast<uint64_t>(min_))) +
             1;
    case KnobType::IntSet:
      return values_.size();
    case KnobType::Enum:
      return labels_.size();
    case KnobType::Bool:
      return 2;
  }
  return 0;
}

int64_t Knob::expr_value_at(uint64_t index) const {
  switch (type_) {
    case KnobType::IntRange:
      return static_cast<int64_t>(static_cast<uint64_t>(min_) +
                                  index * static_cast<uint64_t>(step_));
    case KnobType::Pow2:
      return min_ << index;
    case KnobType::IntSet:
      return values_.at(index);
    case KnobType::Enum:
    case KnobType::Bool:
      return static_cast<int64_t>(index);
  }
  return 0;
}

KnobValue Knob::value_at(uint64_t index) const {
  if (type_ == KnobType::Enum) return labels_.at(index);
  return expr_value_at(index);
}

std::optional<uint64_t> Knob::index_of(const KnobValue& value) const {
  if (type_ == KnobType::Enum) {
    const auto* label = std::get_if<std::string>(&value);
    if (!label) return std::nullopt;
    const auto found = std::find(labels_.begin(), labels_.end(), *label);
    if (found == labels_.end()) return std::nullopt;
    return static_cast<uint64_t>(found - labels_.begin());
  }
  const auto* number = std::get_if<int64_t>(&value);
  if (!number) return std::nullopt;
  const int64_t v = *number;
  switch (type_) {
    case KnobType::IntRange: {
      if (v < min_ || v > max_) return std::nullopt;
      const uint64_t offset = static_cast<uint64_t>(v) - static_cast<uint64_t>(min_);
      if (offset % static_cast<uint64_t>(step_) != 0) return std::nullopt;
      return offset / static_cast<uint64_t>(step_);
    }
    case KnobType::Pow2:
      if (v < min_ || v > max_ || !is_pow2(v)) return std::nullopt;
      return static_cast<uint64_t>(std::countr_zero(static_cast<uint64_t>(v)) -
                                   std::countr_zero(static_cast<uint64_t>(min_)));
    case KnobType::IntSet: {
      const auto found = std::lower_bound(values_.begin(), values_.end(), v);
      if (found == values_.end() || *found != v) return std::nullopt;
      return static_cast<uint64_t>(found - values_.begin());
    }
    case KnobType::Bool:
      if (v != 0 && v != 1) return std::nullopt;
      return static_cast<uint64_t>(v);
    case KnobType::Enum:
      break;
  }
  return std::nullopt;
}

std::string Knob::describe_domain() const {
  switch (type_) {
    case KnobType::IntRange:
      return "an integer in [" + std::to_string(min_) + ", " + std::to_string(max_) + "]" +
             (step_ == 1
                  ? ""
                  : " in steps of " + std::to_string(step_) + " from " + std::to_string(min_));
    case KnobType::Pow2:
      return "a power of two in [" + std::to_string(min_) + ", " + std::to_string(max_) + "]";
    case KnobType::IntSet:
      return "one of " + join_ints(values_);
    case KnobType::Enum:
      return "one of " + join_labels(labels_);
    case KnobType::Bool:
      return "0 or 1";
  }
  return "";
}

bool Knob::has_role(std::string_view role) const {
  return std::find(roles_.begin(), roles_.end(), role) != roles_.end();
}

Knob& Knob::with_roles(std::vector<std::string> roles) {
  const std::vector<std::string>& allowed = knob_role_names();
  for (std::size_t i = 0; i < roles.size(); ++i) {
    const std::string field = "roles[" + std::to_string(i) + "]";
    if (std::find(allowed.begin(), allowed.end(), roles[i]) == allowed.end()) {
      throw KnobDomainError(field, "unknown role \"" + roles[i] + "\" (expected one of " +
                                       join_labels(allowed) + ")");
    }
    if (std::find(roles.begin(), roles.begin() + static_cast<std::ptrdiff_t>(i), roles[i]) !=
        roles.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw KnobDomainError(field, "duplicate role \"" + roles[i] + "\"");
    }
  }
  roles_ = std::move(roles);
  return *this;
}

bool Knob::trades_accuracy_at(uint64_t index) const {
  return std::binary_search(accuracy_trades_.begin(), accuracy_trades_.end(), index);
}

Knob& Knob::with_accuracy_trades(const std::vector<KnobValue>& values, std::string note) {
  std::vector<uint64_t> indices;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string field = "values[" + std::to_string(i) + "]";
    const std::optional<uint64_t> index = index_of(values[i]);
    if (!index) {
      throw KnobDomainError(
          field, "expected " + describe_domain() + ", got " + knob_value_text(values[i]));
    }
    if (std::find(indices.begin(), indices.end(), *index) != indices.end())
      throw KnobDomainError(field, "duplicate value " + knob_value_text(values[i]));
    if (*index == default_index_) {
      throw KnobDomainError("values", "the default " + knob_value_text(values[i]) +
                                          " cannot trade accuracy: the default point is the "
                                          "like-for-like one");
    }
    indices.push_back(*index);
  }
  std::sort(indices.begin(), indices.end());
  accuracy_trades_ = std::move(indices);
  accuracy_note_ = std::move(note);
  return *this;
}

}  // namespace kernelarc
