// Size expressions (core/expr.h's language) as C++ source, for code that kernelarc generates and
// another project's compiler builds: the exported launchers evaluate grid, block, workspace and
// dispatch conditions per call, from the axis values of that call.
#pragma once

#include <string>
#include <string_view>

#include "core/expr.h"

namespace kernelarc {

/// core's expr_to_cpp with the helpers of kExportExprHeader (namespace ka_export).
std::string expr_to_cpp(std::string_view expression, const CppVariableText& variable);

/// The file name generated code includes for those helpers, and its content.
inline constexpr const char* kExportExprHeaderName = "ka_export_expr.h";
extern const char* const kExportExprHeader;

}  // namespace kernelarc
