// The lowering's working state (private to src/lower): IR tensors, the kernels being built, and
// the element resolver that inlines, references stages or loads stored results.
#pragma once

#include <climits>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json_fields.h"
#include "core/problem.h"
#include "lower/op_graph.h"
#include "lower/sym_size.h"

namespace kernelarc::lowering {

using Json = OrderedJson;
using Coords = std::vector<Json>;  ///< one IEXPR per dimension

/// The graph cannot be lowered; what() names the op and what would be needed.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An element cannot be computed in the kernel asked for (it needs a result of a later kernel,
/// or a stage of this kernel at another point); the caller tries another placement.
struct NotHere {};

struct Kernel;
class Lowering;

/// Where an element is being computed: the kernel and its loads.
struct Ctx {
  Lowering& lowering;
  int kernel = -1;
  Json loads;        ///< name -> LOAD
  bool dry = false;  ///< checking a placement: no side effects on other kernels
  /// Pointwise elements this placement may still inline (-1: any number); when spent, the
  /// placement is NotHere. Bounds the cost of trying a kernel that would recompute too much.
  int64_t inlines_left = -1;
};

struct Tensor;
using ElementFn = std::function<Json(Ctx&, const Coords&)>;

struct StoredAt {
  std::string buffer;
  SymSize offset = SymSize::constant(0);
  std::vector<SymSize> strides;
  int kernel = -1;  ///< the kernel that writes it (-1: before every kernel, an input)
};

struct Tensor {
  enum class Kind { Stored, Pointwise, Reduction, Scan, Matmul, Topk };
  Kind kind = Kind::Pointwise;
  std::vector<SymSize> shape;
  DType dtype = DType::Float32;
  std::string origin;  ///< "aten.add.Tensor (op 3)", for messages

  ElementFn fn;  ///< Pointwise: the element at coords
  /// Pointwise views of a node's buffer: when `view_base` is stored with its graph layout, this
  /// view loads the same storage with its own offset and strides.
  int view_base = -1;
  SymSize view_offset;
  std::vector<SymSize> view_strides;
  std::vector<SymSize> layout_strides;  ///< a node result's strides in its graph buffer
  /// Computed over the shape of a matrix product it reshapes (pointwise_node.cpp): its own
  /// element-wise consumers are computed over that shape too.
  bool in_product_shape = false;
  /// A value-preserving cast or copy of this tensor (same shape): a matmul reads that directly.
  int same_values_as = -1;

  // Reduction / Scan / Matmul / Topk: the kernel computing it, the expression naming the result
  // there, and the coords of this tensor's element at the kernel's current point.
  int kernel = -1;
  Json ref;
  Coords at;

  std::optional<StoredAt> stored;
};

struct Kernel {
  Json json;  ///< kind, domain, stages, ... (loads and stores are added at emission)
  Json loads = Json::object();
  Json stores = Json::array();
  std::string kind;
  /// The shapes this kernel can store over, with the coords of each of their dims: "keep" /
  /// "full" for reduce kernels, the domain for pointwise and scan kernels, [batch, m, n] for
  /// matmul kernels, the selected elements' shape for topk kernels.
  struct Space {
    std::string over;  ///< "" or "keep" / "full" for reduce kernels
    std::vector<SymSize> shape;
    Coords coords;
  };
  std::vector<Space> spaces;
  int stage_count = 0;
};

/// Who reads a stored tensor: the plan's kernels, element by element, or a matrix product or
/// convolution, which eager hands the operand as a tensor of its own dtype (rounded to it).
enum class StoredFor { Elements, Operand };

class Lowering {
 public:
  Lowering(const OpGraph& graph, const Definition& definition);

  const OpGraph& graph;
  const Definition& definition;
  std::vector<Tensor> tensors;
  std::vector<Kernel> kernels;
  Json buffers = Json::array();
  std::vector<std::string> notes;
  std::map<int64_t, int> value_tensor;  ///< graph value id -> tensor
  std::vector<AxisValues> traced_axes;  ///< the axis values of each trace, for bounds
  DType compute_dtype = DType::Float32;

  int add_tensor(Tensor tensor);
  Tensor& tensor(int id) { return tensors.at(static_cast<std::size_t>(id)); }
  /// The tensor of a graph value; Unsupported if its producer was not lowered.
  int tensor_of(int64_t value_id, std::string_view user);

  /// The element of tensor `id` at `coords` in ctx's kernel, converted to float when asked.
  Json element(Ctx& ctx, int id, const Coords& coords);
  Json float_element(Ctx& ctx, int id, const Coords& coords);
  /// A LOAD expression (registered in ctx.loads) of a stored view.
  Json load(Ctx& ctx, const std::string& buffer, const SymSize& offset,
            const std::vector<SymSize>& strides, const Coords& coords);

  /// Makes sure `id` is stored (in a temp unless already in a buffer) by a kernel before
  /// `before_kernel`; NotHere when it is computed by that kernel or a later one.
  const StoredAt& materialize(int id, int before_kernel, bool dry,
                              StoredFor use = StoredFor::Elements);
  /// Stores `id` through a new pointwise kernel over its shape (when nothing stores it yet).
  const StoredAt& materialize_now(int id, StoredFor use = StoredFor::Elements);

