#include "eval/solution_variants.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/solution_knobs.h"
#include "core/error.h"
#include "core/hash.h"

namespace kernelarc {

namespace {

constexpr const char* kField = "kernelarc.variants";

[[noreturn]] void variant_error(const Solution& solution, std::size_t index,
                                std::string_view member, const std::string& what) {
  throw_input_error(solution.path.string(),
                    fmt::format("{}[{}]{}{}", kField, index, member.empty() ? "" : ".", member),
                    what);
}

}  // namespace

std::vector<SolutionVariant> parse_variants(const Solution& solution,
                                            const Definition& definition) {
  const auto found = solution.ext.find("variants");
  if (found == solution.ext.end()) return {};
  if (!found->is_array()) {
    throw_input_error(solution.path.string(), kField,
                      "expected a list of {\"when\", \"knobs\"} objects, got " + found->dump());
  }
  std::vector<SolutionVariant> variants;
  for (std::size_t i = 0; i < found->size(); ++i) {
    const OrderedJson& entry = (*found)[i];
    if (!entry.is_object())
      variant_error(solution, i, "", "expected an object, got " + entry.dump());
    for (const auto& [key, value] : entry.items()) {
      if (key != "when" && key != "knobs" && key != "point")
        variant_error(solution, i, key, "unknown member (expected when, knobs and point)");
    }
    SolutionVariant variant;
    const auto when = entry.find("when");
    if (when == entry.end() || !when->is_string() || when->get<std::string>().empty())
      variant_error(solution, i, "when", "expected an expression over the definition's axes");
    variant.when = when->get<std::string>();
    try {
      for (const std::string& name : expr_variables(variant.when)) {
        const bool axis = std::any_of(definition.axes.begin(), definition.axes.end(),
                                      [&](const Axis& a) { return a.name == name; });
        if (!axis) {
          variant_error(
              solution, i, "when",
              fmt::format("'{}' is not an axis of definition '{}'", name, definition.name));
        }
      }
    } catch (const ExprError& error) {
      variant_error(solution, i, "when", error.what());
    }
    const auto knobs = entry.find("knobs");
    if (knobs == entry.end()) variant_error(solution, i, "knobs", "missing");
    std::map<std::string, int64_t> parsed;
    if (const auto error = parse_knobs(OrderedJson{{"knobs", *knobs}}, parsed))
      variant_error(solution, i, "knobs", *error);
    variant.knobs = *knobs;
    if (const auto point = entry.find("point"); point != entry.end()) {
      if (!point->is_string()) variant_error(solution, i, "point", "expected a string");
      variant.point = point->get<std::string>();
    }
    variants.push_back(std::move(variant));
  }
  return variants;
}

std::optional<std::size_t> select_variant(const Solution& solution,
                                          const std::vector<SolutionVariant>& variants,
                                          const AxisValues& axes) {
  for (std::size_t i = 0; i < variants.size(); ++i) {
    try {
      if (evaluate_expr(variants[i].when, axes) != 0) return i;
    } catch (const ExprError& error) {
      variant_error(solution, i, "when", fmt::format("at {}: {}", format_axes(axes), error.what()));
    }
  }
  return std::nullopt;
}

Solution resolve_variant(const Solution& solution, const std::vector<SolutionVariant>& variants,
                         std::optional<std::size_t> chosen) {
  if (variants.empty()) return solution;
  Solution resolved = solution;
  resolved.ext.erase("variants");
  if (chosen) {
    const SolutionVariant& variant = variants.at(*chosen);
    resolved.ext["knobs"] = variant.knobs;
    if (resolved.ext.contains("template") && !variant.point.empty())
      resolved.ext["template"]["point"] = variant.point;
  }
  return resolved;
}

Solution solution_for_workload(const Solution& solution, const Definition& definition,
                               const Workload& workload) {
  const auto variants = parse_variants(solution, definition);
  return resolve_variant(solution, variants,
                         select_variant(solution, variants, resolve_axes(definition, workload)));
}

Solution with_variants(Solution base, const std::vector<SolutionVariant>& variants) {
  OrderedJson list = OrderedJson::array();
  std::vector<std::string> conditions;
  for (const SolutionVariant& variant : variants) {
    OrderedJson entry = {{"when", variant.when}, {"knobs", variant.knobs}};
    if (!variant.point.empty()) entry["point"] = variant.point;
    list.push_back(std::move(entry));
    conditions.push_back(variant.when);
  }
  base.ext["variants"] = list;
  base.name += "__dispatch_" + content_hash(list.dump()).substr(0, 10);
  base.description +=
      fmt::format(" Dispatches by shape: {} variant(s) ({}), these knobs otherwise.",
                  variants.size(), fmt::join(conditions, "; "));
  return base;
}

}  // namespace kernelarc
