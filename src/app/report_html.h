// `kernelarc report`'s page: one self-contained HTML file (inline CSS, charts as inline SVG, no
// script, nothing fetched at view time) rendered from the report model that app/report_model.h
// gathers. The model is the contract between the two:
//
// {
//   "title": string,                                   required
//   "kind": "run" | "bench",                           required
//   "facts": [[label, value], ...],                    required; pairs of strings
//   "candidates": [                                    required, may be empty; proposal order
//     {"seq": integer, "id": integer,                  required
//      "agent": string, "label": string,               required
//      "status": string,                               required ("PASSED", "COMPILE_ERROR", ...)
//      "passed": boolean,                              required
//      "ms": number, "ci": [lo, hi],                   optional; time and its interval, in ms
//      "speedup": number,                              optional; over the baseline, >1 is faster
//      "parent": integer,                              optional; the parent's id, null for a root
//      "lineage": boolean, "winner": boolean,          optional; false when absent
//      "gflops": number, "intensity": number},         optional; GFLOP/s and FLOP/byte
//     ...],
//   "roofline": {"peak_gflops": number,                optional object; both numbers required,
//                "bandwidth_gbs": number,              peak_label optional
//                "peak_label": string},
//   "workloads": [{"name": string,                     optional; per workload, bars in order
//                  "bars": [{"label": string, "ms": number, "lo": number, "hi": number}]}],
//                                                      (lo and hi optional)
//   "conclusions": [string, ...],                      optional
//   "winner": {"label": string,                        optional object; label required
//              "parent_label": string,                 optional
//              "changes": string,                      optional: knobs changed from the parent
//              "files": [{"path": string, "content": string,           files optional,
//                         "diff": [{"op": " " | "+" | "-", "text": string}]}]},  diff optional
//   "diagnosis": [string, ...],                        optional
//   "problems": [{"name": string, "status": string,    optional; shown for kind "bench" only
//                 "speedup": number, "lo": number, "hi": number,   (these four optional)
//                 "sol_score": number, "kernelarc": string}]
// }
//
// "Optional" means absent or null; an absent list reads as empty. Numbers that are not finite
// are treated as absent, and an interval is drawn only where lo <= hi and both are positive (bench
// writes 0 for an interval it does not know).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kernelarc {

/// The page, sections in order: facts, progress, tree, roofline, workloads, problems (bench),
/// conclusions, winner, diagnosis; each under an <h2> whose id is that name. A chart without data
/// to draw is replaced by a sentence saying why. InputError ("report model: candidates[3].agent:
/// expected a string, ...") when a required field is missing or any field has the wrong type.
std::string render_report_html(const nlohmann::json& model);

}  // namespace kernelarc
