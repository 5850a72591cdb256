#include "app/report_page_model.h"

#include <cmath>
#include <cstddef>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc::report_page {

namespace {

using Json = nlohmann::json;

std::string type_name(const Json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  return "an object";
}

/// "report model: <field>: expected <what>, got <type>" (or "..., but it is missing").
[[noreturn]] void fail(const std::string& field, std::string_view expected, const Json* got) {
  throw InputError(fmt::format("report model: {}: expected {}, {}", field, expected,
                               got ? "got " + type_name(*got) : std::string("but it is missing")));
}

std::string indexed(std::string_view parent, std::size_t index) {
  return fmt::format("{}[{}]", parent, index);
}

/// Typed reads of one object's members, each naming its full path when it fails.
class Fields {
 public:
  Fields(const Json& object, std::string path) : object_(object), path_(std::move(path)) {
    if (!object_.is_object()) fail(path_.empty() ? "(top level)" : path_, "an object", &object_);
  }

  std::string field(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  std::string string(std::string_view key) const {
    const Json* value = member(key);
    if (!value || !value->is_string()) fail(field(key), "a string", value);
    return value->get<std::string>();
  }
  std::optional<std::string> optional_string(std::string_view key) const {
    const Json* value = present(key);
    if (!value) return std::nullopt;
    if (!value->is_string()) fail(field(key), "a string", value);
    return value->get<std::string>();
  }
  int64_t integer(std::string_view key) const {
    const Json* value = member(key);
    if (!value || !is_integer(*value)) fail(field(key), "an integer", value);
    return as_integer(*value);
  }
  std::optional<int64_t> optional_integer(std::string_view key) const {
    const Json* value = present(key);
    if (!value) return std::nullopt;
    if (!is_integer(*value)) fail(field(key), "an integer", value);
    return as_integer(*value);
  }
  double number(std::string_view key) const {
    const Json* value = member(key);
    if (!value || !value->is_number()) fail(field(key), "a number", value);
    return value->get<double>();
  }
  /// Not finite reads as absent: nothing can draw it.
  std::optional<double> optional_number(std::string_view key) const {
    const Json* value = present(key);
    if (!value) return std::nullopt;
    if (!value->is_number()) fail(field(key), "a number", value);
    const double number = value->get<double>();
    return std::isfinite(number) ? std::optional<double>(number) : std::nullopt;
  }
  bool boolean(std::string_view key) const {
    const Json* value = member(key);
    if (!value || !value->is_boolean()) fail(field(key), "a boolean", value);
    return value->get<bool>();
  }
  bool optional_boolean(std::string_view key) const {
    const Json* value = present(key);
    if (!value) return false;
    if (!value->is_boolean()) fail(field(key), "a boolean", value);
    return value->get<bool>();
  }
  const Json& array(std::string_view key) const {
    const Json* value = member(key);
    if (!value || !value->is_array()) fail(field(key), "an array", value);
    return *value;
  }
  /// nullptr when absent or null.
  const Json* optional_array(std::string_view key) const {
    const Json* value = present(key);
    if (value && !value->is_array()) fail(field(key), "an array", value);
    return value;
  }
  /// An absent or null list reads as empty.
  const Json& list(std::string_view key) const {
    static const Json empty = Json::array();
    const Json* value = optional_array(key);
    return value ? *value : empty;
  }
  const Json* optional_object(std::string_view key) const {
    const Json* value = present(key);
    if (value && !value->is_object()) fail(field(key), "an object", value);
    return value;
  }

 private:
  static bool is_integer(const Json& value) {
    return value.is_number_integer() ||
           (value.is_number_float() && std::isfinite(value.get<double>()) &&
            value.get<double>() == std::floor(value.get<double>()));
  }
  /// Ids beyond 2^53 survive: only a whole float goes through double.
  static int64_t as_integer(const Json& value) {
    return value.is_number_integer() ? value.get<int64_t>()
                                     : static_cast<int64_t>(value.get<double>());
  }
  const Json* member(std::string_view key) const {
    const auto found = object_.find(std::string(key));
    return found == object_.end() ? nullptr : &*found;
  }
  const Json* present(std::string_view key) const {
    const Json* value = member(key);
    return value && !value->is_null() ? value : nullptr;
  }

  const Json& object_;
  std::string path_;
};

std::vector<std::string> strings_of(const Fields& fields, std::string_view key) {
  std::vector<std::string> out;
  const Json& items = fields.list(key);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) fail(indexed(fields.field(key), i), "a string", &items[i]);
    out.push_back(items[i].get<std::string>());
  }
  return out;
}

