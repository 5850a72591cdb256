// The kind of device a problem runs on, as the layers that never see a backend need it: the
// templates' target, PyTorch's device type for the reference, the knowledge base's hardware key.
// The backend layer (backend/backend.h) maps a --device name to one; nothing compares the names.
#pragma once

#include <optional>
#include <string_view>

namespace kernelarc {

enum class DeviceKind { Cpu, Cuda };

/// "cpu" or "cuda": a template's "target", PyTorch's device type, a knowledge-base hardware key.
constexpr std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Cpu:
      return "cpu";
    case DeviceKind::Cuda:
      return "cuda";
  }
  return "cpu";
}

/// The kind device_kind_name names; nullopt for any other text.
constexpr std::optional<DeviceKind> device_kind_from_name(std::string_view name) {
  for (const DeviceKind kind : {DeviceKind::Cpu, DeviceKind::Cuda})
    if (device_kind_name(kind) == name) return kind;
  return std::nullopt;
}

}  // namespace kernelarc
