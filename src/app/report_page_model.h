// The report model of app/report_html.h, checked once up front so that rendering never meets a
// wrong type: the page's sections read these structs, never the JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

// Named, so that these helpers stay apart from other files' in a unity batch. Each report_page
// file keeps its own helpers in an anonymous namespace inside this one, under names no other
// report_page file uses, as a batch merges those namespaces.
namespace kernelarc::report_page {

struct Candidate {
  int64_t seq = 0, id = 0;
  std::string agent, label, status;
  bool passed = false;
  std::optional<double> ms, ci_lo, ci_hi, speedup, gflops, intensity;
  std::optional<int64_t> parent;
  bool lineage = false, winner = false;
};

struct Bar {
  std::string label;
  double ms = 0;
  std::optional<double> lo, hi;
};

struct Workload {
  std::string name;
  std::vector<Bar> bars;
};

struct Roofline {
  double peak_gflops = 0, bandwidth_gbs = 0;
  std::string peak_label;
};

struct DiffLine {
  char op = ' ';
  std::string text;
};

struct SourceFile {
  std::string path, content;
  std::optional<std::vector<DiffLine>> diff;
};

struct Winner {
  std::string label;
  std::optional<std::string> parent_label;
  std::vector<SourceFile> files;
  /// "VEC 8->4": what the winner's knob point changed from its parent's (template winners'
  /// sources equal their parent's; the knobs are build flags).
  std::optional<std::string> changes;
};

struct Problem {
  std::string name, status, kernelarc;
  std::optional<double> speedup, lo, hi, sol_score;
};

struct Model {
  std::string title, kind;
  std::vector<std::pair<std::string, std::string>> facts;
  std::vector<Candidate> candidates;
  std::optional<Roofline> roofline;
  std::vector<Workload> workloads;
  std::vector<std::string> conclusions, diagnosis;
  std::optional<Winner> winner;
  std::optional<std::vector<Problem>> problems;
};

/// InputError naming the first field that breaks the contract in app/report_html.h.
Model parse_model(const nlohmann::json& json);

}  // namespace kernelarc::report_page
