// One HTTP POST with libcurl: what the retry loop of HttpChatClient needs from the network and
// nothing more. Each call uses its own curl handle, so calls from several threads are safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kernelarc {

struct HttpReply {
  /// curl's reason when no HTTP answer came ("Couldn't connect to server: ...", "Timeout was
  /// reached: ..."); "" when the server answered (whatever its status).
  std::string transport_error;
  long status = 0;  ///< 0 when transport_error is set
  std::string body;
  /// The Retry-After header in seconds, when the server sent one as a number.
  std::optional<double> retry_after_s;
};

/// POSTs `body` to `url` with the headers ("Name: value"). `timeout_s` bounds the whole
/// attempt, connection included. Never throws for what the network or the server did.
HttpReply http_post(const std::string& url, const std::vector<std::string>& headers,
                    const std::string& body, double timeout_s);

}  // namespace kernelarc
