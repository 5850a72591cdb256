#include "lower/simplify_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/expr.h"
#include "lower/simplify_index.h"

namespace kernelarc {
namespace {

using Json = OrderedJson;

AxisFacts axis_facts(const Definition& definition) {
  AxisFacts facts;
  for (const auto& axis : definition.axes) {
    if (axis.kind == AxisKind::Const) facts.constant_axes[axis.name] = axis.value;
    if (axis.kind == AxisKind::Var) facts.var_axes.insert(axis.name);
  }
  // An expr axis of const axes only (half = head_dim // 2) is a constant too; one that names a
  // var axis keeps the SIZEs that mention it opaque.
  for (bool progress = true; progress;) {
    progress = false;
    for (const auto& axis : definition.axes) {
      if (axis.kind != AxisKind::Expr || facts.constant_axes.contains(axis.name)) continue;
      try {
        facts.constant_axes[axis.name] = evaluate_expr(axis.expression, facts.constant_axes);
        progress = true;
      } catch (const ExprError&) {
        continue;  // names a var axis (or an expr axis not known yet)
      }
    }
  }
  return facts;
}

std::string size_text(const Json& size) {
  return size.is_string() ? size.get<std::string>() : size.dump();
}

/// The kernel's index space, one SIZE per ["idx", d].
std::vector<std::string> index_extents(const Json& kernel) {
  std::vector<std::string> extents;
  const auto append = [&](const char* field) {
    if (!kernel.contains(field)) return;
    const Json& sizes = kernel[field];
    if (sizes.is_array()) {
      for (const auto& size : sizes) extents.push_back(size_text(size));
    } else {
      extents.push_back(size_text(sizes));
    }
  };
  if (kernel.value("kind", "") == "matmul") {
    for (const char* field : {"batch", "m", "n", "k"}) append(field);
  } else {
    for (const char* field : {"domain", "reduce"}) append(field);
  }
  return extents;
}

bool is_comparison(const std::string& name) {
  return name == "lt" || name == "le" || name == "gt" || name == "ge" || name == "eq" ||
         name == "ne";
}

std::optional<int64_t> literal_int(const Json& e) {
  if (e.is_array() && e.size() == 2 && e[0] == "i" && e[1].is_number_integer())
    return e[1].get<int64_t>();
  return std::nullopt;
}

std::optional<int64_t> literal_stride(const Json& stride) {
  if (!stride.is_string()) return std::nullopt;
  return constant_expr_value(stride.get_ref<const std::string&>());
}

/// e // c and its stride, or e // c % d: the high part of a split position.
struct HighPart {
  Json e;
  int64_t c = 0;
  std::optional<int64_t> d;
};

std::optional<HighPart> high_part(const Json& coord) {
  if (!coord.is_array() || coord.size() != 3) return std::nullopt;
  if (coord[0] == "floordiv") {
    if (const auto c = literal_int(coord[2]); c && *c > 0) return HighPart{coord[1], *c, {}};
  } else if (coord[0] == "mod") {
    const auto d = literal_int(coord[2]);
    if (d && *d > 0)
      if (auto inner = high_part(coord[1]); inner && !inner->d) {
        inner->d = d;
        return inner;
      }
  }
  return std::nullopt;
}

/// Where a view split a flat position into coords and the access puts them back together
/// (`e // c` at stride c * s beside `e % c` at stride s is `e` at stride s; `e // c % d` is
/// `e % (c * d)`), the pair becomes one coord: a matmul whose output is stored through a reshape
/// (a convolution's spatial positions) is then a plain strided destination that a library can
/// write. Integer expressions of nonnegative e only (index dims), literal sizes only.
void merge_split_coords(Json& access) {
  Json& coords = access["coords"];
  Json& strides = access["strides"];
  for (bool merged = true; merged;) {
    merged = false;
    for (std::size_t hi = 0; hi < coords.size() && !merged; ++hi) {
      const auto high = high_part(coords[hi]);
      const auto high_stride = literal_stride(strides[hi]);
      if (!high || !high_stride) continue;
      for (std::size_t lo = 0; lo < coords.size() && !merged; ++lo) {
        const Json& low = coords[lo];
        const auto low_stride = literal_stride(strides[lo]);
        if (lo == hi || !low_stride || *high_stride != high->c * *low_stride) continue;
        if (!(low.is_array() && low.size() == 3 && low[0] == "mod" && low[1] == high->e &&
              literal_int(low[2]) == high->c))
          continue;
        coords[lo] = high->d ? Json::array({"mod", high->e, Json::array({"i", high->c * *high->d})})
                             : high->e;
        coords.erase(hi);
        strides.erase(hi);
        merged = true;
      }
    }
  }
}

/// Simplifies the expressions of one kernel: integer arithmetic through IndexSimplifier, and
/// around it the rules that need no algebra (where with equal branches or a decided condition).
class KernelSimplifier {
 public:
  KernelSimplifier(const AxisFacts& facts, const Json& kernel,
                   const std::map<std::string, bool>& buffer_is_integer)
      : index_(facts, index_extents(kernel), [this](const Json& e) { return simplify(e); }) {
    if (kernel.contains("loads")) {
      for (const auto& [name, load] : kernel["loads"].items()) {
        const auto found = buffer_is_integer.find(load.value("buffer", ""));
        load_is_integer_[name] = found != buffer_is_integer.end() && found->second;
      }
    }
  }
  KernelSimplifier(const KernelSimplifier&) = delete;
  KernelSimplifier& operator=(const KernelSimplifier&) = delete;

