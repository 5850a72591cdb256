#include "distributed/bundles.h"

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "oracle/oracle_cache.h"

namespace kernelarc {

namespace fs = std::filesystem;

namespace {

// A manifest comes from the server: a path that leaves the directory it is written into (an
// absolute one, or one through "..") would let whoever writes the server write anywhere.
fs::path inside(const fs::path& root, const std::string& relative, const std::string& hash) {
  const fs::path path = fs::path(relative).lexically_normal();
  if (relative.empty() || path.is_absolute() || *path.begin() == "..")
    throw InternalError(fmt::format("bundle {}: path \"{}\" leaves its directory", hash, relative));
  return root / path;
}

void write_files(BlobExchange& blobs, const nlohmann::json& files, const fs::path& root,
                 const std::string& hash) {
  for (const auto& [relative, key] : files.items()) {
    const fs::path path = inside(root, relative, hash);
    if (fs::exists(path)) continue;
    fs::create_directories(path.parent_path());
    write_file_atomically(path, blobs.get(key.get<std::string>()));
  }
}

nlohmann::json read_manifest(BlobExchange& blobs, const std::string& hash) {
  try {
    return nlohmann::json::parse(blobs.get(hash));
  } catch (const nlohmann::json::exception& error) {
    throw InternalError(fmt::format("bundle {}: {}", hash, error.what()));
  }
}

}  // namespace

std::string publish_problem(BlobExchange& blobs, const Problem& problem) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& entry : fs::recursive_directory_iterator(problem.dir)) {
    if (!entry.is_regular_file()) continue;
    files[fs::relative(entry.path(), problem.dir).generic_string()] =
        blobs.put(read_text_file(entry.path()));
  }
  const DefinitionExtension& ext = problem.definition.ext;
  const nlohmann::json manifest = {{"files", files},
                                   {"ext",
                                    {{"op_family", ext.op_family},
                                     {"op_params", nlohmann::json::parse(ext.op_params.dump())},
                                     {"bytes", ext.bytes},
                                     {"flops", ext.flops}}}};
  return blobs.put(manifest.dump());
}

Problem materialize_problem(BlobExchange& blobs, const std::string& hash, const fs::path& root) {
  const nlohmann::json manifest = read_manifest(blobs, hash);
  const fs::path dir = root / hash;
  if (!fs::exists(dir)) {
    // Written whole under a private name, then renamed: a worker killed halfway leaves no
    // half-written problem for the next one.
    const fs::path partial = root / fmt::format("{}.partial-{}", hash, getpid());
    fs::remove_all(partial);
    write_files(blobs, manifest.at("files"), partial, hash);
    std::error_code error;
    fs::rename(partial, dir, error);
    if (error) fs::remove_all(partial);  // another worker of this host was first
  }
  Problem problem = load_problem(dir);
  const nlohmann::json& ext = manifest.at("ext");
  problem.definition.ext.op_family = ext.at("op_family").get<std::string>();
  problem.definition.ext.op_params = OrderedJson::parse(ext.at("op_params").dump());
  problem.definition.ext.bytes = ext.at("bytes").get<std::string>();
  problem.definition.ext.flops = ext.at("flops").get<std::string>();
  return problem;
}

std::filesystem::path oracle_cache_dir(const std::filesystem::path& workspace) {
  return workspace / "oracle";
}

std::string publish_oracle_draws(BlobExchange& blobs, Oracle& oracle, const Problem& problem,
                                 const std::vector<Workload>& workloads, int trials,
                                 const fs::path& cache_dir) {
  std::vector<const Workload*> selected;
  for (const Workload& workload : workloads) selected.push_back(&workload);
  oracle.prepare(problem, trials, selected);
  nlohmann::json files = nlohmann::json::object();
  const fs::path problem_dir = cache_dir / cache_dir_name(problem.definition.name);
  for (const auto& entry : fs::directory_iterator(problem_dir)) {
    const std::string name = entry.path().filename().string();
    const bool draw = name.ends_with(".inputs.safetensors") ||
                      name.ends_with(".parameters.safetensors") ||
                      name.ends_with(".expected.safetensors") || name.ends_with(".error.json");
    if (entry.is_regular_file() && draw)
      files[fs::relative(entry.path(), cache_dir).generic_string()] =
          blobs.put(read_text_file(entry.path()));
  }
  return blobs.put(nlohmann::json{{"files", files}}.dump());
}

void install_oracle_draws(BlobExchange& blobs, const std::string& hash, const fs::path& cache_dir) {
  write_files(blobs, read_manifest(blobs, hash).at("files"), cache_dir, hash);
}

}  // namespace kernelarc
