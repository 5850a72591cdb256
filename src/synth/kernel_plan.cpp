// Parsing and checking a kernel plan (docs/RECOGNITION.md §2). Every error names the field path
// of the plan, so that a wrong plan from the lowering is found at its source.
#include "synth/kernel_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/expr.h"
#include "core/json_fields.h"

namespace kernelarc {

namespace {

enum class Typing {
  SameAsOperands,  // int when every operand is int, else float
  Float,
  Int,
  Where,
};

struct OperatorInfo {
  int arity;
  Typing typing;
};

const std::map<std::string, OperatorInfo, std::less<>>& operators() {
  static const std::map<std::string, OperatorInfo, std::less<>> table = [] {
    std::map<std::string, OperatorInfo, std::less<>> t;
    for (const char* op : {"add", "sub", "mul", "min", "max", "pow", "fmod", "floordiv", "mod"})
      t[op] = {2, Typing::SameAsOperands};
    for (const char* op : {"neg", "abs"}) t[op] = {1, Typing::SameAsOperands};
    t["div"] = {2, Typing::Float};
    t["atan2"] = {2, Typing::Float};
    for (const char* op :
         {"exp",     "exp2",       "expm1", "log",   "log2",      "log10",    "log1p", "sqrt",
          "rsqrt",   "reciprocal", "sin",   "cos",   "tan",       "asin",     "acos",  "atan",
          "sinh",    "cosh",       "tanh",  "asinh", "acosh",     "atanh",    "erf",   "erfc",
          "sigmoid", "relu",       "silu",  "gelu",  "gelu_tanh", "softplus", "floor", "ceil",
          "round",   "trunc",      "sign",  "float"})
      t[op] = {1, Typing::Float};
    for (const char* op : {"lt", "le", "gt", "ge", "eq", "ne", "and", "or"})
      t[op] = {2, Typing::Int};
    for (const char* op : {"not", "isnan", "isinf", "isfinite", "int"}) t[op] = {1, Typing::Int};
    t["where"] = {3, Typing::Where};
    return t;
  }();
  return table;
}

bool is_integer_dtype(DType dtype) {
  return !dtype_is_floating(dtype);
}

ValueType value_type_of(DType dtype) {
  return is_integer_dtype(dtype) ? ValueType::Int : ValueType::Float;
}

// What an expression may refer to where it stands.
struct Scope {
  std::vector<bool> dims;  // dims[d]: whether ["idx", d] may be used
  std::string dims_text;   // which dims, for the message
  int stages = 0;          // how many stages of the kernel are visible
  bool acc = false;
  bool scan = false;
  bool topk = false;
};

class PlanParser {
 public:
  PlanParser(std::string_view file, std::string_view where) : file_(file), where_(where) {}

  KernelPlan parse(const OrderedJson& json) {
    if (!json.is_object())
      fail(where_, "expected a kernel plan object, got " + describe_json(json));
    reject_unknown_keys(json, {"version", "buffers", "kernels"}, file_, where_);
    const std::string version_field = field_path(where_, "version");
    const OrderedJson& version = require(json, "version", where_);
    if (!version.is_number_integer() || version.get<int64_t>() != 1)
      fail(version_field, "expected 1, got " + describe_json(version));
    parse_buffers(require(json, "buffers", where_), field_path(where_, "buffers"));
    const std::string kernels_field = field_path(where_, "kernels");
    const OrderedJson& kernels = require(json, "kernels", where_);
    if (!kernels.is_array() || kernels.empty())
      fail(kernels_field, "expected a non-empty array of kernels, got " + describe_json(kernels));
    for (std::size_t i = 0; i < kernels.size(); ++i)
      plan_.kernels.push_back(parse_kernel(kernels[i], field_index(kernels_field, i)));
    return std::move(plan_);
  }

 private:
  [[noreturn]] void fail(std::string_view field, std::string_view problem) const {
    throw_input_error(file_, field, problem);
  }

  const OrderedJson& require(const OrderedJson& object, std::string_view key,
                             std::string_view parent) const {
    return require_member(object, key, file_, parent);
  }

