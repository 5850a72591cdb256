#include "synth/family_moe_reader.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "core/text.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

bool name_has(const TensorSpec& t, std::initializer_list<const char*> words) {
  const std::string name = to_lower(t.name);
  return std::any_of(words.begin(), words.end(),
                     [&](const char* word) { return name.find(word) != std::string::npos; });
}

}  // namespace

MoeReaderBase::MoeReaderBase(const Definition& def, MoeExperts& mlp, bool dense)
    : def_(def), known_(static_axes(def)), mlp_(mlp), lead_(dense ? 0 : 1) {}

std::string MoeReaderBase::field(const MoeTensor& t, const char* kind) const {
  return std::string(kind) + "." + t.spec->name;
}

int64_t MoeReaderBase::static_value(const MoeTensor& t, std::size_t dim, const char* what) const {
  const std::string& axis = shape(t)[dim];
  const auto it = known_.find(axis);
  if (it == known_.end())
    mismatch(def_, field(t), fmt::format("the {} ({}) must be a const or expr axis", what, axis));
  if (it->second <= 0)
    mismatch(def_, field(t), fmt::format("the {} ({}) must be positive", what, axis));
  return it->second;
}

void MoeReaderBase::require_float(const MoeTensor& t, const char* kind) const {
  if (!is_packed_float_dtype(t.spec->dtype))
    mismatch(
        def_, field(t, kind) + ".dtype",
        "expected float32, float16 or bfloat16, got " + std::string(dtype_name(t.spec->dtype)));
}

void MoeReaderBase::require_float_or_fp8(const MoeTensor& t) const {
  if (!fp8_allowed_ || t.spec->dtype != DType::Float8E4M3FN) require_float(t);
}

bool MoeReaderBase::boolean(const OrderedJson& value, const std::string& field) const {
  if (!value.is_boolean()) mismatch(def_, field, "expected true or false");
  return value.get<bool>();
}

int64_t MoeReaderBase::positive_int(const OrderedJson& value, const std::string& field) const {
  if (!value.is_number_integer() || value.get<int64_t>() < 1)
    mismatch(def_, field, "expected a positive integer, got " + value.dump());
  return value.get<int64_t>();
}

std::string MoeReaderBase::choice(const OrderedJson& value, const std::string& field,
                                  std::initializer_list<const char*> allowed) const {
  std::string expected;
  for (const char* name : allowed)
    expected += (expected.empty() ? "\"" : ", \"") + std::string(name) + "\"";
  if (value.is_string())
    for (const char* name : allowed)
      if (value.get<std::string>() == name) return name;
  mismatch(def_, field, "expected " + expected + ", got " + value.dump());
}

bool MoeReaderBase::is_weight(const TensorSpec& t) const {
  if (t.is_scalar() || t.shape->size() != static_cast<std::size_t>(lead_ + 2) || is_scale(t))
    return false;
  // A dense MLP's [T, H] hidden states are rank 2 as well.
  return &t != dense_hidden_;
}

namespace {

constexpr std::array<const char*, 4> kScaleSuffixes = {"_scale", "_scales", "_scale_inv", "_sf"};

/// Whether `scale` is named as the scales of `tensor`: its name with _scale, _scales, _scale_inv
/// (DeepSeek-V3's checkpoints) or _sf.
bool names_scales_of(const TensorSpec& scale, const TensorSpec& tensor) {
  if (&scale == &tensor) return false;
  return std::any_of(kScaleSuffixes.begin(), kScaleSuffixes.end(),
                     [&](const char* suffix) { return scale.name == tensor.name + suffix; });
}

}  // namespace

bool MoeReaderBase::is_scale(const TensorSpec& t) const {
  return std::any_of(def_.inputs.begin(), def_.inputs.end(),
                     [&](const TensorSpec& other) { return names_scales_of(t, other); });
}

MoeTensor MoeReaderBase::scale_of(const MoeTensor& t) const {
  for (std::size_t i = 0; i < def_.inputs.size(); ++i)
    if (names_scales_of(def_.inputs[i], *t.spec)) return {&def_.inputs[i], static_cast<int>(i)};
  return {};
}

