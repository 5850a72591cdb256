// What the family binder tests share: a template that serves some families with one knob (the
// binders read its target, build and families, never its sources), and substring checks of the
// generated headers and error messages.
#pragma once

#include <string>
#include <vector>

#include "synth/kernel_template.h"

namespace kernelarc::testing {

inline KernelTemplate stub_template(const std::string& name, std::vector<std::string> families,
                                    const std::string& target, TemplateBuild build) {
  return KernelTemplate{.name = name,
                        .target = *device_kind_from_name(target),
                        .families = std::move(families),
                        .build = build,
                        .knobs = KnobSpace({Knob::int_set("VEC", {1, 2, 4, 8})}, {})};
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace kernelarc::testing