  std::string size(const OrderedJson& value, const std::string& field) {
    std::string text;
    if (value.is_number_integer()) {
      text = std::to_string(value.get<int64_t>());
    } else if (value.is_string()) {
      text = value.get<std::string>();
      try {
        expr_variables(text);
      } catch (const ExprError& error) {
        fail(field, fmt::format("\"{}\": {}", text, error.what()));
      }
    } else {
      fail(field, "expected a SIZE (an integer expression string), got " + describe_json(value));
    }
    plan_.size_fields.emplace_back(field, text);
    return text;
  }

  std::vector<std::string> size_list(const OrderedJson& value, const std::string& field) {
    if (!value.is_array()) fail(field, "expected an array of SIZEs, got " + describe_json(value));
    std::vector<std::string> sizes;
    for (std::size_t i = 0; i < value.size(); ++i)
      sizes.push_back(size(value[i], field_index(field, i)));
    return sizes;
  }

  // --- buffers ----------------------------------------------------------------------------

  void parse_buffers(const OrderedJson& list, const std::string& field) {
    if (!list.is_array() || list.empty())
      fail(field, "expected a non-empty array of buffers, got " + describe_json(list));
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string at = field_index(field, i);
      const OrderedJson& json = list[i];
      expect_object(json, file_, at);
      PlanBuffer buffer;
      buffer.name = expect_string(require(json, "name", at), file_, field_path(at, "name"));
      if (!is_identifier(buffer.name))
        fail(field_path(at, "name"),
             fmt::format("expected an identifier, got \"{}\"", buffer.name));
      if (plan_.find_buffer(buffer.name))
        fail(field_path(at, "name"), fmt::format("buffer \"{}\" is listed twice", buffer.name));
      const std::string kind =
          expect_string(require(json, "kind", at), file_, field_path(at, "kind"));
      const std::string dtype_text =
          expect_string(require(json, "dtype", at), file_, field_path(at, "dtype"));
      const std::optional<DType> dtype = dtype_from_name(dtype_text);
      if (!dtype)
        fail(field_path(at, "dtype"),
             fmt::format("expected one of {}, got \"{}\"", dtype_accepted_names(), dtype_text));
      buffer.dtype = *dtype;
      if (kind == "input" || kind == "output") {
        reject_unknown_keys(json, {"name", "kind", "index", "dtype"}, file_, at);
        buffer.kind = kind == "input" ? PlanBufferKind::Input : PlanBufferKind::Output;
        const int64_t index =
            expect_int(require(json, "index", at), file_, field_path(at, "index"));
        if (index < 0) fail(field_path(at, "index"), fmt::format("expected >= 0, got {}", index));
        buffer.index = static_cast<int>(index);
      } else if (kind == "temp") {
        reject_unknown_keys(json, {"name", "kind", "dtype", "elements"}, file_, at);
        buffer.kind = PlanBufferKind::Temp;
        buffer.elements = size(require(json, "elements", at), field_path(at, "elements"));
      } else {
        fail(field_path(at, "kind"),
             fmt::format("expected input, output or temp, got \"{}\"", kind));
      }
      plan_.float64 = plan_.float64 || buffer.dtype == DType::Float64;
      plan_.buffers.push_back(std::move(buffer));
    }
  }

  // --- expressions ------------------------------------------------------------------------

