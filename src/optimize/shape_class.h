// The shape class of a run: the problem and the sizes of the workloads it evaluated, as one
// string a skill keeps in its condition, "rmsnorm_f32: batch_size=1..16384 hidden_size=4096"
// (a const axis as its value, a var axis as the smallest..largest value of the workloads; expr
// axes are left out, they follow from the others). Warm start compares two of them to prefer
// skills learned on nearby shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.h"

namespace kernelarc {

struct ShapeAxis {
  std::string name;
  int64_t low = 0;  ///< low == high for a const axis or a var axis with one value
  int64_t high = 0;
};

struct ShapeClass {
  std::string problem;  ///< the definition's name; empty when the string had no "name: " part
  std::vector<ShapeAxis> axes;
};

/// The shape class of `workloads` of `definition`, formatted.
std::string shape_class_of(const Definition& definition, const std::vector<Workload>& workloads);

std::string format_shape_class(const ShapeClass& shape);

/// nullopt for a string in no such format, as the workload descriptions of earlier versions
/// ("rmsnorm_f32: all 6 workloads") are.
std::optional<ShapeClass> parse_shape_class(std::string_view text);

/// Returned when a shape class cannot be compared: an unparseable string or no axis in common.
inline constexpr double kUnknownShapeSimilarity = 0.5;

/// How close two shape classes are, in (0, 1]: 1 for the same string, kUnknownShapeSimilarity
/// when either cannot be parsed or they share no axis, else exp(-d / 2) x 0.5^f, where d sums
/// over the shared axes the log2 distance of their ranges (the mean of the distances of the low
/// ends and of the high ends) and f is the fraction of axes only one side has. Symmetric.
double shape_similarity(std::string_view a, std::string_view b);

}  // namespace kernelarc