void MoeReaderBase::read_weight_scales() {
  if (mlp_.w_down.spec->dtype != DType::Float8E4M3FN) return;
  const int64_t hidden = static_value(mlp_.w_down, lead_, "hidden size");
  if (hidden % kMoeScaleBlock != 0 || mlp_.inter % kMoeScaleBlock != 0)
    mismatch(def_, field(mlp_.w_down),
             fmt::format("float8 weights need the hidden size ({}) and the intermediate size ({}) "
                         "in whole {}-wide scale blocks",
                         hidden, mlp_.inter, kMoeScaleBlock));
  const auto read = [&](const MoeTensor& w, MoeTensor& scale) {
    scale = scale_of(w);
    if (!scale)
      mismatch(def_, field(w),
               "float8_e4m3fn weights need their float32 block scales, an input named " +
                   w.spec->name + "_scale (or _scale_inv), [E, out / 128, in / 128]");
    const int64_t out = static_value(w, lead_, "output rows"),
                  in = static_value(w, lead_ + 1, "input columns");
    const std::vector<std::string>& dims = shape(scale);
    const bool fits = dims.size() == shape(w).size() && dims[0] == experts_axis_ &&
                      static_value(scale, 1, "scale rows") == out / kMoeScaleBlock &&
                      static_value(scale, 2, "scale columns") == in / kMoeScaleBlock;
    if (!fits || scale.spec->dtype != DType::Float32)
      mismatch(def_, field(scale),
               fmt::format("expected float32 [{}, {}, {}]: one scale per 128x128 block of {}",
                           experts_axis_, out / kMoeScaleBlock, in / kMoeScaleBlock, w.spec->name));
  };
  for (auto [w, scale] : {std::pair{&mlp_.w13, &mlp_.s13}, std::pair{&mlp_.w_gate, &mlp_.s_gate},
                          std::pair{&mlp_.w_up, &mlp_.s_up}, std::pair{&mlp_.w_down, &mlp_.s_down}})
    if (*w) read(*w, *scale);
}

void MoeReaderBase::find_expert_weights() {
  for (std::size_t i = 0; i < def_.inputs.size(); ++i)
    if (is_weight(def_.inputs[i])) weights_.push_back({&def_.inputs[i], static_cast<int>(i)});
  if (weights_.size() != 2 && weights_.size() != 3)
    mismatch(def_, "inputs",
             lead_ == 1 ? fmt::format("expected the experts' weights as 2 tensors ([E, 2I, H] gate "
                                      "and up, [E, H, I] down) or 3 ([E, I, H] gate, up, [E, H, I] "
                                      "down), found {} of rank 3",
                                      weights_.size())
                        : fmt::format("expected the MLP's weights as 2 tensors ([2I, H] gate and "
                                      "up, [H, I] down) or 3 ([I, H] gate, up, [H, I] down) "
                                      "beside the hidden states, found {}",
                                      weights_.size()));
  if (lead_ == 1) experts_axis_ = shape(weights_[0])[0];
  for (const MoeTensor& w : weights_) {
    if (lead_ == 1 && shape(w)[0] != experts_axis_)
      mismatch(
          def_, field(w),
          "expected the experts axis " + experts_axis_ + " first, as in " + weights_[0].spec->name);
    require_float_or_fp8(w);
    if (w.spec->dtype != weights_[0].spec->dtype)
      mismatch(def_, field(w) + ".dtype",
               "expected the dtype of " + weights_[0].spec->name + ", " +
                   std::string(dtype_name(weights_[0].spec->dtype)));
  }
  mlp_.experts = lead_ == 1 ? static_value(weights_[0], 0, "expert count") : 1;
}

std::string MoeReaderBase::weight_shape(const std::string& out, const std::string& in) const {
  return "[" + (lead_ == 1 ? experts_axis_ + ", " : std::string()) + out + ", " + in + "]";
}

