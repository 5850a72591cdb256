// The board's verified conclusions: when a child candidate is faster than its parent beyond the
// ends of both confidence intervals, what changed between them and by how much, in words and in
// a form agents can apply.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimize/shared_view.h"

namespace kernelarc {

/// The knobs whose values differ, by name.
std::vector<KnobChange> knob_changes(const KnobPoint& from, const KnobPoint& to);

/// A conclusion when `child` (same template as `parent`) is significantly faster; nullopt
/// otherwise, or when no knob changed.
std::optional<Conclusion> conclude(const std::string& template_name, int64_t parent_candidate,
                                   const KnobPoint& parent_point, const Measurement& parent,
                                   int64_t child_candidate, const KnobPoint& child_point,
                                   const Measurement& child);

/// "(rmsnorm_f32, batch_size=1025 hidden_size=4096, cpu): in rowreduce_cpu changing
/// ROWS_PER_TASK from 16 to 4 made it faster by 1.31x (1.22-1.40), evidence candidates 12 and 17"
std::string conclusion_text(const Conclusion& conclusion, const std::string& problem,
                            const std::string& workload_class, const std::string& device);

/// "ROWS_PER_TASK 16->4, VEC 4->8"
std::string changes_text(const std::vector<KnobChange>& changes);

/// [{"knob": "VEC", "from": 4, "to": 8}, ...]
nlohmann::json knob_changes_to_json(const std::vector<KnobChange>& changes);
/// The inverse; InputError naming `where` on a malformed entry.
std::vector<KnobChange> knob_changes_from_json(const nlohmann::json& json,
                                               const std::string& where);
/// {"template", "changes", "speedup": {"value", "low", "high"}, "before", "after"}
nlohmann::json conclusion_to_json(const Conclusion& conclusion);

}  // namespace kernelarc