  Json simplify(const Json& e) {
    if (!e.is_array() || e.empty() || !e[0].is_string()) return e;
    const std::string name = e[0].get<std::string>();
    if (IndexSimplifier::is_arithmetic(e) && is_integer(e)) return index_.simplify(e);
    if (name == "f" || name == "i" || name == "size" || name == "idx" || name == "load" ||
        name == "stage" || name == "acc" || name == "scan" || name == "topk_value" ||
        name == "topk_index") {
      return e;
    }
    Json result = Json::array({name});
    const std::size_t first_operand = name == "cast" ? 2 : 1;
    for (std::size_t i = 1; i < e.size(); ++i) {
      result.push_back(i < first_operand ? e[i] : simplify(e[i]));
    }
    if (name == "where" && result.size() == 4) return simplified_where(result);
    if (is_comparison(name) && result.size() == 3 && is_integer(result[1]) &&
        is_integer(result[2])) {
      if (const auto decided = index_.compare(name, result[1], result[2])) {
        return Json::array({"i", *decided ? 1 : 0});
      }
    }
    return result;
  }

  Json access(Json access) {
    if (access.contains("coords")) {
      for (auto& coord : access["coords"]) coord = simplify(coord);
      merge_split_coords(access);
    }
    if (access.contains("value")) access["value"] = simplify(access["value"]);
    return access;
  }

 private:
  /// The EXPR typing of docs/RECOGNITION.md §2 (int64 or float), erring to float where unsure
  /// (a stage, the scan value): float arithmetic is never rewritten.
  bool is_integer(const Json& e) const {
    if (!e.is_array() || e.empty() || !e[0].is_string()) return false;
    const auto& name = e[0].get_ref<const std::string&>();
    if (name == "i" || name == "size" || name == "idx" || name == "int" || is_comparison(name) ||
        name == "and" || name == "or" || name == "not" || name == "isnan" || name == "isinf" ||
        name == "isfinite") {
      return true;
    }
    if (name == "load") {
      const auto found = load_is_integer_.find(e.at(1).get<std::string>());
      return found != load_is_integer_.end() && found->second;
    }
    if (name == "cast") {
      const auto dtype = dtype_from_name(e.at(1).get<std::string>());
      return dtype && !dtype_is_floating(*dtype);
    }
    if (name == "where") return e.size() == 4 && is_integer(e[2]) && is_integer(e[3]);
    if (name == "add" || name == "sub" || name == "mul" || name == "neg" || name == "abs" ||
        name == "min" || name == "max" || name == "pow" || name == "fmod" || name == "floordiv" ||
        name == "mod") {
      for (std::size_t i = 1; i < e.size(); ++i) {
        if (!is_integer(e[i])) return false;
      }
      return e.size() > 1;
    }
    return false;
  }

  Json simplified_where(const Json& where) const {
    if (where[2] == where[3]) return where[2];
    const Json& condition = where[1];
    if (condition.size() != 2 || condition[0] != "i") return where;
    const Json& taken = condition[1].get<int64_t>() != 0 ? where[2] : where[3];
    // A where of an int and a float branch is a float: the int branch taken keeps that type.
    if (is_integer(taken) && !is_integer(where)) return Json::array({"float", taken});
    return taken;
  }

  IndexSimplifier index_;
  std::map<std::string, bool> load_is_integer_;
};

void collect_loads(const Json& json, std::set<std::string>& names) {
  if (json.is_array() && json.size() == 2 && json[0] == "load" && json[1].is_string()) {
    names.insert(json[1].get<std::string>());
  }
  if (json.is_array() || json.is_object()) {
    for (const auto& item : json) collect_loads(item, names);
  }
}

/// Removes the loads no expression reads any more (the branch of a where that was decided), so
/// that a generated kernel does not fetch them.
void drop_unread_loads(Json& kernel) {
  if (!kernel.contains("loads")) return;
  std::set<std::string> read;
  for (const auto& [field, value] : kernel.items()) {
    if (field != "loads") collect_loads(value, read);
  }
  // A gather's coord reads another load.
  for (std::size_t known = 0; known != read.size();) {
    known = read.size();
    for (const auto& name : std::set<std::string>(read)) {
      if (kernel["loads"].contains(name)) collect_loads(kernel["loads"][name], read);
    }
  }
  Json kept = Json::object();
  for (const auto& [name, load] : kernel["loads"].items()) {
    if (read.contains(name)) kept[name] = load;
  }
  kernel["loads"] = std::move(kept);
}

}  // namespace

Json simplify_plan(const Json& plan, const Definition& definition) {
  const AxisFacts facts = axis_facts(definition);
  std::map<std::string, bool> buffer_is_integer;
  for (const auto& buffer : plan.at("buffers")) {
    const auto dtype = dtype_from_name(buffer.value("dtype", ""));
    buffer_is_integer[buffer.value("name", "")] = dtype && !dtype_is_floating(*dtype);
  }
  Json result = plan;
  for (auto& kernel : result.at("kernels")) {
    KernelSimplifier simplifier(facts, kernel, buffer_is_integer);
    if (kernel.contains("loads")) {
      for (auto& load : kernel["loads"]) load = simplifier.access(load);
    }
    for (const char* operand : {"a", "b"}) {
      if (kernel.contains(operand)) kernel[operand] = simplifier.access(kernel[operand]);
    }
    if (kernel.contains("stores")) {
      for (auto& store : kernel["stores"]) store = simplifier.access(store);
    }
    if (kernel.contains("stages")) {
      for (auto& stage : kernel["stages"]) stage["value"] = simplifier.simplify(stage["value"]);
    }
    if (kernel.contains("value")) kernel["value"] = simplifier.simplify(kernel["value"]);
    drop_unread_loads(kernel);
  }
  return result;
}

}  // namespace kernelarc
