#include "store/records.h"

namespace kernelarc {

std::string_view run_status_name(RunStatus status) {
  switch (status) {
    case RunStatus::Running:
      return "running";
    case RunStatus::Finished:
      return "finished";
    case RunStatus::Failed:
      return "failed";
    case RunStatus::Stopped:
      return "stopped";
  }
  return "running";
}

std::string_view shown_run_status(const Run& run) {
  if (run.status == RunStatus::Running && run.owner && process_alive(*run.owner) == false)
    return "abandoned";
  return run_status_name(run.status);
}

std::string_view board_kind_name(BoardKind kind) {
  return kind == BoardKind::Redirect ? "redirect" : "conclusion";
}

}  // namespace kernelarc
