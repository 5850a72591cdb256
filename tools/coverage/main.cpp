// coverage: how much of a corpus kernelarc serves. For every problem (a problem directory, or a
// KernelBench file imported into a scratch directory first) it says whether the problem reads,
// how it is recognized (a hand-written family, the fused family, or not served and why) and which
// templates of the target bind to it, then totals.
//
//   coverage [--device cuda|cpu] [--python P] [--json FILE] <problem dirs, KernelBench .py files
//            or directories of either>...
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "app/recognize.h"
#include "backend/backend.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "core/problem.h"
#include "coverage_rows.h"
#include "oracle/subprocess.h"
#include "synth/bound_template.h"
#include "synth/kernel_template.h"

namespace kernelarc {

namespace {

struct CoverageFlags {
  std::vector<std::string> paths;
  std::string device = "cuda";
  std::string python;
  std::string workspace = ".kernelarc";
  std::string templates;
  std::string json;
};

/// A corpus entry: a problem directory, or a KernelBench file to import.
struct Entry {
  std::filesystem::path path;
  bool kernelbench = false;
};

CoverageRow unread_row(std::string problem, std::string source, std::string why) {
  CoverageRow row;
  row.problem = std::move(problem);
  row.source = std::move(source);
  row.why_not.push_back(std::move(why));
  return row;
}

bool is_problem_dir(const std::filesystem::path& path) {
  return std::filesystem::is_regular_file(path / "definition.json");
}

/// The entries a path stands for: itself, or the problem directories and .py files directly in
/// it (sorted). A path that is none of these becomes an unread row.
std::vector<Entry> expand(const std::filesystem::path& path, std::vector<CoverageRow>& unread) {
  if (std::filesystem::is_regular_file(path) && path.extension() == ".py") return {{path, true}};
  if (is_problem_dir(path)) return {{path, false}};
  std::vector<Entry> entries;
  if (std::filesystem::is_directory(path)) {
    for (const auto& item : std::filesystem::directory_iterator(path)) {
      if (is_problem_dir(item.path())) entries.push_back({item.path(), false});
      if (item.is_regular_file() && item.path().extension() == ".py")
        entries.push_back({item.path(), true});
    }
    // KernelBench numbers its files: "2_b.py" before "10_a.py".
    const auto key = [](const Entry& entry) {
      const std::string name = entry.path.filename().string();
      const std::size_t digits = name.find_first_not_of("0123456789");
      const std::size_t number =
          digits == 0 || digits > 18 ? SIZE_MAX : std::stoull(name.substr(0, digits));
      return std::pair(number, name);
    };
    std::sort(entries.begin(), entries.end(),
              [&](const Entry& a, const Entry& b) { return key(a) < key(b); });
  }
  if (entries.empty()) {
    unread.push_back(unread_row(path.filename().string(), path.string(),
                                "neither a problem directory, a KernelBench .py file, nor a "
                                "directory holding either"));
  }
  return entries;
}

/// Imports the KernelBench files with `kernelarc import kernelbench` (one interpreter for all);
/// returns each file's problem directory, or its row when the import failed.
std::map<std::string, std::filesystem::path> import_kernelbench(
    const std::vector<std::filesystem::path>& files, const CoverageFlags& flags,
    std::map<std::string, CoverageRow>& failed) {
  const std::filesystem::path out = std::filesystem::path(flags.workspace) / "coverage-kernelbench";
  std::filesystem::create_directories(out);
  const std::filesystem::path report = out / fmt::format("report-{}.json", getpid());
  const std::filesystem::path log = out / fmt::format("import-{}.log", getpid());
  std::vector<std::string> argv = {KERNELARC_BINARY, "import", "kernelbench"};
  for (const auto& file : files) argv.push_back(file.string());
  argv.insert(argv.end(), {out.string(), "--report", report.string()});
  if (!flags.python.empty()) argv.insert(argv.end(), {"--python", flags.python});
  std::cerr << fmt::format("importing {} KernelBench files into {}\n", files.size(), out.string());
  const ProcessResult process = run_process(argv, log, [] { return true; });
  if (!std::filesystem::exists(report)) {
    throw InputError(fmt::format("kernelarc import kernelbench wrote no report ({}):\n{}",
                                 describe_end(process), file_tail(log)));
  }
  std::map<std::string, std::filesystem::path> imported;
  for (const OrderedJson& entry : parse_json_text(read_text_file(report), report.string())) {
    const std::string file = entry.at("file").get<std::string>();
    if (entry.contains("problem_dir")) {
      imported[file] = entry.at("problem_dir").get<std::string>();
    } else {
      failed[file] = unread_row(std::filesystem::path(file).stem().string(), file,
                                "import: " + entry.at("error").get<std::string>());
    }
  }
  std::filesystem::remove(report);
  std::filesystem::remove(log);
  return imported;
}

CoverageRow cover(const std::filesystem::path& dir, const std::string& source,
                  const std::vector<KernelTemplate>& library, const CoverageFlags& flags,
                  DeviceKind target) {
  CoverageRow row;
  row.problem = dir.filename().string();
  row.source = source;
  Problem problem;
  try {
    problem = load_problem(dir);
  } catch (const InputError& error) {
    row.why_not.push_back(error.what());
    return row;
  }
  row.problem = problem.definition.name;
  row.read = true;
  Recognition recognition;
  try {
    recognition =
        recognize(problem, recognize_options(flags.workspace, flags.python, flags.device));
  } catch (const std::exception& error) {
    recognition.reason = std::string("recognition failed: ") + error.what();
  }
  apply_recognition(problem, recognition);
  row.recognized = source_name(recognition.source);
  row.family = recognition.family;
  row.summary = recognition.served() ? recognition.summary : recognition.reason;
  if (!recognition.served()) {
    row.why_not.push_back(recognition.reason);
    return row;
  }
  const std::vector<TemplateMatch> matches = match_templates(library, problem, target);
  for (const TemplateMatch& match : matches) {
    if (match.bound)
      row.binding.push_back(match.kernel->name);
    else
      row.why_not.push_back(fmt::format("{}: {}", match.kernel->name, match.reason));
  }
  if (matches.empty()) row.why_not.push_back(describe_no_template(library, problem, target));
  return row;
}

int run_coverage(const CoverageFlags& flags) {
  const DeviceKind kind = backend_for(flags.device).kind();
  const std::string target(device_kind_name(kind));
  const auto library = load_template_library(
      flags.templates.empty() ? default_template_root() : std::filesystem::path(flags.templates));

  std::vector<CoverageRow> unread;
  std::vector<Entry> entries;
  for (const std::string& path : flags.paths) {
    for (Entry& entry : expand(path, unread)) entries.push_back(std::move(entry));
  }
  std::vector<std::filesystem::path> kernelbench;
  for (const Entry& entry : entries)
    if (entry.kernelbench) kernelbench.push_back(entry.path);
  std::map<std::string, CoverageRow> failed_imports;
  const auto imported = kernelbench.empty()
                            ? std::map<std::string, std::filesystem::path>{}
                            : import_kernelbench(kernelbench, flags, failed_imports);

  std::vector<CoverageRow> rows = unread;
  for (const Entry& entry : entries) {
    const std::string source = entry.path.string();
    if (!entry.kernelbench) {
      rows.push_back(cover(entry.path, source, library, flags, kind));
    } else if (const auto found = imported.find(source); found != imported.end()) {
      rows.push_back(cover(found->second, source, library, flags, kind));
    } else {
      rows.push_back(failed_imports.at(source));
    }
    std::cerr << fmt::format("[{}/{}] {}\n", rows.size() - unread.size(), entries.size(),
                             rows.back().problem);
  }
  print_coverage(rows, target, std::cout);
  if (!flags.json.empty()) write_file_atomically(flags.json, coverage_json(rows, target).dump(2));
  return 0;
}

}  // namespace

}  // namespace kernelarc

int main(int argc, char** argv) {
  kernelarc::CoverageFlags flags;
  CLI::App app{
      "coverage: which problems of a corpus kernelarc reads, recognizes and binds "
      "templates to"};
  app.add_option("paths", flags.paths,
                 "problem directories, KernelBench .py files, or directories of either")
      ->required();
  app.add_option("--device", flags.device, "cuda or cpu: whose templates must bind")
      ->capture_default_str();
  app.add_option("--python", flags.python, "Python with torch (default: as the oracle)");
  app.add_option("--workspace", flags.workspace,
                 "trace cache, and where KernelBench files are imported (coverage-kernelbench/)")
      ->capture_default_str();
  app.add_option("--templates", flags.templates,
                 "template library root (default: the bundled one)");
  app.add_option("--json", flags.json, "also write the table as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    return kernelarc::run_coverage(flags);
  } catch (const kernelarc::InputError& error) {
    std::cerr << "error: " << error.what() << '\n';
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "internal error: " << error.what() << '\n';
    return 3;
  }
}
