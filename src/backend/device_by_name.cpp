#include "backend/device.h"
#include "core/error.h"

namespace kernelarc {

std::unique_ptr<Device> make_device(const std::string& name, bool trace_activity) {
  if (name == "cpu") return make_cpu_device();
  if (name == "cuda") return make_cuda_device(0, trace_activity);
  if (name.rfind("cuda:", 0) == 0) {
    std::string ordinal = name.substr(5);
    if (!ordinal.empty() && ordinal.find_first_not_of("0123456789") == std::string::npos)
      return make_cuda_device(std::stoi(ordinal), trace_activity);
  }
  throw InputError("--device: expected cpu, cuda or cuda:N, got \"" + name + "\"");
}

}  // namespace kernelarc
