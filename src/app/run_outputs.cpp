#include "app/run_outputs.h"

#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "eval/trace.h"

namespace kernelarc {

void write_run_outputs(const std::filesystem::path& dir, const Finalist& best,
                       const nlohmann::json& summary) {
  std::filesystem::create_directories(dir / "sources");
  auto write = [&](const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream file(path);
    if (!file) throw InputError(fmt::format("cannot write {}", path.string()));
    file << text;
  };
  write(dir / "solution.json", solution_to_json(best.solution).dump(2) + "\n");
  for (const SourceFile& source : best.solution.sources)
    write(dir / "sources" / source.path, source.content);
  OrderedJson traces = OrderedJson::array();
  for (const Trace& trace : best.traces) traces.push_back(trace_to_json(trace));
  write(dir / "traces.json", traces.dump(2) + "\n");
  write(dir / "summary.json", summary.dump(2) + "\n");
}

}  // namespace kernelarc
