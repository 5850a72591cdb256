#include "oracle/python_environment.h"

#include <unistd.h>

#include <string_view>

namespace kernelarc {

std::vector<std::string> oracle_python_environment() {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) environment.emplace_back(*entry);
  for (std::string_view setting : kOracleMallocSettings) {
    const std::string_view name = setting.substr(0, setting.find('=') + 1);
    bool set_by_user = false;
    for (const std::string& entry : environment) set_by_user |= entry.starts_with(name);
    if (!set_by_user) environment.emplace_back(setting);
  }
  return environment;
}

}  // namespace kernelarc
