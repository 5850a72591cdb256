#include "synth/family_moe_reader.h"

#include <algorithm>

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

MoeReaderBase::MoeReaderBase(const Definition& def, MoeExperts& mlp)
    : def_(def), known_(static_axes(def)), mlp_(mlp) {}

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

void MoeReaderBase::find_expert_weights() {
  for (std::size_t i = 0; i < def_.inputs.size(); ++i) {
    const TensorSpec& t = def_.inputs[i];
    if (!t.is_scalar() && t.shape->size() == 3) weights_.push_back({&t, static_cast<int>(i)});
  }
  if (weights_.size() != 2 && weights_.size() != 3)
    mismatch(def_, "inputs",
             fmt::format("expected the experts' weights as 2 tensors ([E, 2I, H] gate and up, "
                         "[E, H, I] down) or 3 ([E, I, H] gate, up, [E, H, I] down), found {} "
                         "of rank 3",
                         weights_.size()));
  experts_axis_ = shape(weights_[0])[0];
  for (const MoeTensor& w : weights_) {
    if (shape(w)[0] != experts_axis_)
      mismatch(
          def_, field(w),
          "expected the experts axis " + experts_axis_ + " first, as in " + weights_[0].spec->name);
    require_float(w);
    if (w.spec->dtype != weights_[0].spec->dtype)
      mismatch(def_, field(w) + ".dtype",
               "expected the dtype of " + weights_[0].spec->name + ", " +
                   std::string(dtype_name(weights_[0].spec->dtype)));
  }
  mlp_.experts = static_value(weights_[0], 0, "expert count");
}

void MoeReaderBase::assign_expert_weights() {
  std::vector<MoeTensor> into_hidden, from_hidden;  // [E, H, *] and [E, *, H]
  for (const MoeTensor& w : weights_) {
    const bool ends_hidden = shape(w)[2] == hidden_axis_;
    const bool starts_hidden = shape(w)[1] == hidden_axis_;
    if (!ends_hidden && !starts_hidden)
      mismatch(
          def_, field(w),
          "expected [E, out, in] weights with the hidden size " + hidden_axis_ + " as in or out");
    if (starts_hidden && (!ends_hidden || name_has(*w.spec, {"down", "w2"})))
      into_hidden.push_back(w);
    else
      from_hidden.push_back(w);
  }
  if (into_hidden.size() != 1)
    mismatch(def_, "inputs",
             "expected one down projection [E, H, I] (named down or w2 when I equals H)");
  mlp_.w_down = into_hidden[0];
  const std::string& inter_axis = shape(mlp_.w_down)[2];
  mlp_.inter = static_value(mlp_.w_down, 2, "intermediate size");
  if (from_hidden.size() == 1) {
    mlp_.w13 = from_hidden[0];
    if (static_value(mlp_.w13, 1, "gate and up rows") != 2 * mlp_.inter)
      mismatch(def_, field(mlp_.w13),
               fmt::format("expected [E, 2 * {}, H]: the gate and up rows of {} each", inter_axis,
                           mlp_.inter));
    return;
  }
  // Separate gate and up: the one named up (or w3) is up.
  const bool first_is_up = name_has(*from_hidden[0].spec, {"up", "w3"}) &&
                           !name_has(*from_hidden[0].spec, {"gate", "w1"});
  mlp_.w_gate = from_hidden[first_is_up ? 1 : 0];
  mlp_.w_up = from_hidden[first_is_up ? 0 : 1];
  for (const MoeTensor* w : {&mlp_.w_gate, &mlp_.w_up})
    if (shape(*w)[1] != inter_axis)
      mismatch(def_, field(*w),
               "expected [" + experts_axis_ + ", " + inter_axis + ", " + hidden_axis_ + "]");
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
