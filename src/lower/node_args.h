// A graph node's arguments as the lowerings read them: by position (or by keyword only, where an
// overload takes the argument as one), constant where a kernel's shape needs them, and an
// Unsupported naming the node and the argument otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lower/lowering.h"

namespace kernelarc::lowering {

struct NodeArgs {
  const GraphNode& node;
  std::string origin;  ///< "topk (op 7)": how errors name the node

  /// The argument at `position`, or the keyword `name` (only the keyword without a position);
  /// nullptr when absent.
  const GraphArg* find(std::optional<std::size_t> position, std::string_view name) const;
  /// The argument, which must be present and not None.
  const GraphArg& required(std::optional<std::size_t> position, std::string_view name) const;

  int tensor(Lowering& l, std::optional<std::size_t> position, std::string_view name) const;
  /// nullopt for an absent or None argument.
  std::optional<int> optional_tensor(Lowering& l, std::optional<std::size_t> position,
                                     std::string_view name) const;
  double number(std::optional<std::size_t> position, std::string_view name, double fallback) const;
  /// A constant bool (an integer counts as one); absent or None is `fallback`.
  bool flag(std::optional<std::size_t> position, std::string_view name, bool fallback) const;
  int64_t integer(std::optional<std::size_t> position, std::string_view name,
                  int64_t fallback) const;
  /// An int-list argument as `rank` constants: a single value repeats, absent or [] is
  /// `fallback` (itself repeated when of one element).
  std::vector<int64_t> ints(std::optional<std::size_t> position, std::string_view name,
                            std::size_t rank, std::vector<int64_t> fallback) const;

 private:
  /// A constant of type T read by `read` (nullopt: not one); absent or None is `fallback`.
  template <class T, class Read>
  T constant(std::optional<std::size_t> position, std::string_view name, T fallback,
             std::string_view what, Read read) const {
    const GraphArg* arg = find(position, name);
    if (!arg || arg->is_none()) return fallback;
    if (const std::optional<T> value = read(*arg)) return *value;
    throw Unsupported(origin + ": argument " + std::string(name) + " must be a constant " +
                      std::string(what));
  }
};

}  // namespace kernelarc::lowering