  // Parses an EXPR; names are checked against the kernel being parsed (its loads and stages).
  PlanExpr expr(const OrderedJson& json, const std::string& field) {
    if (!json.is_array() || json.empty() || !json[0].is_string())
      fail(field, "expected an EXPR [op, operands...], got " + describe_json(json));
    PlanExpr node;
    node.op = json[0].get<std::string>();
    const std::size_t operands = json.size() - 1;
    auto expect_operands = [&](std::size_t count) {
      if (operands != count)
        fail(field, fmt::format("\"{}\" takes {} operand{}, got {}", node.op, count,
                                count == 1 ? "" : "s", operands));
    };
    const std::string first = field_index(field, 1);
    if (node.op == "f") {
      expect_operands(1);
      node.type = ValueType::Float;
      const OrderedJson& value = json[1];
      if (value.is_number()) {
        node.number = value.get<double>();
      } else if (value == "inf") {
        node.number = std::numeric_limits<double>::infinity();
      } else if (value == "-inf") {
        node.number = -std::numeric_limits<double>::infinity();
      } else if (value == "nan") {
        node.number = std::numeric_limits<double>::quiet_NaN();
      } else {
        fail(first, "expected a number, \"inf\", \"-inf\" or \"nan\", got " + describe_json(value));
      }
    } else if (node.op == "i") {
      expect_operands(1);
      node.type = ValueType::Int;
      node.integer = expect_int(json[1], file_, first);
    } else if (node.op == "size") {
      expect_operands(1);
      node.type = ValueType::Int;
      node.text = size(json[1], first);
    } else if (node.op == "idx") {
      expect_operands(1);
      node.type = ValueType::Int;
      node.integer = expect_int(json[1], file_, first);
      if (node.integer < 0 || node.integer >= kernel_rank_)
        fail(first, fmt::format("dimension {} is outside the kernel's index space of rank {}",
                                node.integer, kernel_rank_));
    } else if (node.op == "load") {
      expect_operands(1);
      node.text = expect_string(json[1], file_, first);
      const auto found = load_dtypes_.find(node.text);
      if (found == load_dtypes_.end())
        fail(first, fmt::format("no load \"{}\" in this kernel's loads", node.text));
      node.type = value_type_of(found->second);
    } else if (node.op == "stage") {
      expect_operands(1);
      node.text = expect_string(json[1], file_, first);
      const PlanStage* stage = kernel_ ? kernel_->find_stage(node.text) : nullptr;
      if (stage == nullptr)
        fail(first, fmt::format("no stage \"{}\" before this point", node.text));
      node.type = stage->type;
    } else if (node.op == "acc" || node.op == "scan") {
      expect_operands(0);
      node.type = node.op == "acc" ? ValueType::Float : kernel_->scan_type;
    } else if (node.op == "topk_value" || node.op == "topk_index") {
      expect_operands(0);
      node.type = node.op == "topk_index" ? ValueType::Int : kernel_->topk_type;
    } else if (node.op == "cast") {
      expect_operands(2);
      node.text = expect_string(json[1], file_, first);
      const std::optional<DType> dtype = dtype_from_name(node.text);
      if (!dtype)
        fail(first,
             fmt::format("expected one of {}, got \"{}\"", dtype_accepted_names(), node.text));
      if (*dtype == DType::Float8E4M3FN || *dtype == DType::Float8E5M2)
        fail(first, "the float8 types are not supported");
      node.dtype = *dtype;
      node.args.push_back(expr(json[2], field_index(field, 2)));
      node.type = value_type_of(*dtype);
    } else {
      const auto found = operators().find(node.op);
      if (found == operators().end())
        fail(field_index(field, 0), fmt::format("unknown operator \"{}\"", node.op));
      expect_operands(static_cast<std::size_t>(found->second.arity));
      for (std::size_t i = 1; i < json.size(); ++i)
        node.args.push_back(expr(json[i], field_index(field, i)));
      switch (found->second.typing) {
        case Typing::Float:
          node.type = ValueType::Float;
          break;
        case Typing::Int:
          node.type = ValueType::Int;
          break;
        case Typing::SameAsOperands:
          node.type = std::all_of(node.args.begin(), node.args.end(),
                                  [](const PlanExpr& a) { return a.type == ValueType::Int; })
                          ? ValueType::Int
                          : ValueType::Float;
          break;
        case Typing::Where:
          node.type = node.args[1].type == ValueType::Int && node.args[2].type == ValueType::Int
                          ? ValueType::Int
                          : ValueType::Float;
          break;
      }
    }
    return node;
  }

