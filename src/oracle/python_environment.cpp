#include "oracle/python_environment.h"

#include <string_view>

#include "backend/child_environment.h"

namespace kernelarc {

std::vector<std::string> oracle_python_environment() {
  std::vector<std::string> environment = current_environment();
  for (std::string_view setting : kOracleMallocSettings) {
    const std::string_view name = setting.substr(0, setting.find('=') + 1);
    bool set_by_user = false;
    for (const std::string& entry : environment) set_by_user |= entry.starts_with(name);
    if (!set_by_user) environment.emplace_back(setting);
  }
  return environment;
}

}  // namespace kernelarc
