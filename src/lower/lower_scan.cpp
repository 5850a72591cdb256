// Scans: cumsum / cumprod / logcumsumexp / cummax / cummin become scan kernels over the input's
// domain whose scanned value inlines the element-wise work before it.
#include <fmt/format.h>

#include "lower/lowering.h"

namespace kernelarc::lowering {

bool lower_scan(Lowering& lowering, const GraphNode& node) {
  const std::string_view name = node.base_name();
  const std::string scan_op = name == "cumsum"         ? "sum"
                              : name == "cumprod"      ? "prod"
                              : name == "logcumsumexp" ? "logsumexp"
                              : name == "cummax"       ? "max"
                              : name == "cummin"       ? "min"
                                                       : "";
  if (scan_op.empty()) return false;
  const std::string origin = fmt::format("{} (op {})", node.op, node.id);
  const auto value = node.arg(0) ? node.arg(0)->as_value() : std::nullopt;
  const auto dim_arg = node.arg(1, "dim") ? node.arg(1, "dim")->as_int() : std::nullopt;
  if (!value || !dim_arg) throw Unsupported(origin + ": expected a tensor and a constant dim");
  const int x = lowering.tensor_of(*value, origin);
  const std::vector<SymSize> shape = lowering.tensor(x).shape;
  const DType out_dtype = *lowering.graph.value(node.output()).dtype;
  const int axis = normalize_dim(*dim_arg, shape.size(), origin);

  Json domain = Json::array();
  Coords coords;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    domain.push_back(shape[d].text());
    coords.push_back(idx(static_cast<int>(d)));
  }
  const int k = lowering.new_kernel({{"kind", "scan"},
                                     {"domain", domain},
                                     {"axis", shape.empty() ? 0 : axis},
                                     {"op", scan_op},
                                     {"reverse", false},
                                     {"exclusive", false}},
                                    "scan");
  set_kernel_value(lowering, k, x, coords, out_dtype, shape, coords, origin);

  Tensor tensor;
  tensor.kind = Tensor::Kind::Scan;
  tensor.shape = shape;
  tensor.dtype = out_dtype;
  tensor.origin = origin;
  tensor.kernel = k;
  tensor.ref = Json::array({"scan"});
  tensor.at = coords;
  lowering.value_tensor[node.output()] = lowering.add_tensor(std::move(tensor));
  if (node.outputs.size() > 1 && node.outputs[1] >= 0) {
    // cummax / cummin indices: the scan kernel carries no index.
    const std::string message = origin + ": the indices of a running max/min are not lowered";
    lowering.value_tensor[node.outputs[1]] =
        add_pointwise(lowering, shape, DType::Int64, origin,
                      [message](Ctx&, const Coords&) -> Json { throw Unsupported(message); });
  }
  return true;
}

}  // namespace kernelarc::lowering