  // Checks what an expression refers to against `scope`, following loads into their coords.
  void check_scope(const PlanExpr& node, const Scope& scope, const std::string& field,
                   std::set<std::string>& following) const {
    if (node.op == "idx" && (node.integer >= static_cast<int64_t>(scope.dims.size()) ||
                             !scope.dims[static_cast<std::size_t>(node.integer)])) {
      fail(field, fmt::format("[\"idx\", {}] is not available here (only {})", node.integer,
                              scope.dims_text));
    }
    if (node.op == "stage") {
      const auto& stages = kernel_->stages;
      const auto position = std::find_if(stages.begin(), stages.end(),
                                         [&](const PlanStage& s) { return s.name == node.text; }) -
                            stages.begin();
      if (position >= scope.stages)
        fail(field, fmt::format("stage \"{}\" is not computed yet here", node.text));
    }
    if (node.op == "acc" && !scope.acc)
      fail(field, "[\"acc\"] is only available in the stores of a matmul kernel");
    if (node.op == "scan" && !scope.scan)
      fail(field, "[\"scan\"] is only available in the stores of a scan kernel");
    if ((node.op == "topk_value" || node.op == "topk_index") && !scope.topk)
      fail(field,
           fmt::format("[\"{}\"] is only available in the stores of a topk kernel", node.op));
    if (node.op == "load") {
      if (!following.insert(node.text).second)
        fail(field, fmt::format("load \"{}\" reads its own coordinates", node.text));
      const PlanAccess& access = *kernel_->find_load(node.text);
      for (const PlanExpr& coord : access.coords)
        check_scope(coord, scope, fmt::format("{} (through load \"{}\")", field, node.text),
                    following);
      following.erase(node.text);
    }
    for (const PlanExpr& arg : node.args) check_scope(arg, scope, field, following);
  }

  void check(const PlanExpr& node, const Scope& scope, const std::string& field) const {
    std::set<std::string> following;
    check_scope(node, scope, field, following);
  }

  void check(const PlanAccess& access, const Scope& scope, const std::string& field) const {
    for (std::size_t j = 0; j < access.coords.size(); ++j)
      check(access.coords[j], scope, field_index(field_path(field, "coords"), j));
  }

  // --- accesses ---------------------------------------------------------------------------

  PlanAccess access(const OrderedJson& json, const std::string& field, bool with_value) {
    expect_object(json, file_, field);
    if (with_value) {
      reject_unknown_keys(json, {"buffer", "offset", "strides", "coords", "value", "over"}, file_,
                          field);
    } else {
      reject_unknown_keys(json, {"buffer", "offset", "strides", "coords"}, file_, field);
    }
    PlanAccess result;
    result.buffer =
        expect_string(require(json, "buffer", field), file_, field_path(field, "buffer"));
    const PlanBuffer* buffer = plan_.find_buffer(result.buffer);
    if (buffer == nullptr)
      fail(field_path(field, "buffer"), fmt::format("no buffer \"{}\" in buffers", result.buffer));
    if (const OrderedJson* offset = find_member(json, "offset"))
      result.offset = size(*offset, field_path(field, "offset"));
    const std::string strides_field = field_path(field, "strides");
    result.strides = size_list(require(json, "strides", field), strides_field);
    const std::string coords_field = field_path(field, "coords");
    const OrderedJson& coords = require(json, "coords", field);
    if (!coords.is_array())
      fail(coords_field, "expected an array of EXPRs, got " + describe_json(coords));
    if (coords.size() != result.strides.size())
      fail(coords_field,
           fmt::format("expected {} entries, got {}", result.strides.size(), coords.size()));
    for (std::size_t j = 0; j < coords.size(); ++j) {
      const std::string at = field_index(coords_field, j);
      result.coords.push_back(expr(coords[j], at));
      if (result.coords.back().type != ValueType::Int)
        fail(at, "expected an integer expression, got a float one");
    }
    return result;
  }

  // --- kernels ----------------------------------------------------------------------------

  Scope scope_of(int rank, std::initializer_list<int> excluded, std::string text) const {
    Scope scope;
    scope.dims.assign(static_cast<std::size_t>(rank), true);
    for (int d : excluded) scope.dims[static_cast<std::size_t>(d)] = false;
    scope.dims_text = std::move(text);
    return scope;
  }

  static std::string dims_text(int from, int to) {
    if (to <= from) return "no dimension";
    if (to == from + 1) return fmt::format("dimension {}", from);
    return fmt::format("dimensions {}..{}", from, to - 1);
  }

