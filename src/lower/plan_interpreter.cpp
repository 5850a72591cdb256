#include "lower/plan_interpreter.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include <fmt/format.h>

#include "core/dtype.h"
#include "core/error.h"

namespace kernelarc {
namespace {

using Json = OrderedJson;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

[[noreturn]] void malformed(const std::string& what) {
  throw InputError("kernel plan: " + what);
}

DType dtype_named(const Json& name) {
  const auto text = name.get<std::string>();
  const auto dtype = dtype_from_name(text);
  if (!dtype) malformed("unknown dtype \"" + text + "\"");
  return *dtype;
}

double round_to(DType dtype, double value) {
  if (dtype == DType::Float64) return value;
  if (dtype == DType::Float32) return static_cast<float>(value);
  if (!dtype_is_floating(dtype) && std::isnan(value)) return value;  // unwritten stays visible
  unsigned char bytes[8] = {};
  store_element(dtype, bytes, value);
  return load_element(dtype, bytes);
}

struct Buffer {
  DType dtype = DType::Float32;
  std::vector<double> data;
};

/// The per-kernel state expressions read: the current point, stage results, acc, scan and the
/// selected element of a topk row.
struct State {
  std::vector<int64_t> index;
  std::vector<double> stages;
  double acc = 0, scan = 0, topk_value = 0, topk_index = 0;
};

struct Access;

/// An EXPR compiled once per kernel: names resolved to slots, sizes evaluated.
struct Node {
  enum class Kind {
    Constant,
    Index,
    Load,
    Stage,
    Acc,
    Scan,
    TopkValue,
    TopkIndex,
    Cast,
    Trunc,
    Where,
    Unary,
    Binary
  };
  Kind kind = Kind::Constant;
  double value = 0;
  std::size_t slot = 0;
  DType dtype = DType::Float32;
  double (*unary)(double) = nullptr;
  double (*binary)(double, double) = nullptr;
  std::vector<Node> args;
};

/// A LOAD or STORE: buffer, offset and strides evaluated, coords compiled.
struct Access {
  std::string name;
  Buffer* buffer = nullptr;
  int64_t offset = 0;
  std::vector<int64_t> strides;
  std::vector<Node> coords;
  Node value;  ///< stores only
};

double eval(const Node& node, State& state, const std::vector<Access>& loads);

int64_t position(const Access& access, State& state, const std::vector<Access>& loads) {
  int64_t at = access.offset;
  for (std::size_t j = 0; j < access.strides.size(); ++j) {
    at += access.strides[j] * static_cast<int64_t>(eval(access.coords[j], state, loads));
  }
  if (at < 0 || at >= static_cast<int64_t>(access.buffer->data.size())) {
    throw InputError(
        fmt::format("kernel plan: access to buffer \"{}\" out of range: element {} of {}",
                    access.name, at, access.buffer->data.size()));
  }
  return at;
}

double read(const Access& access, State& state, const std::vector<Access>& loads) {
  return access.buffer->data[static_cast<std::size_t>(position(access, state, loads))];
}

void write(const Access& access, State& state, const std::vector<Access>& loads) {
  const auto at = static_cast<std::size_t>(position(access, state, loads));
  access.buffer->data[at] = round_to(access.buffer->dtype, eval(access.value, state, loads));
}

double eval(const Node& node, State& state, const std::vector<Access>& loads) {
  switch (node.kind) {
    case Node::Kind::Constant:
      return node.value;
    case Node::Kind::Index:
      return static_cast<double>(state.index[node.slot]);
    case Node::Kind::Load:
      return read(loads[node.slot], state, loads);
    case Node::Kind::Stage:
      return state.stages[node.slot];
    case Node::Kind::Acc:
      return state.acc;
    case Node::Kind::Scan:
      return state.scan;
    case Node::Kind::TopkValue:
      return state.topk_value;
    case Node::Kind::TopkIndex:
      return state.topk_index;
    case Node::Kind::Cast:
      return round_to(node.dtype, eval(node.args[0], state, loads));
    case Node::Kind::Trunc:
      return std::trunc(eval(node.args[0], state, loads));
    case Node::Kind::Where:
      return eval(node.args[0], state, loads) != 0 ? eval(node.args[1], state, loads)
                                                   : eval(node.args[2], state, loads);
    case Node::Kind::Unary:
      return node.unary(eval(node.args[0], state, loads));
    case Node::Kind::Binary:
      return node.binary(eval(node.args[0], state, loads), eval(node.args[1], state, loads));
  }
  return kNaN;
}

int64_t floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}
double gelu(double x) {
  return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2));
}
double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

