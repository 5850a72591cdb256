#include "llm/http_post.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <memory>
#include <mutex>
#include <string_view>

#include <curl/curl.h>

#include "core/error.h"
#include "core/text.h"

namespace kernelarc {

namespace {

struct CurlDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;

// curl_global_init is not itself thread-safe, and must run before any thread creates a handle.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw InternalError("curl_global_init failed");
  });
}

bool append_header(HeaderList& list, const char* line) {
  curl_slist* head = curl_slist_append(list.get(), line);
  if (head == nullptr) return false;
  (void)list.release();  // `head` is the same list one entry longer, or a new one
  list.reset(head);
  return true;
}

size_t append_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

// Keeps the Retry-After header when it is a number of seconds (the HTTP-date form is left to
// the exponential backoff).
size_t read_header(char* data, size_t size, size_t count, void* user) {
  const std::string_view line(data, size * count);
  const auto colon = line.find(':');
  if (colon != std::string_view::npos && iequals(trim(line.substr(0, colon)), "retry-after")) {
    const std::string_view value = trim(line.substr(colon + 1));
    double seconds = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (error == std::errc() && end == value.data() + value.size() && std::isfinite(seconds) &&
        seconds >= 0)
      static_cast<HttpReply*>(user)->retry_after_s = seconds;
  }
  return size * count;
}

}  // namespace

HttpReply http_post(const std::string& url, const std::vector<std::string>& headers,
                    const std::string& body, double timeout_s) {
  init_curl_once();
  HttpReply reply;
  CurlHandle curl(curl_easy_init());
  if (!curl) {
    reply.transport_error = "curl_easy_init failed";
    return reply;
  }
  HeaderList header_list;
  for (const std::string& header : headers) {
    if (!append_header(header_list, header.c_str())) {
      reply.transport_error = "out of memory building the request headers";
      return reply;
    }
  }
  // Without this curl waits for a "100 Continue" that many model servers never send.
  if (!append_header(header_list, "Expect:")) {
    reply.transport_error = "out of memory building the request headers";
    return reply;
  }
  const auto timeout_ms = static_cast<long>(std::max(1.0, std::ceil(timeout_s * 1000)));
  char error_buffer[CURL_ERROR_SIZE] = {};
  CURL* handle = curl.get();
  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl_easy_setopt(handle, CURLOPT_POST, 1L);
  curl_easy_setopt(handle, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  // Signals for timeouts are unsafe with threads; the threaded resolver does not need them.
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, read_header);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &reply);
  curl_easy_setopt(handle, CURLOPT_ACCEPT_ENCODING, "");
  const CURLcode code = curl_easy_perform(handle);
  if (code != CURLE_OK) {
    reply.transport_error = curl_easy_strerror(code);
    if (error_buffer[0] != '\0') reply.transport_error += std::string(": ") + error_buffer;
    reply.body.clear();
    reply.retry_after_s.reset();
    return reply;
  }
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

}  // namespace kernelarc
