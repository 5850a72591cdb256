// What the family binder tests share: a template that serves some families with one knob (the
// binders read its target, build and families, never its sources), substring checks of the
// generated headers and error messages, and a driver program run against a generated header.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../core/test_support.h"
#include "source_dir.h"
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

/// The start of a driver's source: the includes and `make(data, dtype, {shape...})`, a
/// contiguous ka_tensor.
inline const char* const kDriverPrelude = R"(
#include <cstdio>
#include <initializer_list>
#include "ka_problem.h"
static ka_tensor make(void* data, int dtype, std::initializer_list<long long> shape) {
  ka_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.ndim = static_cast<int>(shape.size());
  int d = 0;
  for (long long s : shape) t.shape[d++] = s;
  long long stride = 1;
  for (d = t.ndim - 1; d >= 0; --d) t.stride[d] = stride, stride *= t.shape[d];
  return t;
}
)";

/// Compiles kDriverPrelude + `main_source` as host C++ beside `header` (as ka_problem.h), runs
/// it and returns what it printed; a failed build or a non-zero exit is a test failure.
/// `include_flags` adds directories (CUDA's, for a CUDA header).
inline std::string run_header_driver(const std::string& header, const std::string& main_source,
                                     const std::string& include_flags = "") {
  const TempDir dir;
  dir.write("ka_problem.h", header);
  dir.write("driver.cpp", std::string(kDriverPrelude) + main_source);
  const std::string exe = (dir / "driver").string();
  const std::string command = "c++ -std=c++20 -O1 -I" + dir.path().string() + " -I" +
                              (kSource / "templates/common").string() + " -I" +
                              (kSource / "include").string() + " " + include_flags + " " +
                              (dir / "driver.cpp").string() + " -o " + exe;
  if (std::system(command.c_str()) != 0) {
    ADD_FAILURE() << "the driver did not build: " << command;
    return "";
  }
  FILE* pipe = popen(exe.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << exe;
    return "";
  }
  std::string output;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  EXPECT_EQ(pclose(pipe), 0) << output;
  return output;
}

}  // namespace kernelarc::testing