  PlanKernel parse_kernel(const OrderedJson& json, const std::string& field) {
    expect_object(json, file_, field);
    PlanKernel kernel;
    kernel_ = &kernel;
    const std::string kind =
        expect_string(require(json, "kind", field), file_, field_path(field, "kind"));
    const std::string kind_field = field_path(field, "kind");
    if (kind == "pointwise") {
      kernel.kind = PlanKernelKind::Pointwise;
      reject_unknown_keys(json, {"kind", "loads", "stores", "domain"}, file_, field);
      kernel.domain = size_list(require(json, "domain", field), field_path(field, "domain"));
    } else if (kind == "reduce") {
      kernel.kind = PlanKernelKind::Reduce;
      reject_unknown_keys(json, {"kind", "loads", "stores", "domain", "reduce", "stages"}, file_,
                          field);
      kernel.domain = size_list(require(json, "domain", field), field_path(field, "domain"));
      kernel.reduce = size_list(require(json, "reduce", field), field_path(field, "reduce"));
      if (kernel.reduce.empty())
        fail(field_path(field, "reduce"), "expected at least one reduced dim");
    } else if (kind == "scan") {
      kernel.kind = PlanKernelKind::Scan;
      reject_unknown_keys(
          json,
          {"kind", "loads", "stores", "domain", "axis", "op", "reverse", "exclusive", "value"},
          file_, field);
      kernel.domain = size_list(require(json, "domain", field), field_path(field, "domain"));
      const int64_t axis =
          expect_int(require(json, "axis", field), file_, field_path(field, "axis"));
      if (axis < 0 || axis >= static_cast<int64_t>(kernel.domain.size()))
        fail(field_path(field, "axis"),
             fmt::format("expected a dimension of the domain (0..{}), got {}",
                         static_cast<int64_t>(kernel.domain.size()) - 1, axis));
      kernel.axis = static_cast<int>(axis);
      kernel.scan_op = scan_op(json, field);
      kernel.reverse =
          expect_bool(require(json, "reverse", field), file_, field_path(field, "reverse"));
      kernel.exclusive =
          expect_bool(require(json, "exclusive", field), file_, field_path(field, "exclusive"));
    } else if (kind == "matmul") {
      kernel.kind = PlanKernelKind::Matmul;
      reject_unknown_keys(json, {"kind", "loads", "stores", "batch", "m", "n", "k", "a", "b"},
                          file_, field);
      kernel.batch = size_list(require(json, "batch", field), field_path(field, "batch"));
      kernel.m = size(require(json, "m", field), field_path(field, "m"));
      kernel.n = size(require(json, "n", field), field_path(field, "n"));
      kernel.k = size(require(json, "k", field), field_path(field, "k"));
    } else if (kind == "scatter") {
      kernel.kind = PlanKernelKind::Scatter;
      reject_unknown_keys(json, {"kind", "loads", "stores", "domain", "accumulate"}, file_, field);
      kernel.domain = size_list(require(json, "domain", field), field_path(field, "domain"));
      kernel.accumulate =
          expect_bool(require(json, "accumulate", field), file_, field_path(field, "accumulate"));
    } else if (kind == "topk") {
      kernel.kind = PlanKernelKind::Topk;
      reject_unknown_keys(json,
                          {"kind", "loads", "stores", "domain", "extent", "k", "largest", "value"},
                          file_, field);
      kernel.domain = size_list(require(json, "domain", field), field_path(field, "domain"));
      kernel.extent = size(require(json, "extent", field), field_path(field, "extent"));
      kernel.k = size(require(json, "k", field), field_path(field, "k"));
      kernel.largest =
          expect_bool(require(json, "largest", field), file_, field_path(field, "largest"));
      check_k_within_extent(kernel, field);
    } else {
      fail(kind_field,
           fmt::format("expected pointwise, reduce, scan, matmul, scatter or topk, got \"{}\"",
                       kind));
    }
    kernel_rank_ = kernel.rank();
    parse_loads(json, field, kernel);

    const int rank = kernel_rank_;
    const int kept = static_cast<int>(kernel.domain.size());
    switch (kernel.kind) {
      case PlanKernelKind::Pointwise:
      case PlanKernelKind::Scatter:
        parse_stores(json, field, kernel,
                     [&](const PlanStore&) { return scope_of(rank, {}, dims_text(0, rank)); });
        break;
      case PlanKernelKind::Reduce:
        parse_stages(json, field, kernel);
        parse_stores(json, field, kernel, [&](const PlanStore& store) {
          Scope scope = scope_of(rank, {}, dims_text(0, rank));
          if (store.over_keep) {
            for (int d = kept; d < rank; ++d) scope.dims[static_cast<std::size_t>(d)] = false;
            scope.dims_text = dims_text(0, kept) + ", the kept ones";
          }
          scope.stages = static_cast<int>(kernel.stages.size());
          return scope;
        });
        break;
      case PlanKernelKind::Scan:
        kernel.scan_value = kernel_value(json, field);
        kernel.scan_type =
            kernel.scan_op == ScanOp::LogSumExp ? ValueType::Float : kernel.scan_value.type;
        parse_stores_reading(json, field, kernel, &Scope::scan);
        break;
      case PlanKernelKind::Topk:
        kernel.topk_value = kernel_value(json, field);
        kernel.topk_type = kernel.topk_value.type;
        parse_stores_reading(json, field, kernel, &Scope::topk);
        break;
      case PlanKernelKind::Matmul: {
        const int b = static_cast<int>(kernel.batch.size());
        kernel.a = access(require(json, "a", field), field_path(field, "a"), false);
        check(kernel.a, scope_of(rank, {b + 1}, "batch, m and k"), field_path(field, "a"));
        kernel.b = access(require(json, "b", field), field_path(field, "b"), false);
        check(kernel.b, scope_of(rank, {b}, "batch, k and n"), field_path(field, "b"));
        parse_stores(json, field, kernel, [&](const PlanStore&) {
          Scope scope = scope_of(rank, {b + 2}, "batch, m and n");
          scope.acc = true;
          return scope;
        });
        for (std::size_t i = 0; i < kernel.loads.size(); ++i) {
          check(kernel.loads[i].second, scope_of(rank, {b + 2}, "batch, m and n"),
                field_path(field_path(field, "loads"), kernel.loads[i].first));
        }
        break;
      }
    }
    kernel_ = nullptr;
    load_dtypes_.clear();
    return kernel;
  }

