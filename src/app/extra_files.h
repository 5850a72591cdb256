// `--file NAME=PATH`: files added to every solution a template instantiates (e.g. a tuned
// cuBLASLt table the template includes when present).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kernelarc {

/// Name -> content; InputError naming --file for a spec without NAME= or an unreadable PATH.
std::map<std::string, std::string> read_extra_files(const std::vector<std::string>& specs);

}  // namespace kernelarc
