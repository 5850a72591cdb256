#include "app/report_file.h"

#include <string>

#include "app/report_html.h"
#include "app/report_model.h"
#include "core/atomic_file.h"

namespace kernelarc {

std::filesystem::path write_run_report(Workspace& workspace, int64_t run_id,
                                       const std::filesystem::path& out) {
  std::filesystem::path path = out;
  if (path.empty()) {
    path = workspace.root() / "runs" / std::to_string(run_id) / "report.html";
    std::filesystem::create_directories(path.parent_path());
  }
  write_file_atomically(path, render_report_html(run_report_model(workspace, run_id)));
  return path;
}

void write_bench_report(const std::filesystem::path& bench_dir, const std::filesystem::path& out) {
  write_file_atomically(out, render_report_html(bench_report_model(bench_dir)));
}

}  // namespace kernelarc
