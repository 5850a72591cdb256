// Size expressions (core/expr.h's language) as C++ source, for code that kernelarc generates and
// another project's compiler builds: the exported launchers evaluate grid, block, workspace and
// dispatch conditions per call, from the axis values of that call.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace kernelarc {

/// The C++ text of a variable (an axis's local, a knob's value), or empty for an unknown name.
using CppVariableText = std::function<std::string(const std::string& name)>;

/// `expression` as a C++ expression of type long long with Python's integer semantics: `//`,
/// `%`, exact `/` and `**` call the helpers of kExportExprHeader; comparisons, `and`, `or` and
/// `not` give 0 or 1. Throws ExprError on a syntax error or an unknown variable.
std::string expr_to_cpp(std::string_view expression, const CppVariableText& variable);

/// The file name generated code includes for those helpers, and its content.
inline constexpr const char* kExportExprHeaderName = "ka_export_expr.h";
extern const char* const kExportExprHeader;

}  // namespace kernelarc
