#include "backend/worker/worker_protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>

#include "core/error.h"

namespace kernelarc {
namespace {

constexpr std::array<std::string_view, 8> kOutcomeNames = {
    "ok",          "failed",        "crashed", "timed_out", "out_of_memory",
    "load_failed", "out_of_bounds", "tampered"};

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t written = send(fd, data, size, MSG_NOSIGNAL);
    if (written < 0 && errno == ENOTSOCK) written = write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

ReadStatus read_exact(int fd, char* data, std::size_t size,
                      std::optional<std::chrono::steady_clock::time_point> deadline) {
  while (size > 0) {
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return ReadStatus::TimedOut;
      pollfd poll_fd{fd, POLLIN, 0};
      int ready = poll(&poll_fd, 1, static_cast<int>(left.count()) + 1);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) continue;  // the deadline check above decides
    }
    ssize_t got = read(fd, data, size);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return ReadStatus::Eof;
    data += got;
    size -= static_cast<std::size_t>(got);
  }
  return ReadStatus::Ok;
}

std::vector<Json> tensors_to_json(const std::vector<ArenaTensor>& tensors) {
  std::vector<Json> list;
  for (const ArenaTensor& tensor : tensors)
    list.push_back({{"dtype", static_cast<int>(tensor.dtype)},
                    {"shape", tensor.shape},
                    {"offset", tensor.offset},
                    {"name", tensor.name}});
  return list;
}

std::vector<ArenaTensor> tensors_from_json(const Json& list) {
  std::vector<ArenaTensor> tensors;
  for (const Json& item : list) {
    const std::optional<DType> dtype = dtype_from_abi(item.at("dtype").get<int>());
    if (!dtype) throw InternalError("bad dtype in request");
    tensors.push_back({*dtype, item.at("shape").get<std::vector<int64_t>>(),
                       item.at("offset").get<std::size_t>(), item.value("name", std::string())});
  }
  return tensors;
}

}  // namespace

std::string_view call_outcome_name(CallOutcome outcome) {
  return kOutcomeNames.at(static_cast<std::size_t>(outcome));
}

std::optional<CallOutcome> call_outcome_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kOutcomeNames.size(); ++i)
    if (kOutcomeNames[i] == name) return static_cast<CallOutcome>(i);
  return std::nullopt;
}

std::size_t arena_tensor_bytes(const ArenaTensor& tensor) {
  std::size_t count = 1;
  for (int64_t dim : tensor.shape) {
    if (dim < 0) return 0;
    count *= static_cast<std::size_t>(dim);
  }
  return count * dtype_size(tensor.dtype);
}

std::string request_problem(const ExecuteRequest& request, std::size_t arena_bytes) {
  auto check = [&](const std::vector<ArenaTensor>& tensors, const char* kind) -> std::string {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const ArenaTensor& tensor = tensors[i];
      std::string which = std::string(kind) + " " + std::to_string(i);
      if (tensor.shape.size() > KA_MAX_DIMS) return which + " has more than 8 dimensions";
      for (int64_t dim : tensor.shape)
        if (dim < 0) return which + " has a negative dimension";
      std::size_t bytes = arena_tensor_bytes(tensor);
      if (tensor.offset > arena_bytes || bytes > arena_bytes - tensor.offset)
        return which + " (" + std::to_string(bytes) + " bytes at offset " +
               std::to_string(tensor.offset) + ") lies outside the arena of " +
               std::to_string(arena_bytes) + " bytes";
    }
    return {};
  };
  if (std::string problem = check(request.inputs, "input"); !problem.empty()) return problem;
  if (std::string problem = check(request.outputs, "output"); !problem.empty()) return problem;
  if (request.output_poison.size() != request.outputs.size())
    return "output_poison has " + std::to_string(request.output_poison.size()) + " patterns for " +
           std::to_string(request.outputs.size()) + " outputs";
  if (request.warmup < 0 || request.iterations < 1)
    return "warmup must be >= 0 and iterations >= 1";
  if (request.address_slot && (*request.address_slot < 0 || *request.address_slot >= kAddressSlots))
    return "address_slot must lie in [0, " + std::to_string(kAddressSlots) + ")";
  if (request.phase != RequestPhase::Whole && (request.warmup != 0 || request.iterations != 1))
    return "a staged call has warmup 0 and iterations 1";
  return {};
}

bool write_message(int fd, const Json& message) {
  // Candidate text (ka_last_error) may be invalid UTF-8; it must not make dump() throw.
  std::string body = message.dump(-1, ' ', false, Json::error_handler_t::replace);
  auto size = static_cast<uint32_t>(body.size());
  char header[4] = {static_cast<char>(size & 0xff), static_cast<char>((size >> 8) & 0xff),
                    static_cast<char>((size >> 16) & 0xff), static_cast<char>(size >> 24)};
  return write_all(fd, header, sizeof header) && write_all(fd, body.data(), body.size());
}

