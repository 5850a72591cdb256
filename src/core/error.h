// Errors that cross layers inside the parent process.
//
// A failing candidate is never an exception: it is a status in its Trace. Exceptions are for
// bad user input (InputError: a file, field or flag is wrong; the message says which and what was
// expected), for broken infrastructure (InternalError: an I/O failure, a protocol violation,
// a bug) and for a stop request that cut work short (Interrupted). The CLI turns the first into a
// one-line message and exit code 2, the second into exit 3; the third is no failure at all, and
// the run that asked to stop catches it.
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

/// "interrupted by SIGINT" (the number where the signal has no name).
std::string interruption_text(int signal);

/// A stop request (SIGINT, SIGTERM: cli/interrupt.h) ended work in progress, e.g. the PyTorch
/// reference's draw: nothing it would have produced exists, and nothing of it is to be recorded
/// as a failure. A catch of std::exception on its way must let it pass.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal);
  /// The signal that asked to stop.
  int signal() const { return signal_; }

 private:
  int signal_;
};

/// Throws an InputError formatted as "<where>: <field>: <problem>", e.g.
/// "problems/x/definition.json: inputs.x.dtype: expected one of float32, ..., got \"f32\"".
/// An empty field is left out.
[[noreturn]] void throw_input_error(std::string_view where, std::string_view field,
                                    std::string_view problem);

}  // namespace kernelarc
