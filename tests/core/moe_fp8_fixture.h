// An expert-parallel FP8 block-scaled mixture-of-experts layer in miniature, in FlashInfer-Bench's
// form, for the tests of its binding and its recognition: 16 routed experts of which the call
// holds 4 (from the local_expert_offset input), hidden 256 and intermediate 128 (2 and 1 scale
// blocks), e4m3 bytes with float32 scales, the hidden states' scales block-major [H / 128, T],
// the routing weights' factor an input.
#pragma once

#include <string>

#include "core/problem.h"

namespace kernelarc::testing {

inline OrderedJson moe_fp8_tensor(const std::vector<std::string>& shape,
                                  const std::string& dtype = "float32") {
  return {{"shape", shape}, {"dtype", dtype}};
}

inline OrderedJson moe_fp8_inputs() {
  const auto& t = moe_fp8_tensor;
  return {{"routing_logits", t({"T", "E"}, "float32")},
          {"routing_bias", t({"E"}, "bfloat16")},
          {"hidden_states", t({"T", "H"}, "float8_e4m3fn")},
          {"hidden_states_scale", t({"HB", "T"}, "float32")},
          {"gemm1_weights", t({"L", "I2", "H"}, "float8_e4m3fn")},
          {"gemm1_weights_scale", t({"L", "I2B", "HB"}, "float32")},
          {"gemm2_weights", t({"L", "H", "I"}, "float8_e4m3fn")},
          {"gemm2_weights_scale", t({"L", "HB", "IB"}, "float32")},
          {"local_expert_offset", {{"shape", nullptr}, {"dtype", "int32"}}},
          {"routed_scaling_factor", {{"shape", nullptr}, {"dtype", "float32"}}}};
}

/// The definition's JSON with `inputs`, a reference (a stub calling run with the inputs when
/// empty) and, unless null, a kernelarc block of the moe family with `op_params`.
inline OrderedJson moe_fp8_json(const std::string& name, const OrderedJson& inputs,
                                const std::string& reference, const OrderedJson& op_params) {
  std::string parameters;
  for (const auto& [input, spec] : inputs.items())
    parameters += (parameters.empty() ? "" : ", ") + input;
  const auto constant = [](int value) { return OrderedJson{{"type", "const"}, {"value", value}}; };
  OrderedJson json = {
      {"name", name},
      {"op_type", "moe"},
      {"axes",
       {{"T", {{"type", "var"}}},
        {"E", constant(16)},
        {"L", constant(4)},
        {"H", constant(256)},
        {"I", constant(128)},
        {"I2", constant(256)},
        {"HB", constant(2)},
        {"IB", constant(1)},
        {"I2B", constant(2)}}},
      {"inputs", inputs},
      {"outputs", {{"output", moe_fp8_tensor({"T", "H"}, "bfloat16")}}},
      {"reference", reference.empty() ? "def run(" + parameters + "):\n    pass\n" : reference}};
  if (!op_params.is_null()) json["kernelarc"] = {{"op_family", "moe"}, {"op_params", op_params}};
  return json;
}

}  // namespace kernelarc::testing
