// cublaslt_tune: measures cuBLASLt's Expert-API configurations for every GEMM shape of a
// gemm-family problem and writes the table that gemm_cublaslt compiles in (MODE=table).
//
//   cublaslt_tune problems/cuda/gemm_bf16 --out table.json --header ka_cublaslt_table.h
//   cublaslt_tune --load table.json --header ka_cublaslt_table.h     (no GPU needed)
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/problem.h"
#include "gemm_shapes.h"
#include "table.h"
#include "tuner.h"

namespace {

using namespace kernelarc;
using namespace kernelarc::cublaslt;

std::string shape_text(int64_t m, int64_t n, int64_t k) {
  return fmt::format("{}x{}x{}", m, n, k);
}

void print_reports(const std::vector<ShapeReport>& reports) {
  fmt::print("{:<20} {:>8} {:>14} {:>10} {:>8}\n", "shape (MxNxK)", "configs", "heuristic us",
             "best us", "speedup");
  for (const ShapeReport& report : reports) {
    fmt::print("{:<20} {:>8} {:>14.2f} {:>10.2f} {:>7.3f}x\n",
               shape_text(report.shape.m, report.shape.n, report.shape.k), report.configs_tried,
               report.heuristic_us, report.best_us, report.heuristic_us / report.best_us);
  }
}

/// A loaded table does not know how many configurations were tried.
void print_table(const Table& table) {
  fmt::print("{} (cuBLASLt {})\n", table.device, table.cublaslt_version);
  fmt::print("{:<20} {:>8} {:>14} {:>10} {:>8}\n", "shape (MxNxK)", "configs", "heuristic us",
             "best us", "speedup");
  for (const TableEntry& entry : table.entries) {
    const double speedup = entry.median_us > 0 ? entry.heuristic_median_us / entry.median_us : 1.0;
    fmt::print("{:<20} {:>8} {:>14.2f} {:>10.2f} {:>7.3f}x\n",
               shape_text(entry.m, entry.n, entry.k), "-", entry.heuristic_median_us,
               entry.median_us, speedup);
  }
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  file << text;
  if (!file.flush()) throw InputError(path + ": cannot write");
}

int run(int argc, char** argv) {
  CLI::App app{"Tune cuBLASLt's Expert-API configurations for the GEMM shapes of a problem."};
  std::string problem_dir, load_path, out_path, header_path;
  TuneOptions options;
  app.add_option("problem", problem_dir, "gemm-family problem directory to tune");
  app.add_option("--load", load_path, "reload a table.json instead of tuning (no GPU needed)");
  app.add_option("--out", out_path, "write the table as JSON");
  app.add_option("--header", header_path, "write the table as ka_cublaslt_table.h");
  app.add_option("--runs", options.runs, "timed runs per configuration")
      ->check(CLI::Range(1, 100000));
  app.add_option("--warmup", options.warmup, "untimed runs before the timed ones")
      ->check(CLI::Range(0, 100000));
  app.add_option("--max-configs", options.max_configs,
                 "valid configurations timed per shape, besides the heuristic's")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--workspace-bytes", options.workspace_bytes,
                 "cuBLASLt workspace (gemm_cublaslt declares 32 MiB)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  if (problem_dir.empty() == load_path.empty()) {
    std::fprintf(stderr, "cublaslt_tune: give either a problem directory or --load table.json\n");
    return 2;
  }

  Table table;
  if (!load_path.empty()) {
    table = load_table(load_path);
    print_table(table);
  } else {
    const Problem problem = load_problem(problem_dir);
    const GemmProblemShapes shapes = gemm_problem_shapes(problem);
    if (const std::optional<std::string> why = cuda_device_problem()) {
      std::fprintf(stderr, "cublaslt_tune: %s\n", why->c_str());
      return 1;
    }
    std::vector<ShapeReport> reports;
    table = tune_problem(shapes, options, reports);
    fmt::print("{} (cuBLASLt {})\n", table.device, table.cublaslt_version);
    print_reports(reports);
  }
  if (!out_path.empty()) save_table(table, out_path);
  if (!header_path.empty()) write_text(header_path, render_header(table));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const kernelarc::InputError& error) {
    std::fprintf(stderr, "cublaslt_tune: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "cublaslt_tune: %s\n", error.what());
    return 3;
  }
}
