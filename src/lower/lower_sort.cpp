// Selections along a dim: topk / sort / argsort become a topk kernel whose rows run along that
// dim (moved innermost through the coords, as a scan's axis is not) and whose value inlines the
// element-wise work before it; the outputs are the selected values and their positions.
#include <fmt/format.h>

#include "lower/lowering.h"
#include "lower/node_args.h"

namespace kernelarc::lowering {
namespace {

/// What a node asks for: the dim, how many (k; none for a whole-row sort), the order, and
/// which of the kernel's results each graph output is.
struct Selection {
  int64_t dim = -1;
  std::optional<int64_t> k;
  bool largest = false;
  std::vector<std::string> outputs;  ///< "topk_value" or "topk_index", per graph output
};

/// The selection of a topk / sort / argsort node (std::nullopt for any other op). The .stable
/// overloads take dim and descending as keywords only: no position, NodeArgs finds them by name.
std::optional<Selection> selection_of(const NodeArgs& args) {
  const GraphNode& node = args.node;
  const std::string_view name = node.base_name();
  const bool stable_overload = node.overload() == "stable";
  Selection selection;
  if (name == "topk") {
    selection.k = args.required(1, "k").as_int();
    if (!selection.k) throw Unsupported(args.origin + ": expected a constant k");
    selection.dim = args.integer(2, "dim", -1);
    selection.largest = args.flag(3, "largest", true);
    // sorted=False leaves the order unspecified: the sorted order is one torch may return.
    selection.outputs = {"topk_value", "topk_index"};
  } else if (name == "sort" || name == "argsort") {
    const auto at = [&](std::size_t position) {
      return stable_overload ? std::nullopt : std::optional<std::size_t>(position);
    };
    selection.dim = args.integer(at(1), "dim", -1);
    selection.largest = args.flag(at(2), "descending", false);
    selection.outputs = name == "sort" ? std::vector<std::string>{"topk_value", "topk_index"}
                                       : std::vector<std::string>{"topk_index"};
  } else {
    return std::nullopt;
  }
  return selection;
}

}  // namespace

bool lower_sort(Lowering& lowering, const GraphNode& node) {
  const NodeArgs args{node, fmt::format("{} (op {})", node.op, node.id)};
  const std::string& origin = args.origin;
  const std::optional<Selection> selection = selection_of(args);
  if (!selection) return false;
  const int x = args.tensor(lowering, 0, "self");
  const std::vector<SymSize> shape = lowering.tensor(x).shape;
  const DType dtype = lowering.tensor(x).dtype;
  if (shape.empty()) throw Unsupported(origin + ": a 0-d tensor has no dim to select along");
  const int axis = normalize_dim(selection->dim, shape.size(), origin);
  const SymSize extent = shape[static_cast<std::size_t>(axis)];
  const SymSize k = selection->k ? SymSize::constant(*selection->k) : extent;
  if (selection->k && (*selection->k < 0 || *selection->k > lowering.max_traced(extent)))
    throw Unsupported(fmt::format("{}: k = {} is outside the dim's {} elements", origin,
                                  *selection->k, extent.text()));

  // Kept dims in order are the kernel's dims 0..K-1; the selected dim is dim K.
  const int row_dim = static_cast<int>(shape.size()) - 1;
  Json domain = Json::array();
  Coords coords;
  std::vector<SymSize> out_shape;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const bool selected = static_cast<int>(d) == axis;
    if (!selected) domain.push_back(shape[d].text());
    coords.push_back(idx(selected                     ? row_dim
                         : static_cast<int>(d) < axis ? static_cast<int>(d)
                                                      : static_cast<int>(d) - 1));
    out_shape.push_back(selected ? k : shape[d]);
  }
  const int kernel_id = lowering.new_kernel({{"kind", "topk"},
                                             {"domain", domain},
                                             {"extent", extent.text()},
                                             {"k", k.text()},
                                             {"largest", selection->largest}},
                                            "topk");
  set_kernel_value(lowering, kernel_id, x, coords, dtype, out_shape, coords, origin);

  for (std::size_t i = 0; i < selection->outputs.size() && i < node.outputs.size(); ++i) {
    if (node.outputs[i] < 0) continue;
    Tensor tensor;
    tensor.kind = Tensor::Kind::Topk;
    tensor.shape = out_shape;
    tensor.dtype = selection->outputs[i] == "topk_index" ? DType::Int64 : dtype;
    tensor.origin = origin;
    tensor.kernel = kernel_id;
    tensor.ref = Json::array({selection->outputs[i]});
    tensor.at = coords;
    lowering.value_tensor[node.outputs[i]] = lowering.add_tensor(std::move(tensor));
  }
  return true;
}

}  // namespace kernelarc::lowering
