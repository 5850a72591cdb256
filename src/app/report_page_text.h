// Numbers and words of the report page: times, speedups and their intervals as text, what a
// candidate's outcome is, its tooltip, and the sentence that stands in for an empty chart.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "app/report_page_model.h"
#include "app/svg_chart.h"

namespace kernelarc::report_page {

// Every text the page shows goes through it, so the sections call it by its short name.
using svg::escape;

/// Four significant digits, trailing zeros kept so that a column of times reads evenly.
std::string ms_text(double ms);

/// "800 TFLOP/s", "3.6 GFLOP/s": the unit that keeps the number short.
std::string flops_text(double gflops);

std::string speedup_text(double speedup);

/// An interval is worth drawing only where it is one: bench writes 0 for an unknown bound.
bool valid_interval(const std::optional<double>& lo, const std::optional<double>& hi);

/// " (0.07650-0.07790)" for times, "" without a valid interval.
std::string ms_interval_text(const std::optional<double>& lo, const std::optional<double>& hi);

std::string speedup_interval_text(const std::optional<double>& lo, const std::optional<double>& hi);

bool usable_speedup(const Candidate& c);

enum class Outcome { Passed, Failed, Other };

/// Passed by the model's word; failed when the status is one the guard gives to a failure;
/// anything else (not evaluated yet, a status this build does not know) is neither.
Outcome outcome_of(const Candidate& c);

std::string candidate_tooltip(const Candidate& c);

std::string sentence(std::string_view text);

}  // namespace kernelarc::report_page