Candidate parse_candidate(const Json& json, const std::string& path) {
  const Fields f(json, path);
  Candidate c;
  c.seq = f.integer("seq");
  c.id = f.integer("id");
  c.agent = f.string("agent");
  c.label = f.string("label");
  c.status = f.string("status");
  c.passed = f.boolean("passed");
  c.ms = f.optional_number("ms");
  if (const Json* ci = f.optional_array("ci")) {
    if (ci->size() != 2 || !(*ci)[0].is_number() || !(*ci)[1].is_number())
      fail(f.field("ci"), "[lo, hi] as two numbers", ci);
    c.ci_lo = (*ci)[0].get<double>();
    c.ci_hi = (*ci)[1].get<double>();
  }
  c.speedup = f.optional_number("speedup");
  c.parent = f.optional_integer("parent");
  c.lineage = f.optional_boolean("lineage");
  c.winner = f.optional_boolean("winner");
  c.gflops = f.optional_number("gflops");
  c.intensity = f.optional_number("intensity");
  return c;
}

Winner parse_winner(const Json& json, const std::string& path) {
  const Fields f(json, path);
  Winner winner{
      f.string("label"), f.optional_string("parent_label"), {}, f.optional_string("changes")};
  const Json& files = f.list("files");
  for (std::size_t i = 0; i < files.size(); ++i) {
    const Fields file(files[i], indexed(f.field("files"), i));
    SourceFile source{file.string("path"), file.string("content"), std::nullopt};
    if (const Json* diff = file.optional_array("diff")) {
      source.diff.emplace();
      for (std::size_t k = 0; k < diff->size(); ++k) {
        const Fields line((*diff)[k], indexed(file.field("diff"), k));
        const std::string op = line.string("op");
        if (op != " " && op != "+" && op != "-")
          throw InputError(
              fmt::format("report model: {}: expected \" \", \"+\" or \"-\", got \"{}\"",
                          line.field("op"), op));
        source.diff->push_back({op[0], line.string("text")});
      }
    }
    winner.files.push_back(std::move(source));
  }
  return winner;
}

}  // namespace

Model parse_model(const Json& json) {
  const Fields root(json, "");
  Model m;
  m.title = root.string("title");
  m.kind = root.string("kind");
  if (m.kind != "run" && m.kind != "bench")
    throw InputError(
        fmt::format("report model: kind: expected \"run\" or \"bench\", got \"{}\"", m.kind));
  const Json& facts = root.array("facts");
  for (std::size_t i = 0; i < facts.size(); ++i) {
    const Json& fact = facts[i];
    if (!fact.is_array() || fact.size() != 2 || !fact[0].is_string() || !fact[1].is_string())
      fail(indexed("facts", i), "a [label, value] pair of strings", &fact);
    m.facts.emplace_back(fact[0].get<std::string>(), fact[1].get<std::string>());
  }
  const Json& candidates = root.array("candidates");
  for (std::size_t i = 0; i < candidates.size(); ++i)
    m.candidates.push_back(parse_candidate(candidates[i], indexed("candidates", i)));
  if (const Json* roofline = root.optional_object("roofline")) {
    const Fields f(*roofline, "roofline");
    m.roofline = Roofline{f.number("peak_gflops"), f.number("bandwidth_gbs"),
                          f.optional_string("peak_label").value_or("")};
  }
  const Json& workloads = root.list("workloads");
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const Fields f(workloads[i], indexed("workloads", i));
    Workload workload{f.string("name"), {}};
    const Json& bars = f.array("bars");
    for (std::size_t k = 0; k < bars.size(); ++k) {
      const Fields bar(bars[k], indexed(f.field("bars"), k));
      workload.bars.push_back(Bar{bar.string("label"), bar.number("ms"), bar.optional_number("lo"),
                                  bar.optional_number("hi")});
    }
    m.workloads.push_back(std::move(workload));
  }
  m.conclusions = strings_of(root, "conclusions");
  m.diagnosis = strings_of(root, "diagnosis");
  if (const Json* winner = root.optional_object("winner"))
    m.winner = parse_winner(*winner, "winner");
  if (const Json* problems = root.optional_array("problems")) {
    m.problems.emplace();
    for (std::size_t i = 0; i < problems->size(); ++i) {
      const Fields f((*problems)[i], indexed("problems", i));
      m.problems->push_back(Problem{f.string("name"), f.string("status"),
                                    f.optional_string("kernelarc").value_or(""),
                                    f.optional_number("speedup"), f.optional_number("lo"),
                                    f.optional_number("hi"), f.optional_number("sol_score")});
    }
  }
  return m;
}

}  // namespace kernelarc::report_page
