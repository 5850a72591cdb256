#include "backend/solution_knobs.h"

namespace kernelarc {

std::optional<std::string> parse_knobs(const OrderedJson& ext,
                                       std::map<std::string, int64_t>& knobs) {
  knobs.clear();
  if (auto found = ext.find("knobs"); found != ext.end()) {
    if (!found->is_object()) return "kernelarc.knobs: expected an object, got " + found->dump();
    for (const auto& [name, value] : found->items()) {
      if (!is_identifier(name)) {
        return "kernelarc.knobs." + name + ": expected an identifier as the knob's name";
      }
      if (!value.is_number_integer()) {
        return "kernelarc.knobs." + name + ": expected an integer, got " + value.dump();
      }
      knobs[name] = value.get<int64_t>();
    }
  }
  return std::nullopt;
}

std::vector<std::string> knob_defines(const std::map<std::string, int64_t>& knobs) {
  std::vector<std::string> defines;
  for (const auto& [name, value] : knobs)
    defines.push_back("-D" + name + "=" + std::to_string(value));
  return defines;
}

}  // namespace kernelarc