  // The element a scan or topk kernel works on ("value"), over the whole index space.
  PlanExpr kernel_value(const OrderedJson& json, const std::string& field) {
    PlanExpr value = expr(require(json, "value", field), field_path(field, "value"));
    check(value, scope_of(kernel_rank_, {}, dims_text(0, kernel_rank_)),
          field_path(field, "value"));
    return value;
  }

  // Stores over the whole index space that may also read what the kernel computed there
  // (`reads`: Scope::scan or Scope::topk).
  void parse_stores_reading(const OrderedJson& json, const std::string& field, PlanKernel& kernel,
                            bool Scope::*reads) {
    parse_stores(json, field, kernel, [&](const PlanStore&) {
      Scope scope = scope_of(kernel_rank_, {}, dims_text(0, kernel_rank_));
      scope.*reads = true;
      return scope;
    });
  }

  // Where k and extent are both numbers the plan is wrong on its own; otherwise the interpreter
  // and the generated code check them per call.
  void check_k_within_extent(const PlanKernel& kernel, const std::string& field) const {
    const std::optional<int64_t> k = constant_expr_value(kernel.k),
                                 extent = constant_expr_value(kernel.extent);
    if (k && *k < 0) fail(field_path(field, "k"), fmt::format("expected >= 0, got {}", *k));
    if (k && extent && *k > *extent)
      fail(field_path(field, "k"),
           fmt::format("selects {} elements of rows of {} (\"extent\")", *k, *extent));
  }

  ScanOp scan_op(const OrderedJson& json, const std::string& field) const {
    const std::string op =
        expect_string(require(json, "op", field), file_, field_path(field, "op"));
    static const std::map<std::string, ScanOp, std::less<>> ops = {
        {"sum", ScanOp::Sum},
        {"prod", ScanOp::Prod},
        {"max", ScanOp::Max},
        {"min", ScanOp::Min},
        {"logsumexp", ScanOp::LogSumExp}};
    const auto found = ops.find(op);
    if (found == ops.end())
      fail(field_path(field, "op"),
           fmt::format("expected sum, prod, max, min or logsumexp, got \"{}\"", op));
    return found->second;
  }

