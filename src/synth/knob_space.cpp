#include "synth/knob_space.h"

#include <limits>

namespace kernelarc {

KnobSpace::KnobSpace(std::vector<Knob> knobs, std::vector<std::string> constraints)
    : knobs_(std::move(knobs)), constraints_(std::move(constraints)) {
  for (std::size_t i = 0; i < knobs_.size(); ++i) {
    if (!is_identifier(knobs_[i].name())) {
      throw InputError("knob '" + knobs_[i].name() + "': expected an identifier as the name");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (knobs_[j].name() == knobs_[i].name())
        throw InputError("knob '" + knobs_[i].name() + "': declared twice");
    }
  }
  for (std::size_t i = 0; i < constraints_.size(); ++i) {
    try {
      variables_.push_back(kernelarc::expr_variables(constraints_[i]));
    } catch (const ExprError& error) {
      throw InputError("constraints[" + std::to_string(i) + "]: \"" + constraints_[i] + "\" " +
                       error.what());
    }
  }
}

std::optional<std::size_t> KnobSpace::knob_index(std::string_view name) const {
  for (std::size_t i = 0; i < knobs_.size(); ++i) {
    if (knobs_[i].name() == name) return i;
  }
  return std::nullopt;
}

uint64_t KnobSpace::product_size() const {
  uint64_t total = 1;
  for (const Knob& knob : knobs_) {
    if (total > std::numeric_limits<uint64_t>::max() / knob.size())
      return std::numeric_limits<uint64_t>::max();
    total *= knob.size();
  }
  return total;
}

KnobPoint KnobSpace::default_point() const {
  KnobCoords coords;
  for (const Knob& knob : knobs_) coords.push_back(knob.default_index());
  return point_at(coords);
}

KnobPoint KnobSpace::default_with(const KnobPoint& values) const {
  KnobPoint point = default_point();
  for (const auto& [name, value] : values) {
    if (!knob_index(name)) {
      std::string names;
      for (const Knob& knob : knobs_) names += (names.empty() ? "" : ", ") + knob.name();
      throw InputError("knob '" + name + "': no such knob (expected one of " + names + ")");
    }
    point[name] = value;
  }
  coords_of(point);  // checks every value against its domain
  return point;
}

std::vector<std::string> KnobSpace::accuracy_trades(const KnobPoint& point) const {
  std::vector<std::string> trades;
  for (const Knob& knob : knobs_) {
    const auto found = point.find(knob.name());
    if (found == point.end()) continue;
    const std::optional<uint64_t> index = knob.index_of(found->second);
    if (index && knob.trades_accuracy_at(*index)) {
      trades.push_back(knob.name() + "=" + knob_value_text(found->second) + ": " +
                       knob.accuracy_note());
    }
  }
  return trades;
}

KnobSpace KnobSpace::keeping_accuracy() const {
  std::vector<std::string> constraints = constraints_;
  for (const Knob& knob : knobs_)
    for (const uint64_t index : knob.accuracy_trades())
      constraints.push_back(knob.name() + " != " + std::to_string(knob.expr_value_at(index)));
  return KnobSpace(knobs_, std::move(constraints));
}

KnobPoint KnobSpace::point_at(const KnobCoords& coords) const {
  KnobPoint point;
  for (std::size_t i = 0; i < knobs_.size(); ++i)
    point.emplace(knobs_[i].name(), knobs_[i].value_at(coords.at(i)));
  return point;
}

KnobCoords KnobSpace::coords_of(const KnobPoint& point) const {
  KnobCoords coords;
  for (const Knob& knob : knobs_) {
    const auto found = point.find(knob.name());
    if (found == point.end())
      throw InputError("knob '" + knob.name() + "': missing from the point");
    const std::optional<uint64_t> index = knob.index_of(found->second);
    if (!index) {
      throw InputError("knob '" + knob.name() + "': expected " + knob.describe_domain() + ", got " +
                       knob_value_text(found->second));
    }
    coords.push_back(*index);
  }
  for (const auto& [name, value] : point) {
    if (!knob_index(name)) throw InputError("knob '" + name + "': not a knob of this space");
  }
  return coords;
}

KnobPoint KnobSpace::parse_point(std::string_view text) const {
  const KnobPoint point = parse_knob_point(text);
  try {
    coords_of(point);
  } catch (const InputError& error) {
    throw InputError("knob point \"" + std::string(text) + "\": " + error.what());
  }
  return point;
}

AxisValues KnobSpace::expr_variables_at(const KnobCoords& coords, const AxisValues& axes) const {
  AxisValues variables = axes;
  for (std::size_t i = 0; i < knobs_.size(); ++i)
    variables[knobs_[i].name()] = knobs_[i].expr_value_at(coords.at(i));
  return variables;
}

}  // namespace kernelarc
