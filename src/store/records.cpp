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
  }
  return "running";
}

std::string_view board_kind_name(BoardKind kind) {
  return kind == BoardKind::Redirect ? "redirect" : "conclusion";
}

}  // namespace kernelarc
