#include "eval/arena_layout.h"

#include "backend/worker/worker_protocol.h"
#include "core/error.h"
#include "core/parallel_parts.h"

namespace kernelarc {

namespace {

constexpr std::size_t kAlignment = 256;

std::size_t align_up(std::size_t value) {
  return (value + kAlignment - 1) / kAlignment * kAlignment;
}

ArenaTensor place(const TensorSpec& spec, const AxisValues& axes, std::size_t& cursor) {
  ArenaTensor tensor{spec.dtype, resolve_shape(spec, axes), align_up(cursor), spec.name};
  cursor = tensor.offset + arena_tensor_bytes(tensor);
  return tensor;
}

const HostTensor& find_input(const TrialInputs& inputs, const TensorSpec& spec,
                             const ArenaTensor& slot) {
  const HostTensor* tensor = inputs.find(spec.name);
  if (!tensor) throw InternalError("oracle data lacks input '" + spec.name + "'");
  if (!dtype_same_storage(tensor->dtype, slot.dtype) || tensor->shape != slot.shape) {
    throw InternalError("oracle data for input '" + spec.name + "' is " +
                        std::string(dtype_name(tensor->dtype)) + shape_to_string(tensor->shape) +
                        ", expected " + std::string(dtype_name(slot.dtype)) +
                        shape_to_string(slot.shape));
  }
  return *tensor;
}

}  // namespace

ArenaLayout make_arena_layout(const Definition& def, const AxisValues& axes) {
  ArenaLayout layout;
  std::size_t cursor = 0;
  for (const auto& spec : def.inputs) layout.inputs.push_back(place(spec, axes, cursor));
  for (const auto& spec : def.outputs) layout.outputs.push_back(place(spec, axes, cursor));
  layout.bytes = align_up(std::max<std::size_t>(cursor, 1));
  return layout;
}

void write_inputs(std::span<std::byte> arena, const ArenaLayout& layout, const Definition& def,
                  const TrialInputs& inputs) {
  for (std::size_t i = 0; i < def.inputs.size(); ++i) {
    const auto& tensor = find_input(inputs, def.inputs[i], layout.inputs[i]);
    copy_in_parts(arena.data() + layout.inputs[i].offset, tensor.bytes.data(), tensor.nbytes());
  }
}

std::map<std::string, TensorView> output_views(std::span<const std::byte> arena,
                                               const ArenaLayout& layout, const Definition& def) {
  std::map<std::string, TensorView> outputs;
  for (std::size_t i = 0; i < def.outputs.size(); ++i) {
    const auto& slot = layout.outputs[i];
    outputs.emplace(def.outputs[i].name,
                    TensorView(slot.dtype, arena.subspan(slot.offset, arena_tensor_bytes(slot))));
  }
  return outputs;
}

std::optional<std::string> find_modified_input(std::span<const std::byte> arena,
                                               const ArenaLayout& layout, const Definition& def,
                                               const TrialInputs& inputs) {
  for (std::size_t i = 0; i < def.inputs.size(); ++i) {
    const auto& tensor = find_input(inputs, def.inputs[i], layout.inputs[i]);
    if (!equal_in_parts(arena.data() + layout.inputs[i].offset, tensor.bytes.data(),
                        tensor.nbytes())) {
      return def.inputs[i].name;
    }
  }
  return std::nullopt;
}

}  // namespace kernelarc
