#include "app/extra_files.h"

#include "core/error.h"
#include "core/json_fields.h"

namespace kernelarc {

std::map<std::string, std::string> read_extra_files(const std::vector<std::string>& specs) {
  std::map<std::string, std::string> files;
  for (const std::string& spec : specs) {
    const auto equals = spec.find('=');
    if (equals == std::string::npos || equals == 0)
      throw_input_error("--file", spec, "expected NAME=PATH");
    files[spec.substr(0, equals)] = read_text_file(spec.substr(equals + 1));
  }
  return files;
}

}  // namespace kernelarc
