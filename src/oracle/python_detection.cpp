#include "oracle/python_detection.h"

#include <map>
#include <mutex>

namespace kernelarc {
namespace {

std::mutex detected_mutex;
std::map<std::string, DetectedPython> detected;

}  // namespace

std::string detection_rule(const std::string& origin, const std::vector<std::string>& candidates) {
  std::string rule = origin;
  for (const std::string& candidate : candidates) rule += "\n" + candidate;
  return rule;
}

std::optional<DetectedPython> detected_python(const std::string& rule) {
  std::lock_guard lock(detected_mutex);
  const auto found = detected.find(rule);
  if (found == detected.end()) return std::nullopt;
  return found->second;
}

void remember_python(const std::string& rule, const DetectedPython& found) {
  std::lock_guard lock(detected_mutex);
  DetectedPython& entry = detected[rule];
  if (entry.interpreter != found.interpreter) entry.environment.clear();
  entry.interpreter = found.interpreter;
  if (!found.environment.empty()) entry.environment = found.environment;
}

}  // namespace kernelarc
