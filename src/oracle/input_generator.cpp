#include "oracle/input_generator.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "core/safetensors.h"

namespace kernelarc {

namespace {

double finfo_min(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return -DBL_MAX;
    case DType::Float16:
      return -65504.0;
    case DType::BFloat16:
      return -3.3895313892515355e38;
    default:
      return -FLT_MAX;
  }
}

int64_t row_length(const HostTensor& tensor) {
  return tensor.shape.empty() ? 1 : tensor.shape.back();
}

/// Softmax over the last dimension, in double, of the values the tensor holds.
void softmax_rows(HostTensor& tensor) {
  int64_t length = row_length(tensor);
  if (length == 0) return;
  std::vector<double> row(static_cast<std::size_t>(length));
  for (int64_t start = 0; start < tensor.numel(); start += length) {
    for (int64_t i = 0; i < length; ++i) row[i] = tensor.at(start + i);
    double peak = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (double& value : row) sum += (value = std::exp(value - peak));
    for (int64_t i = 0; i < length; ++i) tensor.set(start + i, row[i] / sum);
  }
}

double default_value(DType dtype, Rng& rng) {
  switch (dtype) {
    case DType::Bool:
      return static_cast<double>(rng.integer(0, 2));
    case DType::Int8:
      return static_cast<double>(rng.integer(-128, 128));
    case DType::UInt8:
      return static_cast<double>(rng.integer(0, 256));
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
      return static_cast<double>(rng.integer(-1024, 1024));
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
      return std::clamp(rng.normal(), -2.0, 2.0);
    default:
      return rng.normal();
  }
}

double pattern_value(InputPattern pattern, DType dtype, Rng& rng) {
  switch (pattern) {
    case InputPattern::Ones:
      return 1;
    case InputPattern::Zeros:
      return 0;
    case InputPattern::BinaryMask:
      return static_cast<double>(rng.integer(0, 2));
    case InputPattern::Cos:
      return std::cos(std::clamp(rng.normal(), -std::numbers::pi, std::numbers::pi));
    case InputPattern::Sin:
      return std::sin(std::clamp(rng.normal(), -std::numbers::pi, std::numbers::pi));
    case InputPattern::Positive:
      return std::abs(rng.normal()) + 0.1;
    case InputPattern::SsmACumsum:
      return rng.uniform(-0.1, 0.0);
    case InputPattern::SsmALog:
      return rng.uniform(-5.0, -1.0);
    case InputPattern::SsmA:
      return rng.uniform(-1.0, -0.001);
    case InputPattern::SsmGate:
      return rng.uniform(-5.0, 0.0);
    default:
      return default_value(dtype, rng);
  }
}

HostTensor input_from_blob(const Problem& problem, const TensorSpec& spec,
                           const WorkloadInput& input, const std::vector<int64_t>& shape) {
  auto path = problem.dir / input.path;
  HostTensor tensor = read_safetensors_tensor(path, input.tensor_key);
  if (!dtype_same_storage(tensor.dtype, spec.dtype) || tensor.shape != shape) {
    throw_input_error(path.string(), input.tensor_key,
                      "input '" + spec.name + "' needs " + std::string(dtype_name(spec.dtype)) +
                          " " + shape_to_string(shape) + ", the file holds " +
                          std::string(dtype_name(tensor.dtype)) + " " +
                          shape_to_string(tensor.shape));
  }
  return tensor;
}

}  // namespace

HostTensor random_tensor(DType dtype, const std::vector<int64_t>& shape, InputPattern pattern,
                         Rng& rng) {
  HostTensor tensor(dtype, shape);
  if (dtype_is_packed(dtype)) {
    // SOL-ExecBench: randn quantised to E2M1, two values a byte, the first in the low nibble.
    for (std::byte& byte : tensor.bytes) {
      const uint8_t low = float_to_e2m1(static_cast<float>(rng.normal()));
      const uint8_t high = float_to_e2m1(static_cast<float>(rng.normal()));
      byte = static_cast<std::byte>(low | (high << 4));
    }
    return tensor;
  }
  int64_t count = tensor.numel();
  int64_t length = row_length(tensor);
  if (pattern == InputPattern::CausalMask) {
    for (int64_t i = 0; i < count; ++i) {
      int64_t column = i % length;
      int64_t row = (i / length) % length;
      tensor.set(i, column > row ? finfo_min(dtype) : 0.0);
    }
    return tensor;
  }
  double scale =
      pattern == InputPattern::ScaledWeight ? 1.0 / std::sqrt(static_cast<double>(length)) : 1.0;
  double running = 0;
  for (int64_t i = 0; i < count; ++i) {
    double value = pattern_value(pattern, dtype, rng) * scale;
    if (pattern == InputPattern::SsmACumsum) {
      running = (i % length == 0 ? 0.0 : running) + value;
      value = running;
    }
    tensor.set(i, value);
  }
  if (pattern == InputPattern::Softmax) softmax_rows(tensor);
  return tensor;
}

TensorMap generate_inputs(const Problem& problem, const Workload& workload, uint64_t seed) {
  const Definition& def = problem.definition;
  AxisValues axes = resolve_axes(def, workload);
  Rng rng(seed);
  TensorMap inputs;
  for (const TensorSpec& spec : def.inputs) {
    auto given = workload.inputs.find(spec.name);
    WorkloadInput input = given == workload.inputs.end() ? WorkloadInput{} : given->second;
    std::vector<int64_t> shape = resolve_shape(spec, axes);
    switch (input.kind) {
      case InputKind::Scalar: {
        if (dtype_is_packed(spec.dtype))
          throw_input_error(def.path.string(), "inputs." + spec.name,
                            std::string(dtype_name(spec.dtype)) +
                                " packs two values per byte; a scalar input cannot fill it");
        HostTensor tensor(spec.dtype, shape);
        for (int64_t i = 0; i < tensor.numel(); ++i) tensor.set(i, input.scalar_value);
        inputs[spec.name] = std::move(tensor);
        break;
      }
      case InputKind::Safetensors:
        inputs[spec.name] = input_from_blob(problem, spec, input, shape);
        break;
      case InputKind::Custom:
        throw_input_error(
            def.path.string(), "inputs." + spec.name,
            "custom inputs need the Python reference's " +
                (def.custom_inputs_entrypoint.empty() ? std::string("entry point")
                                                      : def.custom_inputs_entrypoint) +
                "; a native reference cannot generate them");
      case InputKind::Random: {
        InputPattern pattern = spec.is_scalar()
                                   ? InputPattern::Random
                                   : classify_input(spec.name, shape, spec.description, spec.dtype);
        HostTensor tensor = random_tensor(spec.dtype, shape, pattern, rng);
        if (def.op_type == "sampling" && spec.name == "probs") softmax_rows(tensor);
        inputs[spec.name] = std::move(tensor);
        break;
      }
    }
  }
  return inputs;
}

}  // namespace kernelarc