  int new_kernel(Json json, std::string kind);
  std::string new_temp(const SymSize& elements, DType dtype);
  /// The dtype of the temp that stores `t`: its own where eager holds exactly that in memory
  /// (a product, an operand), else the compute dtype (an intermediate eager never stores).
  DType temp_dtype(const Tensor& t, StoredFor use) const;

  /// Tries to write tensor `id` (shape as given) to `buffer` in `kernel`; false when it does
  /// not fit that kernel's spaces, its element is NotHere or an expression of more than
  /// `max_nodes` nodes there.
  bool try_store(int kernel, int id, const std::string& buffer, const std::vector<SymSize>& strides,
                 int max_nodes = INT_MAX);
  /// Stores `id` in the best kernel: an existing one whose space fits (where it is not
  /// recomputed through more than kMaxFusedStoreNodes nodes), else a new pointwise one.
  void store_anywhere(int id, const std::string& buffer, const std::vector<SymSize>& strides);

  /// max over the traces of (value); for dropping mods and clamps.
  int64_t max_traced(const SymSize& size) const;

 private:
  int temp_count_ = 0;
};

/// A value recomputed inside a kernel that also stores the values it is made of would inline
/// them again (an output fused into the kernel of a temp it reads); beyond this many expression
/// nodes the value is stored by a later kernel that loads them instead.
constexpr int kMaxFusedStoreNodes = 512;

/// Nodes of an expression tree (its loads count one each).
int expression_nodes(const Json& e);

// IEXPR / EXPR construction with light simplification.
Json idx(int d);
Json ilit(int64_t value);
Json flit(double value);
Json size_expr(const SymSize& size);
Json iadd(const Json& a, const Json& b);
Json imul(const Json& a, const Json& b);
Json op(std::string name, std::vector<Json> operands);
/// Element-wise arithmetic nodes (no simplification).
Json fmul(Json a, Json b);
Json fadd(Json a, Json b);
Json fsub(Json a, Json b);
bool is_integer_dtype(DType dtype);
std::vector<SymSize> contiguous_strides(const std::vector<SymSize>& shape);
SymSize product(const std::vector<SymSize>& sizes);
/// Coords of an operand of `operand_shape` broadcast to an output at `coords` (numpy rules).
Coords broadcast_coords(const std::vector<SymSize>& operand_shape, const Coords& coords);
/// Normalises a possibly negative dim against `rank`.
int normalize_dim(int64_t dim, std::size_t rank, std::string_view origin);

/// True when `strides` are row-major over `shape` (dims of size 1 may have any stride).
bool is_contiguous(const std::vector<SymSize>& strides, const std::vector<SymSize>& shape);
/// The tensor that view tensor `id` reshapes without moving elements (offset 0, row-major
/// strides over a row-major base), or -1.
int reshaped_base(const Lowering& lowering, int id);

/// Coords in the node result `base` (shape, strides, offset 0) of the element at `coords` of a
/// view with `view_strides` / `view_offset` into the same storage.
Coords view_to_base_coords(const Lowering& lowering, const std::vector<SymSize>& view_shape,
                           const std::vector<SymSize>& view_strides, const SymSize& view_offset,
                           const std::vector<SymSize>& base_shape,
                           const std::vector<SymSize>& base_strides, const Coords& coords);

// Per op class: each lowers one node into tensors for its outputs (registered in
// value_tensor), returns false when the op is not of its class.
bool lower_view_or_pointwise(Lowering& lowering, const GraphNode& node);
bool lower_reduction(Lowering& lowering, const GraphNode& node);
bool lower_scan(Lowering& lowering, const GraphNode& node);
bool lower_scatter(Lowering& lowering, const GraphNode& node);
bool lower_sort(Lowering& lowering, const GraphNode& node);
bool lower_matmul(Lowering& lowering, const GraphNode& node);
/// The stored view holding tensor `id`'s elements, storing it first when nothing does: how a
/// matmul or a convolution reads an operand it cannot inline.
StoredAt stored_view(Lowering& lowering, int id);
bool lower_window(Lowering& lowering, const GraphNode& node);

/// A reduction tensor: `stage_op` over dims `reduced` of tensor `input`. Output shape: the
/// input shape without the reduced dims, or with 1s there when keepdim. Joins an existing reduce
/// kernel with the same kept and reduced sizes when its value can be computed there.
int add_reduction(Lowering& lowering, int input, std::vector<int> reduced, bool keepdim,
                  const std::string& stage_op, const std::string& origin, DType dtype);
/// The keepdim tensor `r` without its reduced dims (of size 1).
int add_reduction_view(Lowering& lowering, int r, std::vector<int> reduced, DType dtype,
                       const std::string& origin);
/// Gives kernel `k` (a scan or a topk) its "value": tensor `x`'s element at `coords`, inlining
/// the element-wise work before it (a float unless `dtype` is an integer type), and one space,
/// `shape` over `space_coords`, its stores run over. Unsupported, naming `origin`, when that
/// element cannot be computed in the kernel.
void set_kernel_value(Lowering& lowering, int k, int x, const Coords& coords, DType dtype,
                      std::vector<SymSize> shape, Coords space_coords, const std::string& origin);
/// A pointwise tensor of `shape` computing fn.
int add_pointwise(Lowering& lowering, std::vector<SymSize> shape, DType dtype, std::string origin,
                  ElementFn fn);

}  // namespace kernelarc::lowering
