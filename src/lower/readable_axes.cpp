#include "lower/readable_axes.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lower/sym_size.h"

namespace kernelarc {
namespace {

using Json = OrderedJson;

/// The axes some tensor shape of the definition names.
std::set<std::string> shape_axes(const Definition& definition) {
  std::set<std::string> names;
  for (const auto* tensors : {&definition.inputs, &definition.outputs})
    for (const TensorSpec& tensor : *tensors)
      if (tensor.shape) names.insert(tensor.shape->begin(), tensor.shape->end());
  return names;
}

class AxisNamer {
 public:
  explicit AxisNamer(const Definition& definition) {
    const std::set<std::string> named = shape_axes(definition);
    for (const Axis& axis : definition.axes)
      if (axis.kind == AxisKind::Var && !named.contains(axis.name)) unread_.insert(axis.name);
    // Expr axes a shape names whose expression is a monomial with an unread factor, the
    // largest first, so that batch_size*seq_len*k is taken whole before batch_size*seq_len.
    for (const Axis& axis : definition.axes) {
      if (axis.kind != AxisKind::Expr || !named.contains(axis.name)) continue;
      const SymSize product = SymSize::parse(axis.expression);
      if (!product.is_monomial() || product.coefficient() != 1 || !reads_unread(product)) continue;
      products_.emplace_back(product, SymSize::axis(axis.name));
    }
    std::stable_sort(products_.begin(), products_.end(), [](const auto& a, const auto& b) {
      return a.first.factors().size() > b.first.factors().size();
    });
  }

  bool active() const { return !products_.empty(); }

  std::string size(const std::string& text) const {
    SymSize size = SymSize::parse(text);
    if (!size.is_monomial() || !reads_unread(size)) return text;
    for (const auto& [product, axis] : products_) {
      while (const auto rest = size.divided_by(product)) size = *rest * axis;
    }
    return size.text();
  }

  /// Rewrites the SIZEs in `json`: the fields that hold one or a list, and ["size", SIZE].
  void rewrite(Json& json) const {
    if (json.is_array()) {
      if (json.size() == 2 && json[0] == "size" && json[1].is_string()) {
        json[1] = size(json[1].get<std::string>());
        return;
      }
      for (Json& item : json) rewrite(item);
      return;
    }
    if (!json.is_object()) return;
    static const std::set<std::string> size_fields = {"offset", "elements", "m", "n", "k"};
    static const std::set<std::string> size_lists = {"domain", "reduce", "batch", "strides"};
    for (auto item : json.items()) {
      const std::string& key = item.key();
      Json& value = item.value();
      if (value.is_string() && size_fields.contains(key)) {
        value = size(value.get<std::string>());
      } else if (value.is_array() && size_lists.contains(key)) {
        for (Json& item : value)
          if (item.is_string()) item = size(item.get<std::string>());
      } else {
        rewrite(value);
      }
    }
  }

 private:
  bool reads_unread(const SymSize& size) const {
    return std::any_of(size.factors().begin(), size.factors().end(),
                       [&](const auto& factor) { return unread_.contains(factor.first); });
  }

  std::set<std::string> unread_;
  std::vector<std::pair<SymSize, SymSize>> products_;
};

}  // namespace

OrderedJson name_readable_axes(const OrderedJson& plan, const Definition& definition) {
  const AxisNamer namer(definition);
  if (!namer.active()) return plan;
  Json result = plan;
  namer.rewrite(result);
  return result;
}

}  // namespace kernelarc
