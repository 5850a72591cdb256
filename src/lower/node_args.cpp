#include "lower/node_args.h"

#include <fmt/format.h>

namespace kernelarc::lowering {
namespace {

/// How an error names an argument: by its name, else by its position.
std::string argument(std::optional<std::size_t> position, std::string_view name) {
  if (!name.empty()) return std::string(name);
  return position ? std::to_string(*position) : std::string("?");
}

}  // namespace

const GraphArg* NodeArgs::find(std::optional<std::size_t> position, std::string_view name) const {
  return position ? node.arg(*position, name) : node.kwarg(name);
}

const GraphArg& NodeArgs::required(std::optional<std::size_t> position,
                                   std::string_view name) const {
  const GraphArg* arg = find(position, name);
  if (!arg || arg->is_none()) throw Unsupported(fmt::format("{}: missing {}", origin, name));
  return *arg;
}

int NodeArgs::tensor(Lowering& l, std::optional<std::size_t> position,
                     std::string_view name) const {
  const GraphArg* arg = find(position, name);
  const auto value = arg ? arg->as_value() : std::nullopt;
  if (!value) {
    throw Unsupported(
        fmt::format("{}: argument {} must be a tensor", origin, argument(position, name)));
  }
  return l.tensor_of(*value, origin);
}

std::optional<int> NodeArgs::optional_tensor(Lowering& l, std::optional<std::size_t> position,
                                             std::string_view name) const {
  const GraphArg* arg = find(position, name);
  if (!arg || arg->is_none()) return std::nullopt;
  return tensor(l, position, name);
}

double NodeArgs::number(std::optional<std::size_t> position, std::string_view name,
                        double fallback) const {
  return constant<double>(position, name, fallback, "number",
                          [](const GraphArg& arg) { return arg.as_float(); });
}

bool NodeArgs::flag(std::optional<std::size_t> position, std::string_view name,
                    bool fallback) const {
  return constant<bool>(position, name, fallback, "bool",
                        [](const GraphArg& arg) -> std::optional<bool> {
                          if (const auto value = arg.as_bool()) return value;
                          if (const auto value = arg.as_int()) return *value != 0;
                          return std::nullopt;
                        });
}

int64_t NodeArgs::integer(std::optional<std::size_t> position, std::string_view name,
                          int64_t fallback) const {
  return constant<int64_t>(position, name, fallback, "integer",
                           [](const GraphArg& arg) { return arg.as_int(); });
}

std::vector<int64_t> NodeArgs::ints(std::optional<std::size_t> position, std::string_view name,
                                    std::size_t rank, std::vector<int64_t> fallback) const {
  const GraphArg* arg = find(position, name);
  std::vector<int64_t> list = std::move(fallback);
  if (arg && !arg->is_none()) {
    const auto given = arg->as_int_list();
    if (!given) throw Unsupported(fmt::format("{}: {} must be constant integers", origin, name));
    if (!given->empty()) list = *given;
  }
  if (list.size() == 1) list.assign(rank, list[0]);
  if (list.size() != rank) {
    throw Unsupported(
        fmt::format("{}: {} has {} entries, expected {}", origin, name, list.size(), rank));
  }
  return list;
}

}  // namespace kernelarc::lowering
