// A calibration's JSON form and its storage in the workspace.
#include "backend/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/error.h"

namespace kernelarc {
namespace {

const nlohmann::json& member(const nlohmann::json& json, const char* key,
                             const std::string& where) {
  auto found = json.find(key);
  if (found == json.end()) throw_input_error(where, key, "missing required field");
  return *found;
}

std::string string_field(const nlohmann::json& json, const char* key, const std::string& where) {
  const auto& value = member(json, key, where);
  if (!value.is_string()) throw_input_error(where, key, "expected a string, got " + value.dump());
  return value.get<std::string>();
}

double number_field(const nlohmann::json& json, const char* key, const std::string& where) {
  const auto& value = member(json, key, where);
  if (!value.is_number()) throw_input_error(where, key, "expected a number, got " + value.dump());
  return value.get<double>();
}

int64_t int_field(const nlohmann::json& json, const char* key, const std::string& where) {
  const auto& value = member(json, key, where);
  if (!value.is_number_integer() || value.get<int64_t>() < 0) {
    throw_input_error(where, key, "expected a non-negative integer, got " + value.dump());
  }
  return value.get<int64_t>();
}

const nlohmann::json& object_field(const nlohmann::json& json, const char* key,
                                   const std::string& where) {
  const auto& value = member(json, key, where);
  if (!value.is_object()) throw_input_error(where, key, "expected an object, got " + value.dump());
  return value;
}

bool valid_device(const std::string& device) {
  if (device == "cpu") return true;
  const std::string prefix = "cuda:";
  if (device.size() <= prefix.size() || device.compare(0, prefix.size(), prefix) != 0) return false;
  for (std::size_t i = prefix.size(); i < device.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(device[i]))) return false;
  }
  return true;
}

}  // namespace

nlohmann::json Calibration::to_json() const {
  return {
      {"device", device},
      {"description", description},
      {"measured_at", measured_at},
      {"copy_bandwidth_gbs", copy_bandwidth_gbs},
      {"tensor_tflops", tensor_tflops},
      {"fp32_fma_tflops", fp32_fma_tflops},
      {"l2_bytes", l2_bytes},
      {"sm_count", sm_count},
      {"llc_bytes", llc_bytes},
      {"cores", cores},
      {"environment", environment},
  };
}

Calibration Calibration::from_json(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object()) throw_input_error(where, "", "expected a JSON object, got " + json.dump());
  Calibration result;
  result.device = string_field(json, "device", where);
  if (!valid_device(result.device)) {
    throw_input_error(where, "device",
                      "expected \"cpu\" or \"cuda:N\", got \"" + result.device + "\"");
  }
  result.description = string_field(json, "description", where);
  result.measured_at = string_field(json, "measured_at", where);
  result.copy_bandwidth_gbs = number_field(json, "copy_bandwidth_gbs", where);
  for (const auto& [dtype, value] : object_field(json, "tensor_tflops", where).items()) {
    if (!value.is_number()) {
      throw_input_error(where, "tensor_tflops." + dtype, "expected a number, got " + value.dump());
    }
    result.tensor_tflops[dtype] = value.get<double>();
  }
  result.fp32_fma_tflops = number_field(json, "fp32_fma_tflops", where);
  result.l2_bytes = int_field(json, "l2_bytes", where);
  result.sm_count = static_cast<int>(int_field(json, "sm_count", where));
  result.llc_bytes = int_field(json, "llc_bytes", where);
  result.cores = static_cast<int>(int_field(json, "cores", where));
  for (const auto& [key, value] : object_field(json, "environment", where).items()) {
    if (!value.is_string()) {
      throw_input_error(where, "environment." + key, "expected a string, got " + value.dump());
    }
    result.environment[key] = value.get<std::string>();
  }
  return result;
}

std::filesystem::path calibration_path(const std::filesystem::path& workspace,
                                       const std::string& device) {
  if (!valid_device(device)) {
    throw InputError("calibration: device: expected \"cpu\" or \"cuda:N\", got \"" + device + "\"");
  }
  std::string id = device;
  std::replace(id.begin(), id.end(), ':', '-');
  return workspace / "calibration" / (id + ".json");
}

void save_calibration(const std::filesystem::path& workspace, const Calibration& calibration) {
  const auto path = calibration_path(workspace, calibration.device);
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) {
    throw InternalError(
        fmt::format("cannot create {}: {}", path.parent_path().string(), error.message()));
  }
  write_file_atomically(path, calibration.to_json().dump(2) + "\n");
}

std::optional<Calibration> load_calibration(const std::filesystem::path& workspace,
                                            const std::string& device) {
  const auto path = calibration_path(workspace, device);
  std::ifstream in(path);
  if (!in) {
    if (!std::filesystem::exists(path)) return std::nullopt;
    throw InputError(fmt::format("{}: cannot be read", path.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& error) {
    throw InputError(fmt::format("{}: invalid JSON: {}", path.string(), error.what()));
  }
  auto calibration = Calibration::from_json(json, path.string());
  if (calibration.device != device) {
    throw_input_error(path.string(), "device",
                      fmt::format("expected \"{}\", got \"{}\"", device, calibration.device));
  }
  return calibration;
}

}  // namespace kernelarc
