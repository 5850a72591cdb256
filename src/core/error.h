// Errors that cross layers inside the parent process.
//
// A failing candidate is never an exception: it is a status in its Trace. Exceptions are for
// bad user input (InputError: a file, field or flag is wrong; the message says which and what was
// expected) and for broken infrastructure (InternalError: an I/O failure, a protocol violation,
// a bug). The CLI turns the first into a one-line message and exit code 2, the second into exit 3.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace kernelarc {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws an InputError formatted as "<where>: <field>: <problem>", e.g.
/// "problems/x/definition.json: inputs.x.dtype: expected one of float32, ..., got \"f32\"".
/// An empty field is left out.
[[noreturn]] void throw_input_error(std::string_view where, std::string_view field,
                                    std::string_view problem);

}  // namespace kernelarc
