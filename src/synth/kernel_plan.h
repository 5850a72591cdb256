// The kernel plan of family "fused" (docs/RECOGNITION.md §2) as structs: what the lowering
// writes into kernelarc.op_params and the CPU and CUDA code generators read. parse_kernel_plan
// checks the plan on its own (shapes of the JSON, operators and their arity, names that
// resolve, int vs float typing, which index dimensions and kernel values each part may use);
// the fused binder checks it against the definition.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/problem.h"

namespace kernelarc {

enum class PlanBufferKind { Input, Output, Temp };

struct PlanBuffer {
  std::string name;
  PlanBufferKind kind = PlanBufferKind::Input;
  int index = 0;  ///< into the definition's inputs or outputs (Input, Output)
  DType dtype = DType::Float32;
  std::string elements;  ///< Temp: a SIZE
};

/// Whether a value of an EXPR is an int64 or a float (float32, or float64 in float64 plans).
enum class ValueType { Int, Float };

/// One node of an EXPR tree.
struct PlanExpr {
  /// "f", "i", "size", "idx", "load", "stage", "acc", "scan", "topk_value", "topk_index", or an
  /// operator
  /// ("add", "exp", "where", "cast", "float", "int", ...).
  std::string op;
  double number = 0;             ///< "f"
  int64_t integer = 0;           ///< "i"; "idx": the dimension
  std::string text;              ///< "size": the SIZE; "load", "stage": the name; "cast": the dtype
  DType dtype = DType::Float32;  ///< "cast"
  std::vector<PlanExpr> args;
  ValueType type = ValueType::Float;  ///< set by the parser
};

/// A LOAD (and the address part of a STORE): the element at offset + sum strides[j]*coords[j].
struct PlanAccess {
  std::string buffer;
  std::string offset = "0";          ///< SIZE
  std::vector<std::string> strides;  ///< SIZEs
  std::vector<PlanExpr> coords;      ///< integer EXPRs
};

struct PlanStore {
  PlanAccess access;
  PlanExpr value;
  bool over_keep = false;  ///< reduce only: "over": "keep" (else "full")
};

enum class PlanKernelKind { Pointwise, Reduce, Scan, Matmul, Scatter, Topk };

enum class ReduceOp { Sum, Prod, Max, Min, ArgMax, ArgMin, Any, All };
enum class ScanOp { Sum, Prod, Max, Min, LogSumExp };

struct PlanStage {
  std::string name;
  ReduceOp op = ReduceOp::Sum;
  PlanExpr value;
  /// The stage's result: Int for argmax/argmin/any/all and for sum/prod/max/min of an integer
  /// value, else Float.
  ValueType type = ValueType::Float;
};

struct PlanKernel {
  PlanKernelKind kind = PlanKernelKind::Pointwise;
  /// Loads by name, in the order the plan lists them.
  std::vector<std::pair<std::string, PlanAccess>> loads;
  std::vector<PlanStore> stores;

  /// pointwise, scan, scatter: the index space; reduce, topk: kept dims
  std::vector<std::string> domain;
  std::vector<std::string> reduce;  ///< reduce: reduced dims
  std::vector<PlanStage> stages;    ///< reduce

  int axis = 0;  ///< scan
  ScanOp scan_op = ScanOp::Sum;
  bool reverse = false, exclusive = false;
  PlanExpr scan_value;
  ValueType scan_type = ValueType::Float;  ///< the type of ["scan"]

  std::vector<std::string> batch;  ///< matmul: B dims
  std::string m, n;                ///< matmul
  std::string k;                   ///< matmul; topk: how many elements each row selects
  PlanAccess a, b;                 ///< matmul operands

  /// scatter: stores add their value to the destination's element rather than replace it.
  bool accumulate = false;

  /// topk: each row of `extent` elements of `topk_value` (over [kept..., r]) is ordered, largest
  /// first when `largest` (NaN above every number), ties to the lower r; stores run over
  /// [kept..., j < k] and read ["topk_value"] (of type topk_type) and ["topk_index"] (r).
  std::string extent;
  bool largest = true;
  PlanExpr topk_value;
  ValueType topk_type = ValueType::Float;

  /// Dimensions of the index space: pointwise/scan/scatter |domain|, reduce K + R, matmul B + 3,
  /// topk K + 1.
  int rank() const;
  /// The index space's sizes in order (matmul: batch..., m, n, k; topk: kept..., extent, the
  /// larger of the value's and the stores' last dim).
  std::vector<std::string> index_sizes() const;
  const PlanAccess* find_load(std::string_view name) const;
  const PlanStage* find_stage(std::string_view name) const;
};

struct KernelPlan {
  int version = 1;
  std::vector<PlanBuffer> buffers;
  std::vector<PlanKernel> kernels;
  /// Whether any buffer is float64: floats are then computed in float64.
  bool float64 = false;
  /// Every SIZE of the plan with its field path ("kernelarc.op_params.kernels[0].domain[1]").
  std::vector<std::pair<std::string, std::string>> size_fields;

  const PlanBuffer* find_buffer(std::string_view name) const;
};

/// Parses and checks a plan. `where` prefixes every field path: with "kernelarc.op_params" an
/// error reads "kernelarc.op_params.kernels[2].stores[0].coords: expected 3 entries, got 2".
/// Throws InputError "<file>: <field>: <problem>" with `file` first.
KernelPlan parse_kernel_plan(const OrderedJson& json, std::string_view file,
                             std::string_view where = "kernelarc.op_params");

/// The names of the plan's vocabulary, for messages and generators.
std::string_view reduce_op_name(ReduceOp op);
std::string_view scan_op_name(ScanOp op);
std::string_view kernel_kind_name(PlanKernelKind kind);

}  // namespace kernelarc
