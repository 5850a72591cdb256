// One row per problem of a coverage run (read? recognized as? which templates bind, and why
// not), printed as a table with totals or written as JSON.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/json_fields.h"

namespace kernelarc {

struct CoverageRow {
  std::string problem;  ///< the problem's name, or the file when it could not be read
  std::string source;   ///< the problem directory, or the KernelBench file it was imported from
  bool read = false;
  std::string recognized;  ///< "annotated", "matched", "fused" or "not served" (read only)
  std::string family;
  std::string summary;               ///< the recognition's summary, or why it is not served
  std::vector<std::string> binding;  ///< templates of the target that bind
  std::vector<std::string> why_not;  ///< why the problem cannot be read, recognized or bound
};

/// The table (problem, read, recognized as, templates that bind, why not), then the totals.
void print_coverage(const std::vector<CoverageRow>& rows, const std::string& target,
                    std::ostream& out);

/// {"target", "rows": [...], "totals": {...}}.
OrderedJson coverage_json(const std::vector<CoverageRow>& rows, const std::string& target);

}  // namespace kernelarc