  void parse_loads(const OrderedJson& json, const std::string& field, PlanKernel& kernel) {
    const std::string loads_field = field_path(field, "loads");
    const OrderedJson& loads = require(json, "loads", field);
    if (!loads.is_object())
      fail(loads_field, "expected an object {name: LOAD}, got " + describe_json(loads));
    // Names first: a load's coords may read another load (a gather).
    for (const auto& [name, spec] : loads.items()) {
      const OrderedJson* buffer = spec.is_object() ? find_member(spec, "buffer") : nullptr;
      const PlanBuffer* found =
          buffer && buffer->is_string() ? plan_.find_buffer(buffer->get<std::string>()) : nullptr;
      load_dtypes_[name] = found ? found->dtype : DType::Float32;
    }
    for (const auto& [name, spec] : loads.items())
      kernel.loads.emplace_back(name, access(spec, field_path(loads_field, name), false));
    // Every load within the index space, and no load reading itself.
    const Scope all = scope_of(kernel_rank_, {}, dims_text(0, kernel_rank_));
    for (const auto& [name, load] : kernel.loads) {
      PlanExpr use;
      use.op = "load";
      use.text = name;
      check(use, all, field_path(loads_field, name));
    }
  }

  void parse_stages(const OrderedJson& json, const std::string& field, PlanKernel& kernel) {
    const std::string stages_field = field_path(field, "stages");
    const OrderedJson& stages = require(json, "stages", field);
    if (!stages.is_array() || stages.empty())
      fail(stages_field, "expected a non-empty array of stages, got " + describe_json(stages));
    static const std::map<std::string, ReduceOp, std::less<>> ops = {
        {"sum", ReduceOp::Sum}, {"prod", ReduceOp::Prod},     {"max", ReduceOp::Max},
        {"min", ReduceOp::Min}, {"argmax", ReduceOp::ArgMax}, {"argmin", ReduceOp::ArgMin},
        {"any", ReduceOp::Any}, {"all", ReduceOp::All}};
    for (std::size_t i = 0; i < stages.size(); ++i) {
      const std::string at = field_index(stages_field, i);
      const OrderedJson& spec = stages[i];
      expect_object(spec, file_, at);
      reject_unknown_keys(spec, {"name", "op", "value"}, file_, at);
      PlanStage stage;
      stage.name = expect_string(require(spec, "name", at), file_, field_path(at, "name"));
      if (kernel.find_stage(stage.name))
        fail(field_path(at, "name"), fmt::format("stage \"{}\" is listed twice", stage.name));
      const std::string op = expect_string(require(spec, "op", at), file_, field_path(at, "op"));
      const auto found = ops.find(op);
      if (found == ops.end())
        fail(field_path(at, "op"),
             fmt::format("expected sum, prod, max, min, argmax, argmin, any or all, got \"{}\"",
                         op));
      stage.op = found->second;
      stage.value = expr(require(spec, "value", at), field_path(at, "value"));
      Scope scope = scope_of(kernel_rank_, {}, dims_text(0, kernel_rank_));
      scope.stages = static_cast<int>(i);
      check(stage.value, scope, field_path(at, "value"));
      switch (stage.op) {
        case ReduceOp::ArgMax:
        case ReduceOp::ArgMin:
        case ReduceOp::Any:
        case ReduceOp::All:
          stage.type = ValueType::Int;
          break;
        default:
          stage.type = stage.value.type;
      }
      kernel.stages.push_back(std::move(stage));
    }
  }