ReadStatus read_message(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
                        Json& message, std::string& error) {
  unsigned char header[4];
  ReadStatus status = read_exact(fd, reinterpret_cast<char*>(header), sizeof header, deadline);
  if (status != ReadStatus::Ok) return status;
  std::size_t size = header[0] | (header[1] << 8) | (header[2] << 16) |
                     (static_cast<std::size_t>(header[3]) << 24);
  if (size > kMaxMessageBytes) {
    error = "a frame of " + std::to_string(size) + " bytes (the limit is " +
            std::to_string(kMaxMessageBytes) + ")";
    return ReadStatus::Malformed;
  }
  std::string body(size, '\0');
  status = read_exact(fd, body.data(), size, deadline);
  if (status == ReadStatus::Eof) {
    error = "a frame cut short";
    return ReadStatus::Malformed;
  }
  if (status != ReadStatus::Ok) return status;
  message = Json::parse(body, nullptr, false);
  if (message.is_discarded() || !message.is_object() || !message.contains("type")) {
    error = "a frame that is not a JSON object with a type";
    return ReadStatus::Malformed;
  }
  return ReadStatus::Ok;
}

Json request_to_json(const ExecuteRequest& request) {
  return {{"inputs", tensors_to_json(request.inputs)},
          {"outputs", tensors_to_json(request.outputs)},
          {"output_poison", request.output_poison},
          {"workspace_bytes", request.workspace_bytes},
          {"warmup", request.warmup},
          {"iterations", request.iterations},
          {"flush_cache", request.flush_cache},
          {"copy_back", request.copy_back},
          {"address_slot", request.address_slot ? Json(*request.address_slot) : Json()},
          {"null_kernel", request.null_kernel},
          {"phase", static_cast<int>(request.phase)}};
}

ExecuteRequest request_from_json(const Json& json) {
  ExecuteRequest request;
  request.inputs = tensors_from_json(json.at("inputs"));
  request.outputs = tensors_from_json(json.at("outputs"));
  request.output_poison = json.at("output_poison").get<std::vector<std::vector<uint8_t>>>();
  request.workspace_bytes = json.at("workspace_bytes").get<std::size_t>();
  request.warmup = json.at("warmup").get<int>();
  request.iterations = json.at("iterations").get<int>();
  request.flush_cache = json.at("flush_cache").get<bool>();
  request.copy_back = json.at("copy_back").get<bool>();
  if (json.contains("address_slot") && !json.at("address_slot").is_null())
    request.address_slot = json.at("address_slot").get<int>();
  request.null_kernel = json.value("null_kernel", false);
  const int phase = json.value("phase", 0);
  if (phase < 0 || phase > static_cast<int>(RequestPhase::Collect))
    throw InternalError("bad execute request: phase " + std::to_string(phase));
  request.phase = static_cast<RequestPhase>(phase);
  return request;
}

Json result_to_json(const ExecuteResult& result) {
  return {{"outcome", call_outcome_name(result.outcome)},
          {"return_code", result.return_code},
          {"message", result.message},
          {"times_ns", result.times_ns},
          {"launched", result.launched},
          {"clock", result.clock},
          {"threads_before", result.threads_before},
          {"threads_after", result.threads_after},
          {"kernels", result.kernels},
          {"device_status_before", result.device_status_before},
          {"device_status_after", result.device_status_after},
          {"host_link_seconds", result.host_link_seconds}};
}

ExecuteResult result_from_json(const Json& json) {
  ExecuteResult result;
  auto outcome = call_outcome_from_name(json.at("outcome").get<std::string>());
  if (!outcome) throw InternalError("unknown outcome " + json.at("outcome").dump());
  result.outcome = *outcome;
  result.return_code = json.at("return_code").get<int>();
  result.message = json.at("message").get<std::string>();
  result.times_ns = json.at("times_ns").get<std::vector<double>>();
  result.launched = json.at("launched").get<std::vector<std::vector<std::string>>>();
  result.clock = json.at("clock").get<std::string>();
  result.threads_before = json.at("threads_before").get<int>();
  result.threads_after = json.at("threads_after").get<int>();
  result.kernels = json.at("kernels");
  if (!result.kernels.is_array()) throw InternalError("kernels is not an array");
  result.device_status_before = json.at("device_status_before");
  result.device_status_after = json.at("device_status_after");
  result.host_link_seconds = json.at("host_link_seconds").get<double>();
  return result;
}

}  // namespace kernelarc
