#include "app/report_file.h"

#include "app/report_html.h"
#include "app/report_model.h"
#include "core/atomic_file.h"

namespace kernelarc {

void write_run_report(Workspace& workspace, int64_t run_id, const std::filesystem::path& out) {
  write_file_atomically(out, render_report_html(run_report_model(workspace, run_id)));
}

void write_bench_report(const std::filesystem::path& bench_dir, const std::filesystem::path& out) {
  write_file_atomically(out, render_report_html(bench_report_model(bench_dir)));
}

}  // namespace kernelarc
