// The wire protocol between the parent (Worker) and `kernelarc worker` (worker_main).
//
// Each message is a little-endian uint32 byte count followed by that many bytes of JSON, an
// object with a "type". Tensor bytes never travel here: they live in the shared arena.
//
//   worker -> parent, once at start:  {"type":"hello","protocol":N,"pid":P,"sandbox":S,
//                                      "integrity":{"objects":[...],"bytes":B}}
//                                     (S: SandboxStatus::to_json())
//                                     or {"type":"error","message":M} before exiting
//   parent -> worker:                 {"type":"load","id":I,"library":L,"symbol":S}
//                                     {"type":"remap","id":I,"bytes":B}
//                                     {"type":"execute","id":I,"request":{...}}
//                                     {"type":"describe","id":I}
//   worker -> parent, one per request: {"type":"result","id":I,"result":{...}}
//                                     {"type":"description","id":I,"kind":K,"description":D,
//                                      "arch":A} (A: "sm_90", "" on the CPU)
//                                     {"type":"error","id":I,"message":M} (a malformed request)
//
// The id echoes the request's, so a reply forged by a candidate writing to the pipe out of turn
// is caught as a protocol violation.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "backend/worker/worker.h"

namespace kernelarc {

using Json = nlohmann::json;

/// Bumped whenever a message changes shape; the parent refuses a worker of another version.
inline constexpr int kWorkerProtocolVersion = 4;
/// The outcome names are part of the protocol: a new outcome needs a new version.
static_assert(static_cast<int>(CallOutcome::LoadFailed) == 5, "update the protocol version");
/// A bigger frame is a protocol violation (no message legitimately comes near it).
inline constexpr std::size_t kMaxMessageBytes = std::size_t{16} << 20;

/// Writes one frame. Returns false when the peer is gone; never raises SIGPIPE on a socket.
bool write_message(int fd, const Json& message);

enum class ReadStatus { Ok, Eof, TimedOut, Malformed };

/// Reads one frame. Without a deadline it blocks; with one it gives up (TimedOut) at that time,
/// having possibly consumed part of a frame. `error` explains Malformed.
ReadStatus read_message(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
                        Json& message, std::string& error);

std::optional<CallOutcome> call_outcome_from_name(std::string_view name);

/// Bytes of a contiguous tensor (one element for a 0-D tensor); 0 for a negative dimension.
std::size_t arena_tensor_bytes(const ArenaTensor& tensor);
/// Why a request cannot run against an arena of `arena_bytes` (a tensor outside the arena, too
/// many dimensions, a poison pattern per output missing); empty when it can.
std::string request_problem(const ExecuteRequest& request, std::size_t arena_bytes);

Json request_to_json(const ExecuteRequest& request);
/// Throws Json::exception (or InternalError) on a malformed request.
ExecuteRequest request_from_json(const Json& json);
/// log_tail stays on the parent's side and is not serialized.
Json result_to_json(const ExecuteResult& result);
/// Throws Json::exception (or InternalError) on a malformed result.
ExecuteResult result_from_json(const Json& json);

}  // namespace kernelarc