  template <typename ScopeOf>
  void parse_stores(const OrderedJson& json, const std::string& field, PlanKernel& kernel,
                    const ScopeOf& scope_of_store) {
    const std::string stores_field = field_path(field, "stores");
    const OrderedJson& stores = require(json, "stores", field);
    if (!stores.is_array() || stores.empty())
      fail(stores_field, "expected a non-empty array of stores, got " + describe_json(stores));
    for (std::size_t i = 0; i < stores.size(); ++i) {
      const std::string at = field_index(stores_field, i);
      PlanStore store;
      store.access = access(stores[i], at, true);
      const PlanBuffer& buffer = *plan_.find_buffer(store.access.buffer);
      if (buffer.kind == PlanBufferKind::Input)
        fail(field_path(at, "buffer"),
             fmt::format("\"{}\" is an input; stores write outputs and temps", buffer.name));
      const OrderedJson* over = find_member(stores[i], "over");
      if (kernel.kind == PlanKernelKind::Reduce) {
        if (over == nullptr) fail(field_path(at, "over"), "missing (\"keep\" or \"full\")");
        if (*over != "keep" && *over != "full")
          fail(field_path(at, "over"),
               "expected \"keep\" or \"full\", got " + describe_json(*over));
        store.over_keep = *over == "keep";
      } else if (over != nullptr) {
        fail(field_path(at, "over"), "only the stores of a reduce kernel take \"over\"");
      }
      store.value = expr(require(stores[i], "value", at), field_path(at, "value"));
      const Scope scope = scope_of_store(store);
      check(store.access, scope, at);
      check(store.value, scope, field_path(at, "value"));
      kernel.stores.push_back(std::move(store));
    }
  }

  std::string file_;
  std::string where_;
  KernelPlan plan_;
  PlanKernel* kernel_ = nullptr;
  int kernel_rank_ = 0;
  std::map<std::string, DType, std::less<>> load_dtypes_;
};

}  // namespace

int PlanKernel::rank() const {
  return static_cast<int>(index_sizes().size());
}

std::vector<std::string> PlanKernel::index_sizes() const {
  std::vector<std::string> sizes;
  switch (kind) {
    case PlanKernelKind::Pointwise:
    case PlanKernelKind::Scan:
    case PlanKernelKind::Scatter:
      sizes = domain;
      break;
    case PlanKernelKind::Reduce:
      sizes = domain;
      sizes.insert(sizes.end(), reduce.begin(), reduce.end());
      break;
    case PlanKernelKind::Matmul:
      sizes = batch;
      sizes.insert(sizes.end(), {m, n, k});
      break;
    case PlanKernelKind::Topk:
      sizes = domain;
      sizes.push_back(extent);
      break;
  }
  return sizes;
}

const PlanAccess* PlanKernel::find_load(std::string_view name) const {
  for (const auto& [load_name, load] : loads)
    if (load_name == name) return &load;
  return nullptr;
}

const PlanStage* PlanKernel::find_stage(std::string_view name) const {
  for (const PlanStage& stage : stages)
    if (stage.name == name) return &stage;
  return nullptr;
}

const PlanBuffer* KernelPlan::find_buffer(std::string_view name) const {
  for (const PlanBuffer& buffer : buffers)
    if (buffer.name == name) return &buffer;
  return nullptr;
}

KernelPlan parse_kernel_plan(const OrderedJson& json, std::string_view file,
                             std::string_view where) {
  return PlanParser(file, where).parse(json);
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Prod:
      return "prod";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::ArgMax:
      return "argmax";
    case ReduceOp::ArgMin:
      return "argmin";
    case ReduceOp::Any:
      return "any";
    case ReduceOp::All:
      return "all";
  }
  return "";
}

std::string_view scan_op_name(ScanOp op) {
  switch (op) {
    case ScanOp::Sum:
      return "sum";
    case ScanOp::Prod:
      return "prod";
    case ScanOp::Max:
      return "max";
    case ScanOp::Min:
      return "min";
    case ScanOp::LogSumExp:
      return "logsumexp";
  }
  return "";
}

std::string_view kernel_kind_name(PlanKernelKind kind) {
  switch (kind) {
    case PlanKernelKind::Pointwise:
      return "pointwise";
    case PlanKernelKind::Reduce:
      return "reduce";
    case PlanKernelKind::Scan:
      return "scan";
    case PlanKernelKind::Matmul:
      return "matmul";
    case PlanKernelKind::Scatter:
      return "scatter";
    case PlanKernelKind::Topk:
      return "topk";
  }
  return "";
}

}  // namespace kernelarc
