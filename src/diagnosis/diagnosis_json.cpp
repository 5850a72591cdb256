#include <fmt/format.h>

#include "core/error.h"
#include "core/json_fields.h"
#include "diagnosis/diagnosis.h"

namespace kernelarc {

namespace {

OrderedJson occupancy_to_json(const std::optional<OccupancyLimit>& limit) {
  if (!limit) return nullptr;
  return {{"kernel", limit->kernel},
          {"fraction", limit->fraction},
          {"limited_by", limit->limited_by},
          {"registers_per_thread", limit->registers_per_thread},
          {"threads_per_block", limit->threads_per_block},
          {"shared_bytes_per_block", limit->shared_bytes_per_block},
          {"time_share", optional_number(limit->time_share)}};
}

std::optional<OccupancyLimit> occupancy_from_json(const OrderedJson& json,
                                                  const std::string& where) {
  const std::string parent = "lowest_occupancy";
  if (json.is_null()) return std::nullopt;
  expect_object(json, where, parent);
  auto member = [&](std::string_view key) -> const OrderedJson& {
    return require_member(json, key, where, parent);
  };
  auto path = [&](std::string_view key) { return field_path(parent, key); };
  // Absent from diagnoses stored before kernel times were recorded, null when unrecorded.
  std::optional<double> time_share;
  if (const OrderedJson* share = find_member(json, "time_share"); share && !share->is_null()) {
    time_share = expect_number(*share, where, path("time_share"));
  }
  return OccupancyLimit{
      .kernel = expect_string(member("kernel"), where, path("kernel")),
      .fraction = expect_number(member("fraction"), where, path("fraction")),
      .limited_by = expect_string(member("limited_by"), where, path("limited_by")),
      .registers_per_thread = static_cast<int>(
          expect_int(member("registers_per_thread"), where, path("registers_per_thread"))),
      .threads_per_block = static_cast<int>(
          expect_int(member("threads_per_block"), where, path("threads_per_block"))),
      .shared_bytes_per_block =
          expect_int(member("shared_bytes_per_block"), where, path("shared_bytes_per_block")),
      .time_share = time_share};
}

}  // namespace

OrderedJson KnobSuggestion::to_json() const {
  return {{"knob", knob},
          {"direction", knob_direction_name(direction)},
          {"value", value ? OrderedJson(knob_value_to_json(*value)) : OrderedJson(nullptr)},
          {"reason", reason}};
}

KnobSuggestion KnobSuggestion::from_json(const OrderedJson& json, const std::string& where) {
  expect_object(json, where, "");
  auto member = [&](std::string_view key) -> const OrderedJson& {
    return require_member(json, key, where, "");
  };
  KnobSuggestion suggestion;
  suggestion.knob = expect_string(member("knob"), where, "knob");
  const std::string name = expect_string(member("direction"), where, "direction");
  const auto direction = knob_direction_from_name(name);
  if (!direction) {
    throw_input_error(where, "direction",
                      fmt::format("expected raise, lower or set, got \"{}\"", name));
  }
  suggestion.direction = *direction;
  const OrderedJson* value = find_member(json, "value");
  if (value != nullptr && value->is_number_integer()) {
    suggestion.value = KnobValue(value->get<int64_t>());
  } else if (value != nullptr && value->is_string()) {
    suggestion.value = KnobValue(value->get<std::string>());
  } else if (value != nullptr && !value->is_null()) {
    throw_input_error(
        where, "value",
        fmt::format("expected an integer, a label or null, got {}", describe_json(*value)));
  }
  if (suggestion.value.has_value() != (suggestion.direction == KnobDirection::Set)) {
    throw_input_error(where, "value",
                      suggestion.value ? "only a \"set\" suggestion has a value"
                                       : "a \"set\" suggestion needs a value");
  }
  suggestion.reason = expect_string(member("reason"), where, "reason");
  return suggestion;
}

OrderedJson suggestions_to_json(const std::vector<KnobSuggestion>& suggestions) {
  OrderedJson json = OrderedJson::array();
  for (const KnobSuggestion& suggestion : suggestions) json.push_back(suggestion.to_json());
  return json;
}

std::vector<KnobSuggestion> suggestions_from_json(const OrderedJson& json,
                                                  const std::string& where) {
  if (!json.is_array()) {
    throw_input_error(where, "suggestions",
                      fmt::format("expected an array, got {}", describe_json(json)));
  }
  std::vector<KnobSuggestion> suggestions;
  for (std::size_t i = 0; i < json.size(); ++i)
    suggestions.push_back(KnobSuggestion::from_json(
        json[i], fmt::format("{}: {}", where, field_index("suggestions", i))));
  return suggestions;
}

OrderedJson Diagnosis::to_json() const {
  return {{"bottleneck", bottleneck_name(bottleneck)},
          {"cause", cause},
          {"reason", reason},
          {"hints", hints},
          {"suggestions", suggestions_to_json(suggestions)},
          {"gpu", gpu},
          {"median_us", optional_number(median_us)},
          {"bytes", bytes},
          {"flops", flops},
          {"achieved_gbs", optional_number(achieved_gbs)},
          {"bandwidth_fraction", optional_number(bandwidth_fraction)},
          {"achieved_tflops", optional_number(achieved_tflops)},
          {"compute_fraction", optional_number(compute_fraction)},
          {"compute_peak", compute_peak},
          {"sol_us", optional_number(sol_us)},
          {"kernels_per_call", kernels_per_call},
          {"max_blocks", max_blocks},
          {"lowest_occupancy", occupancy_to_json(lowest_occupancy)},
          {"max_local_bytes_per_thread", max_local_bytes_per_thread},
          {"launch_share", optional_number(launch_share)},
          {"launch_share_estimated", launch_share_estimated},
          {"kernels", kernels}};
}

Diagnosis Diagnosis::from_json(const OrderedJson& json, const std::string& where) {
  expect_object(json, where, "");
  auto member = [&](std::string_view key) -> const OrderedJson& {
    return require_member(json, key, where, "");
  };
  Diagnosis d;
  const std::string name = expect_string(member("bottleneck"), where, "bottleneck");
  const auto bottleneck = bottleneck_from_name(name);
  if (!bottleneck) {
    throw_input_error(where, "bottleneck",
                      fmt::format("expected memory, compute, latency, launch or unknown, got "
                                  "\"{}\"",
                                  name));
  }
  d.bottleneck = *bottleneck;
  d.cause = expect_string(member("cause"), where, "cause");
  d.reason = expect_string(member("reason"), where, "reason");
  d.hints = expect_string_list(member("hints"), where, "hints");
  if (const OrderedJson* suggestions = find_member(json, "suggestions"))
    d.suggestions = suggestions_from_json(*suggestions, where);
  d.gpu = expect_bool(member("gpu"), where, "gpu");
  d.median_us = read_optional_number(json, "median_us", where);
  d.bytes = expect_number(member("bytes"), where, "bytes");
  d.flops = expect_number(member("flops"), where, "flops");
  d.achieved_gbs = read_optional_number(json, "achieved_gbs", where);
  d.bandwidth_fraction = read_optional_number(json, "bandwidth_fraction", where);
  d.achieved_tflops = read_optional_number(json, "achieved_tflops", where);
  d.compute_fraction = read_optional_number(json, "compute_fraction", where);
  d.compute_peak = expect_string(member("compute_peak"), where, "compute_peak");
  d.sol_us = read_optional_number(json, "sol_us", where);
  d.kernels_per_call =
      static_cast<int>(expect_int(member("kernels_per_call"), where, "kernels_per_call"));
  d.max_blocks = expect_int(member("max_blocks"), where, "max_blocks");
  d.lowest_occupancy = occupancy_from_json(member("lowest_occupancy"), where);
  d.max_local_bytes_per_thread =
      expect_int(member("max_local_bytes_per_thread"), where, "max_local_bytes_per_thread");
  d.launch_share = read_optional_number(json, "launch_share", where);
  d.launch_share_estimated =
      expect_bool(member("launch_share_estimated"), where, "launch_share_estimated");
  if (const OrderedJson* kernels = find_member(json, "kernels"))  // absent before it existed
    d.kernels = expect_string(*kernels, where, "kernels");
  return d;
}

}  // namespace kernelarc
