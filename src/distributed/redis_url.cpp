#include <charconv>

#include <fmt/format.h>

#include "distributed/redis_client.h"

namespace kernelarc {

namespace {

int parse_number(std::string_view text, const std::string& url, std::string_view what) {
  int value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0)
    throw InputError(fmt::format("--redis {}: {} \"{}\" is not a number", url, what, text));
  return value;
}

}  // namespace

RedisAddress parse_redis_url(const std::string& url) {
  RedisAddress address;
  const std::string_view text = url;
  if (text.starts_with("unix://")) {
    std::string_view rest = text.substr(7);
    if (const auto query = rest.find("?db="); query != std::string_view::npos) {
      address.database = parse_number(rest.substr(query + 4), url, "database");
      rest = rest.substr(0, query);
    }
    if (rest.empty()) throw InputError(fmt::format("--redis {}: no socket path", url));
    address.socket_path = rest;
    return address;
  }
  if (!text.starts_with("redis://"))
    throw InputError(fmt::format(
        "--redis {}: expected redis://host[:port][/db] or unix:///path/to/socket", url));
  std::string_view rest = text.substr(8);
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    if (slash + 1 < rest.size())
      address.database = parse_number(rest.substr(slash + 1), url, "database");
    rest = rest.substr(0, slash);
  }
  if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    address.port = parse_number(rest.substr(colon + 1), url, "port");
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) throw InputError(fmt::format("--redis {}: no host", url));
  address.host = rest;
  return address;
}

}  // namespace kernelarc