void MoeReaderBase::assign_expert_weights() {
  std::vector<MoeTensor> into_hidden, from_hidden;  // [(E,) H, *] and [(E,) *, H]
  const char* lead = lead_ == 1 ? "E, " : "";
  for (const MoeTensor& w : weights_) {
    const bool ends_hidden = shape(w)[lead_ + 1] == hidden_axis_;
    const bool starts_hidden = shape(w)[lead_] == hidden_axis_;
    if (!ends_hidden && !starts_hidden)
      mismatch(def_, field(w),
               fmt::format("expected [{}out, in] weights with the hidden size {} as in or out",
                           lead, hidden_axis_));
    if (starts_hidden && (!ends_hidden || name_has(*w.spec, {"down", "w2"})))
      into_hidden.push_back(w);
    else
      from_hidden.push_back(w);
  }
  if (into_hidden.size() != 1)
    mismatch(def_, "inputs",
             fmt::format("expected one down projection [{}H, I] (named down or w2 when I equals H)",
                         lead));
  mlp_.w_down = into_hidden[0];
  const std::string& inter_axis = shape(mlp_.w_down)[lead_ + 1];
  mlp_.inter = static_value(mlp_.w_down, lead_ + 1, "intermediate size");
  if (from_hidden.size() == 1) {
    mlp_.w13 = from_hidden[0];
    if (static_value(mlp_.w13, lead_, "gate and up rows") != 2 * mlp_.inter)
      mismatch(def_, field(mlp_.w13),
               fmt::format("expected [{}2 * {}, H]: the gate and up rows of {} each", lead,
                           inter_axis, mlp_.inter));
    return;
  }
  // Separate gate and up: the one named up (or w3) is up.
  const bool first_is_up = name_has(*from_hidden[0].spec, {"up", "w3"}) &&
                           !name_has(*from_hidden[0].spec, {"gate", "w1"});
  mlp_.w_gate = from_hidden[first_is_up ? 1 : 0];
  mlp_.w_up = from_hidden[first_is_up ? 0 : 1];
  for (const MoeTensor* w : {&mlp_.w_gate, &mlp_.w_up})
    if (shape(*w)[lead_] != inter_axis)
      mismatch(def_, field(*w), "expected " + weight_shape(inter_axis, hidden_axis_));
}

MoeTensor MoeReaderBase::read_output(const MoeTensor& hidden) const {
  if (def_.outputs.size() != 1) mismatch(def_, "outputs", "expected one output, [T, H]");
  const MoeTensor output{&def_.outputs[0], 0};
  if (output.spec->is_scalar() || shape(output) != shape(hidden))
    mismatch(def_, field(output, "outputs"),
             "expected the shape of " + hidden.spec->name + ", " + shape_text(shape(hidden)));
  if (hidden.spec->dtype == DType::Float8E4M3FN) {
    require_float(output, "outputs");
  } else if (output.spec->dtype != hidden.spec->dtype) {
    mismatch(def_, field(output, "outputs") + ".dtype",
             "expected the dtype of " + hidden.spec->name + ", " +
                 std::string(dtype_name(hidden.spec->dtype)));
  }
  return output;
}

bool MoeReaderBase::read_weight_param(const std::string& key, const OrderedJson& value) {
  const std::string field = "kernelarc.op_params." + key;
  if (key == "activation") {
    const std::string name = choice(value, field, {"silu", "gelu", "gelu_tanh"});
    mlp_.activation = name == "silu"   ? MoeActivation::Silu
                      : name == "gelu" ? MoeActivation::Gelu
                                       : MoeActivation::GeluTanh;
    return true;
  }
  if (key == "gate_up_order") {
    mlp_.up_first = choice(value, field, {"gate_up", "up_gate"}) == std::string("up_gate");
    return true;
  }
  return false;
}

void MoeReaderBase::check_weight_params() const {
  if (mlp_.up_first && !mlp_.w13)
    mismatch(def_, "kernelarc.op_params.gate_up_order",
             "applies to a fused gate-and-up weight only");
}

}  // namespace kernelarc
