// The Python with torch, found once per process: detection starts interpreters that import
// torch (seconds each, more for one that lacks it), so every oracle, tracer and import of one
// command shares what the first found, per detection rule.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kernelarc {

struct DetectedPython {
  std::string interpreter;  ///< the candidate that imported torch
  std::string environment;  ///< "python 3.11.2, torch 1.13.0 (cpu)"; "" until an oracle ran it
};

/// The key of a detection: which rule chose the candidates (python_candidates' origin) and the
/// candidates themselves, so a changed KERNELARC_PYTHON or --python detects anew.
std::string detection_rule(const std::string& origin, const std::vector<std::string>& candidates);

/// What an earlier detection under `rule` found in this process, or nullopt.
std::optional<DetectedPython> detected_python(const std::string& rule);

/// Records a success; an environment already known is kept when `found` has none.
void remember_python(const std::string& rule, const DetectedPython& found);

}  // namespace kernelarc
