// solution.json: parsing, source-path checks and export in the SOL-ExecBench form.
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/problem.h"

namespace kernelarc {
namespace {

std::string optional_string(const OrderedJson& json, std::string_view key, std::string_view where,
                            std::string_view parent) {
  const OrderedJson* member = find_optional(json, key);
  return member ? expect_string(*member, where, field_path(parent, key)) : std::string();
}

std::vector<std::string> optional_list(const OrderedJson& json, std::string_view key,
                                       std::string_view where, std::string_view parent) {
  const OrderedJson* member = find_optional(json, key);
  return member ? expect_string_list(*member, where, field_path(parent, key))
                : std::vector<std::string>{};
}

// A relative path inside the solution, in normal form; InputError for anything that could
// escape the build directory or collide with another source.
std::string checked_source_path(const std::string& path, std::string_view where,
                                const std::string& field) {
  if (path.empty()) throw_input_error(where, field, "expected a non-empty relative path");
  const std::filesystem::path parsed(path);
  if (parsed.is_absolute()) {
    throw_input_error(where, field, fmt::format("expected a relative path, got \"{}\"", path));
  }
  for (const auto& component : parsed) {
    if (component == "..") {
      throw_input_error(where, field, fmt::format("\"..\" is not allowed, got \"{}\"", path));
    }
  }
  std::string normal = parsed.lexically_normal().generic_string();
  if (normal == "." || normal.ends_with('/')) {
    throw_input_error(where, field, fmt::format("expected a file path, got \"{}\"", path));
  }
  return normal;
}

// An integer or an expression string (syntax only: the variables are the definition's axes and
// the template's knobs, which the backend binds).
void check_size_expr(const OrderedJson& value, std::string_view where, const std::string& field) {
  if (value.is_number_integer()) {
    if (value.is_number_unsigned()) return;
    throw_input_error(where, field, "expected an integer >= 0, got " + value.dump());
  }
  const std::string text = expect_string(value, where, field);
  try {
    expr_variables(text);
  } catch (const ExprError& error) {
    throw_input_error(where, field, fmt::format("\"{}\": {}", text, error.what()));
  }
}

void check_extension(const OrderedJson& ext, std::string_view where) {
  expect_object(ext, where, "kernelarc");
  if (const OrderedJson* workspace = find_optional(ext, "workspace_bytes")) {
    check_size_expr(*workspace, where, "kernelarc.workspace_bytes");
  }
  if (const OrderedJson* trades = find_optional(ext, "trades_accuracy"))
    expect_string_list(*trades, where, "kernelarc.trades_accuracy");
  const OrderedJson* launch = find_optional(ext, "launch");
  if (launch == nullptr) return;
  expect_object(*launch, where, "kernelarc.launch");
  for (const char* key : {"grid", "block"}) {
    const std::string field = field_path("kernelarc.launch", key);
    const OrderedJson& dims = require_member(*launch, key, where, "kernelarc.launch");
    if (!dims.is_array() || dims.empty() || dims.size() > 3) {
      throw_input_error(
          where, field,
          dims.is_array()
              ? fmt::format("expected an array of 1 to 3 expressions, got {} items", dims.size())
              : "expected an array of 1 to 3 expressions, got " + describe_json(dims));
    }
    for (std::size_t index = 0; index < dims.size(); ++index) {
      check_size_expr(dims[index], where, field_index(field, index));
    }
  }
  if (const OrderedJson* shared = find_optional(*launch, "shared_bytes")) {
    check_size_expr(*shared, where, "kernelarc.launch.shared_bytes");
  }
}

// Languages are read as written; the backend says which it can build. Keys kernelarc does not
// use are ignored, as upstream ignores them.
void parse_spec(const OrderedJson& spec, std::string_view where, Solution& solution) {
  expect_object(spec, where, "spec");
  if (const OrderedJson* languages = find_optional(spec, "languages")) {
    solution.languages = expect_string_list(*languages, where, "spec.languages");
  } else if (const OrderedJson* language = find_optional(spec, "language")) {
    solution.languages = {expect_string(*language, where, "spec.language")};
  } else {
    throw_input_error(where, "spec.languages", "missing required field");
  }
  if (solution.languages.empty()) {
    throw_input_error(where, "spec.languages", "expected at least one language");
  }
  solution.target_hardware = optional_list(spec, "target_hardware", where, "spec");

  const std::string entry_point =
      expect_string(require_member(spec, "entry_point", where, "spec"), where, "spec.entry_point");
  const auto separator = entry_point.find("::");
  if (separator == std::string::npos || separator == 0 || separator + 2 == entry_point.size() ||
      entry_point.find("::", separator + 2) != std::string::npos) {
    throw_input_error(
        where, "spec.entry_point",
        fmt::format("expected \"file::symbol\" with exactly one \"::\", got \"{}\"", entry_point));
  }
  solution.entry_file = entry_point.substr(0, separator);
  solution.entry_symbol = entry_point.substr(separator + 2);

  if (const OrderedJson* dps = find_optional(spec, "destination_passing_style")) {
    solution.destination_passing_style = expect_bool(*dps, where, "spec.destination_passing_style");
  }
  if (const OrderedJson* options = find_optional(spec, "compile_options")) {
    expect_object(*options, where, "spec.compile_options");
    solution.cflags = optional_list(*options, "cflags", where, "spec.compile_options");
    solution.cuda_cflags = optional_list(*options, "cuda_cflags", where, "spec.compile_options");
    solution.ld_flags = optional_list(*options, "ld_flags", where, "spec.compile_options");
  }
  solution.binding = optional_string(spec, "binding", where, "spec");
  optional_list(spec, "dependencies", where, "spec");  // checked for type, not interpreted
}

void parse_sources(const OrderedJson& sources, std::string_view where,
                   const std::filesystem::path& base_dir, Solution& solution) {
  if (!sources.is_array()) {
    throw_input_error(where, "sources", "expected array, got " + describe_json(sources));
  }
  if (sources.empty()) throw_input_error(where, "sources", "expected at least one source file");
  std::set<std::string> seen;
  for (std::size_t index = 0; index < sources.size(); ++index) {
    const std::string field = field_index("sources", index);
    const OrderedJson& source = sources[index];
    expect_object(source, where, field);
    const std::string path_field = field_path(field, "path");
    const std::string path = checked_source_path(
        expect_string(require_member(source, "path", where, field), where, path_field), where,
        path_field);
    if (!seen.insert(path).second) {
      throw_input_error(where, path_field, fmt::format("duplicate source \"{}\"", path));
    }
    SourceFile file;
    file.path = path;
    if (const OrderedJson* content = find_optional(source, "content")) {
      file.content = expect_string(*content, where, field_path(field, "content"));
    } else {
      const std::filesystem::path beside = base_dir / path;
      std::error_code error;
      if (!std::filesystem::is_regular_file(beside, error)) {
        throw_input_error(
            where, field_path(field, "content"),
            fmt::format("missing, and there is no file {} to read it from", beside.string()));
      }
      file.content = read_text_file(beside);
    }
    solution.sources.push_back(std::move(file));
  }
  const std::string entry = checked_source_path(solution.entry_file, where, "spec.entry_point");
  if (!seen.contains(entry)) {
    throw_input_error(where, "spec.entry_point",
                      fmt::format("the entry file \"{}\" is not among the sources", entry));
  }
  solution.entry_file = entry;
}

}  // namespace

Solution parse_solution(const OrderedJson& json, const std::string& where,
                        const std::filesystem::path& base_dir) {
  expect_object(json, where, "");
  Solution solution;
  solution.raw = json;
  solution.name = expect_string(require_member(json, "name", where, ""), where, "name");
  if (solution.name.empty()) throw_input_error(where, "name", "expected a non-empty string");
  solution.definition =
      expect_string(require_member(json, "definition", where, ""), where, "definition");
  solution.author = optional_string(json, "author", where, "");
  solution.description = optional_string(json, "description", where, "");
  parse_spec(require_member(json, "spec", where, ""), where, solution);
  parse_sources(require_member(json, "sources", where, ""), where, base_dir, solution);
  solution.ext = OrderedJson::object();
  if (const OrderedJson* ext = find_optional(json, "kernelarc")) {
    check_extension(*ext, where);
    solution.ext = *ext;
  }
  return solution;
}

Solution load_solution(const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::path file =
      std::filesystem::is_directory(path, error) ? path / "solution.json" : path;
  const std::string where = file.string();
  Solution solution =
      parse_solution(parse_json_text(read_text_file(file), where), where, file.parent_path());
  solution.path = file;
  return solution;
}

OrderedJson solution_to_json(const Solution& solution) {
  OrderedJson spec = OrderedJson::object();
  spec["languages"] = solution.languages;
  spec["target_hardware"] = solution.target_hardware;
  spec["entry_point"] = solution.entry_file + "::" + solution.entry_symbol;
  spec["destination_passing_style"] = solution.destination_passing_style;
  if (!solution.cflags.empty() || !solution.cuda_cflags.empty() || !solution.ld_flags.empty()) {
    spec["compile_options"] = {{"cflags", solution.cflags},
                               {"cuda_cflags", solution.cuda_cflags},
                               {"ld_flags", solution.ld_flags}};
  }
  if (!solution.binding.empty()) spec["binding"] = solution.binding;

  OrderedJson json = OrderedJson::object();
  json["name"] = solution.name;
  json["definition"] = solution.definition;
  json["author"] = solution.author;
  json["description"] = solution.description;
  json["spec"] = std::move(spec);
  OrderedJson sources = OrderedJson::array();
  for (const SourceFile& source : solution.sources) {
    sources.push_back({{"path", source.path}, {"content", source.content}});
  }
  json["sources"] = std::move(sources);
  if (solution.ext.is_object() && !solution.ext.empty()) json["kernelarc"] = solution.ext;
  return json;
}

std::vector<std::string> solution_accuracy_trades(const Solution& solution) {
  if (!solution.ext.is_object()) return {};
  const auto trades = solution.ext.find("trades_accuracy");
  if (trades == solution.ext.end()) return {};
  return trades->get<std::vector<std::string>>();
}

}  // namespace kernelarc
