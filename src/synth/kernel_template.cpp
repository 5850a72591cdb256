#include "synth/kernel_template.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "core/json_fields.h"
#include "core/paths.h"

namespace kernelarc {

namespace fs = std::filesystem;

bool KernelTemplate::serves(std::string_view family) const {
  return std::find(families.begin(), families.end(), family) != families.end();
}

namespace {

std::vector<std::string> optional_list(const OrderedJson& json, std::string_view key,
                                       std::string_view where) {
  const OrderedJson* member = find_member(json, key);
  return member ? expect_string_list(*member, where, key) : std::vector<std::string>{};
}

std::string required_string(const OrderedJson& json, std::string_view key, std::string_view where) {
  return expect_string(require_member(json, key, where, ""), where, key);
}

/// A relative path that stays inside its directory and names an existing file.
void check_file(const fs::path& base, const std::string& relative, std::string_view where,
                const std::string& field) {
  const fs::path path(relative);
  if (relative.empty() || path.is_absolute() ||
      std::find(path.begin(), path.end(), "..") != path.end()) {
    throw_input_error(where, field,
                      "expected a relative path without \"..\", got \"" + relative + "\"");
  }
  if (!fs::is_regular_file(base / path))
    throw_input_error(where, field, "no file " + (base / path).string());
}

TemplateBuild parse_build(const std::string& text, std::string_view where) {
  if (text == "nvrtc") return TemplateBuild::Nvrtc;
  if (text == "shared_object") return TemplateBuild::SharedObject;
  throw_input_error(where, "build",
                    "expected \"nvrtc\" or \"shared_object\", got \"" + text + "\"");
}

}  // namespace

KernelTemplate load_template(const fs::path& dir, const fs::path& common_dir) {
  const fs::path file = dir / "template.json";
  const std::string where = file.string();
  const OrderedJson json = parse_json_text(read_text_file(file), where);
  expect_object(json, where, "");
  reject_unknown_keys(
      json,
      {"name", "description", "target", "families", "build", "sources", "common", "entry_point",
       "launch", "workspace_bytes", "cflags", "cuda_cflags", "ld_flags", "arch", "knobs"},
      where, "");
  const std::string knob_file = required_string(json, "knobs", where);
  check_file(dir, knob_file, where, "knobs");
  KernelTemplate kernel{.knobs = load_knob_space(dir / knob_file)};
  kernel.name = required_string(json, "name", where);
  if (const OrderedJson* description = find_member(json, "description"))
    kernel.description = expect_string(*description, where, "description");
  const std::string target = required_string(json, "target", where);
  const std::optional<DeviceKind> kind = device_kind_from_name(target);
  if (!kind)
    throw_input_error(where, "target", "expected \"cuda\" or \"cpu\", got \"" + target + "\"");
  kernel.target = *kind;
  kernel.families =
      expect_string_list(require_member(json, "families", where, ""), where, "families");
  if (kernel.families.empty()) throw_input_error(where, "families", "expected at least one family");
  kernel.build = parse_build(required_string(json, "build", where), where);
  if (kernel.build == TemplateBuild::Nvrtc && kernel.target != DeviceKind::Cuda)
    throw_input_error(where, "build", "\"nvrtc\" builds need target \"cuda\"");
  kernel.sources = expect_string_list(require_member(json, "sources", where, ""), where, "sources");
  if (kernel.sources.empty()) throw_input_error(where, "sources", "expected at least one file");
  for (std::size_t i = 0; i < kernel.sources.size(); ++i)
    check_file(dir, kernel.sources[i], where, field_index("sources", i));
  kernel.common = optional_list(json, "common", where);
  for (std::size_t i = 0; i < kernel.common.size(); ++i)
    check_file(common_dir, kernel.common[i], where, field_index("common", i));
  kernel.entry_point = required_string(json, "entry_point", where);
  if (const OrderedJson* launch = find_member(json, "launch")) {
    expect_object(*launch, where, "launch");
    kernel.launch = *launch;
  }
  if (kernel.build == TemplateBuild::Nvrtc && kernel.launch.is_null())
    throw_input_error(where, "launch", "an \"nvrtc\" template needs a launch spec");
  if (kernel.build != TemplateBuild::Nvrtc && !kernel.launch.is_null())
    throw_input_error(where, "launch", "only \"nvrtc\" templates are launched by the backend");
  if (const OrderedJson* workspace = find_member(json, "workspace_bytes")) {
    if (!workspace->is_number_integer() && !workspace->is_string())
      throw_input_error(where, "workspace_bytes",
                        "expected an integer or an expression, got " + describe_json(*workspace));
    kernel.workspace_bytes = *workspace;
  }
  kernel.cflags = optional_list(json, "cflags", where);
  kernel.cuda_cflags = optional_list(json, "cuda_cflags", where);
  kernel.ld_flags = optional_list(json, "ld_flags", where);
  if (const OrderedJson* arch = find_member(json, "arch"))
    kernel.arch = expect_string(*arch, where, "arch");
  kernel.dir = dir;
  kernel.common_dir = common_dir;
  return kernel;
}

std::vector<KernelTemplate> load_template_library(const fs::path& root) {
  if (!fs::is_directory(root))
    throw InputError(root.string() + ": no template library (expected a directory)");
  std::vector<KernelTemplate> templates;
  std::map<std::string, fs::path> seen;
  for (const DeviceKind kind : {DeviceKind::Cuda, DeviceKind::Cpu}) {
    const std::string target(device_kind_name(kind));
    if (!fs::is_directory(root / target)) continue;
    for (const auto& entry : fs::directory_iterator(root / target)) {
      if (!fs::is_regular_file(entry.path() / "template.json")) continue;
      KernelTemplate kernel = load_template(entry.path(), root / "common");
      if (auto [where, inserted] = seen.emplace(kernel.name, entry.path()); !inserted) {
        throw InputError((entry.path() / "template.json").string() + ": name: \"" + kernel.name +
                         "\" is already the name of " + where->second.string());
      }
      templates.push_back(std::move(kernel));
    }
  }
  std::sort(templates.begin(), templates.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return templates;
}

void keep_accuracy(std::vector<KernelTemplate>& library) {
  for (KernelTemplate& kernel : library) kernel.knobs = kernel.knobs.keeping_accuracy();
}

fs::path default_template_root() {
  if (const char* root = std::getenv("KERNELARC_TEMPLATES"); root && *root) return root;
  return data_dir() / "templates";
}

}  // namespace kernelarc
