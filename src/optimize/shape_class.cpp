#include "optimize/shape_class.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace kernelarc {

namespace {

std::optional<int64_t> parse_size(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

std::optional<ShapeAxis> parse_axis(std::string_view token) {
  const auto equals = token.find('=');
  if (equals == std::string_view::npos || !is_identifier(token.substr(0, equals)))
    return std::nullopt;
  const std::string_view range = token.substr(equals + 1);
  const auto dots = range.find("..");
  const auto low = parse_size(range.substr(0, dots));
  const auto high = dots == std::string_view::npos ? low : parse_size(range.substr(dots + 2));
  if (!low || !high || *low > *high) return std::nullopt;
  return ShapeAxis{std::string(token.substr(0, equals)), *low, *high};
}

const ShapeAxis* find_axis(const ShapeClass& shape, const std::string& name) {
  for (const ShapeAxis& axis : shape.axes)
    if (axis.name == name) return &axis;
  return nullptr;
}

// Sizes compare by ratio: 2048 is as far from 4096 as 4096 from 8192. An axis of size 0 counts
// as 1.
double log_size(int64_t size) {
  return std::log2(static_cast<double>(std::max<int64_t>(size, 1)));
}

double range_distance(const ShapeAxis& a, const ShapeAxis& b) {
  return (std::abs(log_size(a.low) - log_size(b.low)) +
          std::abs(log_size(a.high) - log_size(b.high))) /
         2;
}

}  // namespace

std::string shape_class_of(const Definition& definition, const std::vector<Workload>& workloads) {
  ShapeClass shape{definition.name, {}};
  for (const Axis& axis : definition.axes) {
    if (axis.kind == AxisKind::Const) {
      shape.axes.push_back({axis.name, axis.value, axis.value});
      continue;
    }
    if (axis.kind != AxisKind::Var) continue;
    std::optional<ShapeAxis> range;
    for (const Workload& workload : workloads) {
      const auto value = workload.axes.find(axis.name);
      if (value == workload.axes.end()) continue;
      if (!range) range = ShapeAxis{axis.name, value->second, value->second};
      range->low = std::min(range->low, value->second);
      range->high = std::max(range->high, value->second);
    }
    if (range) shape.axes.push_back(*range);
  }
  return format_shape_class(shape);
}

std::string format_shape_class(const ShapeClass& shape) {
  std::vector<std::string> tokens;
  for (const ShapeAxis& axis : shape.axes)
    tokens.push_back(axis.low == axis.high
                         ? fmt::format("{}={}", axis.name, axis.low)
                         : fmt::format("{}={}..{}", axis.name, axis.low, axis.high));
  const std::string axes = fmt::format("{}", fmt::join(tokens, " "));
  return shape.problem.empty() ? axes : fmt::format("{}: {}", shape.problem, axes);
}

std::optional<ShapeClass> parse_shape_class(std::string_view text) {
  ShapeClass shape;
  if (const auto colon = text.find(": "); colon != std::string_view::npos) {
    shape.problem = std::string(text.substr(0, colon));
    text.remove_prefix(colon + 2);
  }
  while (!text.empty()) {
    const auto space = text.find(' ');
    const std::string_view token = text.substr(0, space);
    text.remove_prefix(space == std::string_view::npos ? text.size() : space + 1);
    if (token.empty()) continue;
    auto axis = parse_axis(token);
    if (!axis || find_axis(shape, axis->name)) return std::nullopt;
    shape.axes.push_back(std::move(*axis));
  }
  return shape;
}

// The distances of the shared axes add up (the product of per-axis similarities) rather than
// average: a shape twice as large on every axis is further away than one twice as large on one
// axis, and averaging would rate them alike. An axis only one side has is unknown, neither
// close nor far; weighting the neutral value by the share of such axes keeps the result
// continuous with the no-axis-in-common case. Halving the distance puts a shape about 2.6x off on
// one axis level with an unknown one: a skill from a nearer shape is preferred to an old skill
// whose shape cannot be read, one from a further shape is not.
double shape_similarity(std::string_view a, std::string_view b) {
  if (a == b) return 1;
  const auto left = parse_shape_class(a);
  const auto right = parse_shape_class(b);
  if (!left || !right) return kUnknownShapeSimilarity;
  std::vector<double> distances;
  int one_sided = 0;
  for (const ShapeAxis& axis : left->axes) {
    if (const ShapeAxis* other = find_axis(*right, axis.name))
      distances.push_back(range_distance(axis, *other));
    else
      ++one_sided;
  }
  for (const ShapeAxis& axis : right->axes)
    if (!find_axis(*left, axis.name)) ++one_sided;
  if (distances.empty()) return kUnknownShapeSimilarity;
  // Summed in a fixed order so that swapping the sides gives the same bits.
  std::sort(distances.begin(), distances.end());
  double distance = 0;
  for (double d : distances) distance += d;
  const double unknown_share =
      static_cast<double>(one_sided) / static_cast<double>(distances.size() + one_sided);
  return std::exp(-distance / 2) * std::pow(kUnknownShapeSimilarity, unknown_share);
}

}  // namespace kernelarc