const std::map<std::string, double (*)(double), std::less<>>& unary_functions() {
  static const std::map<std::string, double (*)(double), std::less<>> functions = {
      {"neg", [](double x) { return -x; }},
      {"abs", [](double x) { return std::fabs(x); }},
      {"exp", [](double x) { return std::exp(x); }},
      {"exp2", [](double x) { return std::exp2(x); }},
      {"expm1", [](double x) { return std::expm1(x); }},
      {"log", [](double x) { return std::log(x); }},
      {"log2", [](double x) { return std::log2(x); }},
      {"log10", [](double x) { return std::log10(x); }},
      {"log1p", [](double x) { return std::log1p(x); }},
      {"sqrt", [](double x) { return std::sqrt(x); }},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
      {"reciprocal", [](double x) { return 1 / x; }},
      {"sin", [](double x) { return std::sin(x); }},
      {"cos", [](double x) { return std::cos(x); }},
      {"tan", [](double x) { return std::tan(x); }},
      {"asin", [](double x) { return std::asin(x); }},
      {"acos", [](double x) { return std::acos(x); }},
      {"atan", [](double x) { return std::atan(x); }},
      {"sinh", [](double x) { return std::sinh(x); }},
      {"cosh", [](double x) { return std::cosh(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"asinh", [](double x) { return std::asinh(x); }},
      {"acosh", [](double x) { return std::acosh(x); }},
      {"atanh", [](double x) { return std::atanh(x); }},
      {"erf", [](double x) { return std::erf(x); }},
      {"erfc", [](double x) { return std::erfc(x); }},
      {"sigmoid", sigmoid},
      {"relu", [](double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }},
      {"silu", [](double x) { return x * sigmoid(x); }},
      {"gelu", gelu},
      {"gelu_tanh", gelu_tanh},
      {"softplus", [](double x) { return std::log1p(std::exp(x)); }},
      {"floor", [](double x) { return std::floor(x); }},
      {"ceil", [](double x) { return std::ceil(x); }},
      {"round", [](double x) { return std::nearbyint(x); }},
      {"trunc", [](double x) { return std::trunc(x); }},
      {"sign", [](double x) { return std::isnan(x) ? x : static_cast<double>((x > 0) - (x < 0)); }},
      {"not", [](double x) { return x == 0 ? 1.0 : 0.0; }},
      {"isnan", [](double x) { return std::isnan(x) ? 1.0 : 0.0; }},
      {"isinf", [](double x) { return std::isinf(x) ? 1.0 : 0.0; }},
      {"isfinite", [](double x) { return std::isfinite(x) ? 1.0 : 0.0; }},
      {"float", [](double x) { return x; }},
  };
  return functions;
}

const std::map<std::string, double (*)(double, double), std::less<>>& binary_functions() {
  static const std::map<std::string, double (*)(double, double), std::less<>> functions = {
      {"add", [](double a, double b) { return a + b; }},
      {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},
      {"div", [](double a, double b) { return a / b; }},
      {"pow", [](double a, double b) { return std::pow(a, b); }},
      {"max",
       [](double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }},
      {"min",
       [](double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }},
      {"fmod", [](double a, double b) { return std::fmod(a, b); }},
      {"atan2", [](double a, double b) { return std::atan2(a, b); }},
      {"floordiv",
       [](double a, double b) {
         return static_cast<double>(floordiv(static_cast<int64_t>(a), static_cast<int64_t>(b)));
       }},
      {"mod",
       [](double a, double b) {
         const auto x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
         return static_cast<double>(x - floordiv(x, y) * y);
       }},
      {"lt", [](double a, double b) { return a < b ? 1.0 : 0.0; }},
      {"le", [](double a, double b) { return a <= b ? 1.0 : 0.0; }},
      {"gt", [](double a, double b) { return a > b ? 1.0 : 0.0; }},
      {"ge", [](double a, double b) { return a >= b ? 1.0 : 0.0; }},
      {"eq", [](double a, double b) { return a == b ? 1.0 : 0.0; }},
      {"ne", [](double a, double b) { return a != b ? 1.0 : 0.0; }},
      {"and", [](double a, double b) { return (a != 0) && (b != 0) ? 1.0 : 0.0; }},
      {"or", [](double a, double b) { return (a != 0) || (b != 0) ? 1.0 : 0.0; }},
  };
  return functions;
}

int64_t size_of(const Json& size, const AxisValues& axes) {
  if (!size.is_string()) malformed("a SIZE must be a string, got " + size.dump());
  return evaluate_expr(size.get<std::string>(), axes);
}

std::vector<int64_t> sizes(const Json& list, const AxisValues& axes) {
  std::vector<int64_t> result;
  for (const auto& size : list) result.push_back(size_of(size, axes));
  return result;
}

/// Compiles one kernel's expressions against its loads and stages.
class Compiler {
 public:
  Compiler(const AxisValues& axes, std::map<std::string, Buffer>& buffers, const Json& kernel)
      : axes_(axes), buffers_(buffers) {
    if (kernel.contains("stages")) {
      for (const auto& stage : kernel["stages"]) {
        stage_slots_[stage["name"].get<std::string>()] = stage_slots_.size();
      }
    }
    if (kernel.contains("loads")) {
      // Every slot first: a gather's coord may read a load listed after it.
      for (const auto& [name, spec] : kernel["loads"].items()) {
        load_slots_[name] = load_slots_.size();
      }
      for (const auto& [name, spec] : kernel["loads"].items()) loads.push_back(access(spec, false));
    }
  }

  Node expr(const Json& e) {
    if (!e.is_array() || e.empty() || !e[0].is_string()) malformed("bad expression " + e.dump());
    const std::string name = e[0].get<std::string>();
    Node node;
    const auto arg_count = [&](std::size_t count) {
      if (e.size() != count + 1) malformed(fmt::format("\"{}\" takes {} operands", name, count));
    };
    if (name == "f") {
      arg_count(1);
      if (e[1].is_string()) {
        const auto text = e[1].get<std::string>();
        node.value = text == "nan"    ? kNaN
                     : text == "inf"  ? INFINITY
                     : text == "-inf" ? -INFINITY
                                      : (malformed("bad float literal " + e.dump()), 0.0);
      } else {
        node.value = e[1].get<double>();
      }
      return node;
    }
    if (name == "i") {
      arg_count(1);
      node.value = static_cast<double>(e[1].get<int64_t>());
      return node;
    }
    if (name == "size") {
      arg_count(1);
      node.value = static_cast<double>(size_of(e[1], axes_));
      return node;
    }
    if (name == "idx") {
      arg_count(1);
      node.kind = Node::Kind::Index;
      node.slot = e[1].get<std::size_t>();
      return node;
    }
    if (name == "load" || name == "stage") {
      arg_count(1);
      const auto& slots = name == "load" ? load_slots_ : stage_slots_;
      const auto found = slots.find(e[1].get<std::string>());
      if (found == slots.end()) malformed(fmt::format("unknown {} {}", name, e[1].dump()));
      node.kind = name == "load" ? Node::Kind::Load : Node::Kind::Stage;
      node.slot = found->second;
      return node;
    }
    if (name == "acc" || name == "scan") {
      node.kind = name == "acc" ? Node::Kind::Acc : Node::Kind::Scan;
      return node;
    }
    if (name == "topk_value" || name == "topk_index") {
      node.kind = name == "topk_value" ? Node::Kind::TopkValue : Node::Kind::TopkIndex;
      return node;
    }
    if (name == "cast") {
      arg_count(2);
      node.kind = Node::Kind::Cast;
      node.dtype = dtype_named(e[1]);
      node.args.push_back(expr(e[2]));
      return node;
    }
    for (std::size_t i = 1; i < e.size(); ++i) node.args.push_back(expr(e[i]));
    if (name == "int") {
      arg_count(1);
      node.kind = Node::Kind::Trunc;
    } else if (name == "where") {
      arg_count(3);
      node.kind = Node::Kind::Where;
    } else if (const auto unary = unary_functions().find(name); unary != unary_functions().end()) {
      arg_count(1);
      node.kind = Node::Kind::Unary;
      node.unary = unary->second;
    } else if (const auto binary = binary_functions().find(name);
               binary != binary_functions().end()) {
      arg_count(2);
      node.kind = Node::Kind::Binary;
      node.binary = binary->second;
    } else {
      malformed("unknown expression op \"" + name + "\"");
    }
    return node;
  }

  Access access(const Json& spec, bool is_store) {
    Access result;
    result.name = spec.at("buffer").get<std::string>();
    const auto found = buffers_.find(result.name);
    if (found == buffers_.end()) malformed("unknown buffer \"" + result.name + "\"");
    result.buffer = &found->second;
    result.offset = size_of(spec.at("offset"), axes_);
    result.strides = sizes(spec.at("strides"), axes_);
    for (const auto& coord : spec.at("coords")) result.coords.push_back(expr(coord));
    if (result.coords.size() != result.strides.size()) {
      malformed(fmt::format("an access to \"{}\" has {} strides and {} coords", result.name,
                            result.strides.size(), result.coords.size()));
    }
    if (is_store) result.value = expr(spec.at("value"));
    return result;
  }

  std::vector<Access> loads;

 private:
  const AxisValues& axes_;
  std::map<std::string, Buffer>& buffers_;
  std::map<std::string, std::size_t> stage_slots_, load_slots_;
};

/// Calls f(point) for every point of `shape`, row-major.
template <typename F>
void for_each_point(const std::vector<int64_t>& shape, F&& f) {
  for (const int64_t extent : shape) {
    if (extent <= 0) return;
  }
  std::vector<int64_t> point(shape.size(), 0);
  for (;;) {
    f(point);
    std::size_t d = shape.size();
    for (;;) {
      if (d == 0) return;
      --d;
      if (++point[d] < shape[d]) break;
      point[d] = 0;
    }
  }
}

struct CompiledKernel {
  std::vector<Access> loads;
  std::vector<Access> stores;
  std::vector<bool> store_full;                      ///< reduce: "full" rather than "keep"
  std::vector<std::pair<std::string, Node>> stages;  ///< reduce: op and value
  Node scanned;                                      ///< scan, topk: the value
  Access a, b;                                       ///< matmul operands
};

CompiledKernel compile(const Json& kernel, const AxisValues& axes,
                       std::map<std::string, Buffer>& buffers) {
  Compiler compiler(axes, buffers, kernel);
  CompiledKernel result;
  for (const auto& spec : kernel.at("stores")) {
    result.stores.push_back(compiler.access(spec, true));
    result.store_full.push_back(spec.contains("over") && spec["over"] == "full");
  }
  const std::string kind = kernel.at("kind");
  if (kind == "reduce") {
    for (const auto& stage : kernel.at("stages")) {
      result.stages.emplace_back(stage.at("op").get<std::string>(),
                                 compiler.expr(stage.at("value")));
    }
  } else if (kind == "scan" || kind == "topk") {
    result.scanned = compiler.expr(kernel.at("value"));
  } else if (kind == "matmul") {
    result.a = compiler.access(kernel.at("a"), false);
    result.b = compiler.access(kernel.at("b"), false);
  }
  result.loads = std::move(compiler.loads);
  return result;
}

void run_pointwise(const Json& kernel, const CompiledKernel& compiled, const AxisValues& axes) {
  State state;
  for_each_point(sizes(kernel.at("domain"), axes), [&](const std::vector<int64_t>& point) {
    state.index = point;
    for (const auto& s : compiled.stores) write(s, state, compiled.loads);
  });
}

/// Points in domain order; an accumulating store adds its value to the element there (rounded
/// to the buffer's dtype after each addition, as a sequence of index_add_ updates would be).
void run_scatter(const Json& kernel, const CompiledKernel& compiled, const AxisValues& axes) {
  const bool accumulate = kernel.at("accumulate").get<bool>();
  State state;
  for_each_point(sizes(kernel.at("domain"), axes), [&](const std::vector<int64_t>& point) {
    state.index = point;
    for (const auto& s : compiled.stores) {
      if (!accumulate) {
        write(s, state, compiled.loads);
        continue;
      }
      double& element =
          s.buffer->data[static_cast<std::size_t>(position(s, state, compiled.loads))];
      element = round_to(s.buffer->dtype, element + eval(s.value, state, compiled.loads));
    }
  });
}

/// Whether `a` comes before `b` in a row ordered largest first (or smallest first): NaN counts
/// as larger than every number, as torch.sort and torch.topk order it.
bool before(double a, double b, bool largest) {
  if (std::isnan(a) || std::isnan(b)) return largest ? !std::isnan(b) : !std::isnan(a);
  return largest ? a > b : a < b;
}

/// Per kept point, the row's positions in a stable order (ties keep the lower position first);
/// the stores then run over its first k entries.
void run_topk(const Json& kernel, const CompiledKernel& compiled, const AxisValues& axes) {
  const auto kept = sizes(kernel.at("domain"), axes);
  const int64_t extent = size_of(kernel.at("extent"), axes);
  const int64_t k = size_of(kernel.at("k"), axes);
  const bool largest = kernel.at("largest").get<bool>();
  if (k < 0 || k > extent)
    malformed(fmt::format("a topk kernel selects {} elements of rows of {}", k, extent));
  State state;
  std::vector<std::pair<double, int64_t>> row(static_cast<std::size_t>(extent));
  for_each_point(kept, [&](const std::vector<int64_t>& keep_point) {
    state.index = keep_point;
    state.index.push_back(0);
    for (int64_t r = 0; r < extent; ++r) {
      state.index.back() = r;
      row[static_cast<std::size_t>(r)] = {eval(compiled.scanned, state, compiled.loads), r};
    }
    std::stable_sort(row.begin(), row.end(), [&](const auto& a, const auto& b) {
      return before(a.first, b.first, largest);
    });
    for (int64_t j = 0; j < k; ++j) {
      state.index.back() = j;
      state.topk_value = row[static_cast<std::size_t>(j)].first;
      state.topk_index = static_cast<double>(row[static_cast<std::size_t>(j)].second);
      for (const auto& s : compiled.stores) write(s, state, compiled.loads);
    }
  });
}

void run_reduce(const Json& kernel, const CompiledKernel& compiled, const AxisValues& axes) {
  const auto kept = sizes(kernel.at("domain"), axes);
  const auto reduced = sizes(kernel.at("reduce"), axes);
  const auto& stages = compiled.stages;
  State state;
  state.stages.assign(stages.size(), 0);
  for_each_point(kept, [&](const std::vector<int64_t>& keep_point) {
    for (std::size_t s = 0; s < stages.size(); ++s) {
      const std::string& op = stages[s].first;
      const bool is_sum = op == "sum", is_prod = op == "prod", is_any = op == "any",
                 is_all = op == "all", is_max = op == "max" || op == "argmax",
                 is_arg = op == "argmax" || op == "argmin";
      if (!is_sum && !is_prod && !is_any && !is_all && !is_max && op != "min" && op != "argmin") {
        malformed("unknown reduce stage op \"" + op + "\"");
      }
      double result = is_sum || is_any ? 0 : is_prod || is_all ? 1 : is_max ? -INFINITY : INFINITY;
      double best_index = 0;
      int64_t flat = 0;
      bool first = true;
      for_each_point(reduced, [&](const std::vector<int64_t>& red_point) {
        state.index = keep_point;
        state.index.insert(state.index.end(), red_point.begin(), red_point.end());
        const double v = eval(stages[s].second, state, compiled.loads);
        if (is_sum) {
          result += v;
        } else if (is_prod) {
          result *= v;
        } else if (is_any) {
          result = result != 0 || v != 0;
        } else if (is_all) {
          result = result != 0 && v != 0;
        } else {
          const bool better =
              !std::isnan(result) && (std::isnan(v) || first || (is_max ? v > result : v < result));
          if (better) {
            result = v;
            best_index = static_cast<double>(flat);
          }
        }
        first = false;
        ++flat;
      });
      state.stages[s] = is_arg ? best_index : result;
    }
    state.index = keep_point;
    state.index.resize(kept.size() + reduced.size(), 0);
    for (std::size_t i = 0; i < compiled.stores.size(); ++i) {
      if (!compiled.store_full[i]) write(compiled.stores[i], state, compiled.loads);
    }
    for_each_point(reduced, [&](const std::vector<int64_t>& red_point) {
      state.index = keep_point;
      state.index.insert(state.index.end(), red_point.begin(), red_point.end());
      for (std::size_t i = 0; i < compiled.stores.size(); ++i) {
        if (compiled.store_full[i]) write(compiled.stores[i], state, compiled.loads);
      }
    });
  });
}

void run_scan(const Json& kernel, const CompiledKernel& compiled, const AxisValues& axes) {
  auto domain = sizes(kernel.at("domain"), axes);
  const std::size_t axis = kernel.at("axis");
  const std::string op = kernel.at("op");
  const bool reverse = kernel.at("reverse"), exclusive = kernel.at("exclusive");
  if (!domain.empty() && axis >= domain.size()) malformed("scan axis out of range");
  const int64_t length = domain.empty() ? 1 : domain[axis];
  if (!domain.empty()) domain[axis] = 1;
  State state;
  for_each_point(domain, [&](const std::vector<int64_t>& outer) {
    double running = op == "sum" ? 0 : op == "prod" ? 1 : op == "min" ? INFINITY : -INFINITY;
    for (int64_t step = 0; step < length; ++step) {
      state.index = outer;
      if (!state.index.empty()) state.index[axis] = reverse ? length - 1 - step : step;
      const double v = eval(compiled.scanned, state, compiled.loads);
      const double before = running;
      if (op == "sum") {
        running += v;
      } else if (op == "prod") {
        running *= v;
      } else if (op == "max") {
        running = std::isnan(v) || v > running ? v : running;
      } else if (op == "min") {
        running = std::isnan(v) || v < running ? v : running;
      } else if (op == "logsumexp") {
        const double m = std::max(running, v);
        running = std::isinf(m) ? m : m + std::log(std::exp(running - m) + std::exp(v - m));
      } else {
        malformed("unknown scan op \"" + op + "\"");
      }
      state.scan = exclusive ? before : running;
      for (const auto& s : compiled.stores) write(s, state, compiled.loads);
    }
  });
}

void run_matmul(const Json& kernel, const CompiledKernel& compiled, const AxisValues& axes) {
  auto space = sizes(kernel.at("batch"), axes);
  space.push_back(size_of(kernel.at("m"), axes));
  space.push_back(size_of(kernel.at("n"), axes));
  const int64_t k = size_of(kernel.at("k"), axes);
  const Access& a = compiled.a;
  const Access& b = compiled.b;
  State state;
  for_each_point(space, [&](const std::vector<int64_t>& point) {
    double acc = 0;
    state.index = point;
    state.index.push_back(0);
    for (int64_t kk = 0; kk < k; ++kk) {
      state.index.back() = kk;
      acc += read(a, state, compiled.loads) * read(b, state, compiled.loads);
    }
    state.index.back() = 0;
    state.acc = acc;
    for (const auto& s : compiled.stores) write(s, state, compiled.loads);
  });
}

int64_t product(const std::vector<int64_t>& extents) {
  int64_t result = 1;
  for (const int64_t extent : extents) result *= extent;
  return result;
}

}  // namespace

PlanBuffers run_plan(const OrderedJson& plan, const AxisValues& axes, const PlanBuffers& inputs,
                     const std::map<std::string, std::vector<int64_t>>& output_shapes) {
  std::map<std::string, Buffer> buffers;
  for (const auto& spec : plan.at("buffers")) {
    const std::string name = spec.at("name");
    Buffer buffer{dtype_named(spec.at("dtype")), {}};
    const std::string kind = spec.at("kind");
    if (kind == "input") {
      const auto found = inputs.find(name);
      if (found == inputs.end()) malformed("no data given for input buffer \"" + name + "\"");
      buffer.data = found->second;
    } else if (kind == "output") {
      const auto shape = output_shapes.find(name);
      if (shape == output_shapes.end()) malformed("no shape given for output \"" + name + "\"");
      buffer.data.assign(static_cast<std::size_t>(product(shape->second)), kNaN);
    } else if (kind == "temp") {
      buffer.data.assign(static_cast<std::size_t>(size_of(spec.at("elements"), axes)), kNaN);
    } else {
      malformed("buffer \"" + name + "\" has unknown kind \"" + kind + "\"");
    }
    buffers[name] = std::move(buffer);
  }
  for (const auto& kernel : plan.at("kernels")) {
    const CompiledKernel compiled = compile(kernel, axes, buffers);
    const std::string kind = kernel.at("kind");
    if (kind == "pointwise") {
      run_pointwise(kernel, compiled, axes);
    } else if (kind == "reduce") {
      run_reduce(kernel, compiled, axes);
    } else if (kind == "scan") {
      run_scan(kernel, compiled, axes);
    } else if (kind == "matmul") {
      run_matmul(kernel, compiled, axes);
    } else if (kind == "scatter") {
      run_scatter(kernel, compiled, axes);
    } else if (kind == "topk") {
      run_topk(kernel, compiled, axes);
    } else {
      malformed("unknown kernel kind \"" + kind + "\"");
    }
  }
  PlanBuffers result;
  for (auto& [name, buffer] : buffers) result[name] = std::move(buffer.data);
  return result;
}

int64_t plan_work(const OrderedJson& plan, const AxisValues& axes) {
  int64_t work = 0;
  for (const auto& kernel : plan.at("kernels")) {
    const std::string kind = kernel.at("kind");
    if (kind == "matmul") {
      work += product(sizes(kernel.at("batch"), axes)) * size_of(kernel.at("m"), axes) *
              size_of(kernel.at("n"), axes) * size_of(kernel.at("k"), axes);
    } else if (kind == "reduce") {
      work += product(sizes(kernel.at("domain"), axes)) *
              product(sizes(kernel.at("reduce"), axes)) *
              static_cast<int64_t>(kernel.at("stages").size() + 1);
    } else if (kind == "topk") {
      work += product(sizes(kernel.at("domain"), axes)) * size_of(kernel.at("extent"), axes);
    } else {
      work += product(sizes(kernel.at("domain"), axes));
    }
  }
  return work;
}

}  // namespace kernelarc
