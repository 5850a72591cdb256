// Shared by the lowering's tests: a case of tests/data/lower (a definition and the op graph the
// tracer wrote for it) lowered to a plan, and the plan's semantics checked through the plan
// interpreter against values computed directly in the test.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "lower/lower_plan.h"
#include "lower/plan_interpreter.h"

namespace kernelarc::lower_test {

using Json = OrderedJson;

struct Case {
  Definition definition;
  OpGraph graph;
  PlanLowering lowering;
};

/// Loads tests/data/lower/<name> and lowers it.
Case lower_case(const std::string& name);

std::vector<std::string> kernel_kinds(const Json& plan);
int temp_count(const Json& plan);
/// Expression nodes over every store value, stage value and scanned value of the plan.
int plan_expression_nodes(const Json& plan);
/// `value` rounded through `dtype`.
double rounded(DType dtype, double value);

/// Random inputs (integers in [0, int_range) for integer inputs, float scalars positive), the
/// plan run on them, and
/// every output compared with `reference` (values in the output's dtype, row-major).
void check_semantics(const Case& c, const AxisValues& vars,
                     const std::function<PlanBuffers(const PlanBuffers&)>& reference,
                     double tolerance = 1e-5, int64_t int_range = 4);

}  // namespace kernelarc::lower_test
