#include "kb/skill_store.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "store/sqlite.h"

namespace kernelarc {
namespace {

// The identity of a skill is its condition plus its changes column: the changes sorted by knob
// and serialized by nlohmann (object keys sorted), so the same action always has the same text.
constexpr const char* kCreateTables[] = {
    R"sql(CREATE TABLE IF NOT EXISTS skills (
      id INTEGER PRIMARY KEY,
      family TEXT NOT NULL,
      shape_class TEXT NOT NULL,
      device TEXT NOT NULL,
      template TEXT NOT NULL,
      changes TEXT NOT NULL,
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      UNIQUE (family, shape_class, device, template, changes)))sql",
    R"sql(CREATE TABLE IF NOT EXISTS skill_evidence (
      seq INTEGER PRIMARY KEY,
      skill_id INTEGER NOT NULL REFERENCES skills(id),
      run_id INTEGER NOT NULL,
      problem TEXT NOT NULL,
      before_candidate INTEGER NOT NULL,
      after_candidate INTEGER NOT NULL,
      value REAL NOT NULL,
      low REAL NOT NULL,
      high REAL NOT NULL,
      recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      UNIQUE (skill_id, run_id, before_candidate, after_candidate)))sql",
};

void open_tables(sqlite::Connection& connection) {
  // The knowledge base writes to the same file through its own connection.
  connection.configure_shared();
  for (const char* sql : kCreateTables) connection.execute(sql);
}

std::string value_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

/// The observation's changes sorted by knob, checked.
std::vector<SkillKnobChange> canonical_changes(const SkillObservation& observation) {
  if (observation.changes.empty())
    throw_input_error("skill observation", "changes", "expected at least one knob change");
  std::vector<SkillKnobChange> changes = observation.changes;
  std::sort(changes.begin(), changes.end(),
            [](const auto& a, const auto& b) { return a.knob < b.knob; });
  for (size_t index = 0; index < changes.size(); ++index) {
    const SkillKnobChange& change = changes[index];
    const std::string field = fmt::format("changes.{}", change.knob);
    if (change.knob.empty())
      throw_input_error("skill observation", "changes", "a change has no knob name");
    if (index > 0 && changes[index - 1].knob == change.knob)
      throw_input_error("skill observation", field, "the knob appears twice");
    for (const nlohmann::json* value : {&change.from, &change.to}) {
      if (!value->is_number_integer() && !value->is_string())
        throw_input_error("skill observation", field,
                          fmt::format("expected an integer or a label, got {}", value->dump()));
    }
    if (change.from == change.to)
      throw_input_error("skill observation", field,
                        fmt::format("from and to are both {}", change.from.dump()));
  }
  return changes;
}

void check_condition(const SkillObservation& observation) {
  const std::pair<const char*, const std::string*> required[] = {
      {"family", &observation.family},
      {"device", &observation.device},
      {"template_name", &observation.template_name}};
  for (const auto& [field, value] : required)
    if (value->empty()) throw_input_error("skill observation", field, "must not be empty");
}

void check_effect(const SkillEffect& effect) {
  const bool ordered = std::isfinite(effect.low) && std::isfinite(effect.high) && effect.low > 0 &&
                       effect.low <= effect.value && effect.value <= effect.high;
  if (!ordered)
    throw_input_error("skill observation", "effect",
                      fmt::format("expected 0 < low <= value <= high, got value {} low {} high {}",
                                  effect.value, effect.low, effect.high));
}

nlohmann::json changes_to_json(const std::vector<SkillKnobChange>& changes) {
  nlohmann::json json = nlohmann::json::array();
  for (const SkillKnobChange& change : changes)
    json.push_back({{"knob", change.knob}, {"from", change.from}, {"to", change.to}});
  return json;
}

std::vector<SkillKnobChange> changes_from_json(const std::string& text,
                                               const std::filesystem::path& file) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_array())
    throw InputError(
        fmt::format("{}: skills.changes: expected a JSON array, got {}", file.string(), text));
  std::vector<SkillKnobChange> changes;
  for (const auto& entry : json)
    changes.push_back({entry.at("knob").get<std::string>(), entry.at("from"), entry.at("to")});
  return changes;
}

/// Fills the derived fields from the evidence: pooled effect, counts, confidence, status.
void derive(Skill& skill) {
  double log_value = 0, log_low = 0, log_high = 0;
  for (const SkillEvidence& evidence : skill.evidence) {
    log_value += std::log(evidence.effect.value);
    log_low += std::log(evidence.effect.low);
    log_high += std::log(evidence.effect.high);
    if (evidence.effect.low > 1) ++skill.confirmations;
    if (evidence.effect.high < 1) ++skill.contradictions;
  }
  const double count = static_cast<double>(std::max<size_t>(skill.evidence.size(), 1));
  skill.effect = {std::exp(log_value / count), std::exp(log_low / count),
                  std::exp(log_high / count)};
  // Laplace's rule: one imagined confirmation and one contradiction, so a single observation
  // is not certainty.
  skill.confidence =
      (skill.confirmations + 1.0) / (skill.confirmations + skill.contradictions + 2.0);
  skill.retired =
      static_cast<int>(skill.evidence.size()) >= kRetireAfter && skill.confidence < kRetiredBelow;
}

std::vector<Skill> load_skills(sqlite::Connection& connection, std::optional<int64_t> id) {
  sqlite::Statement rows = connection.prepare(
      id ? "SELECT id, family, shape_class, device, template, changes FROM skills WHERE id = ?"
         : "SELECT id, family, shape_class, device, template, changes FROM skills ORDER BY id");
  if (id) rows.bind(1, *id);
  std::vector<Skill> skills;
  while (rows.step()) {
    Skill skill;
    skill.id = rows.int64(0);
    skill.family = rows.text(1);
    skill.shape_class = rows.text(2);
    skill.device = rows.text(3);
    skill.template_name = rows.text(4);
    skill.changes = changes_from_json(rows.text(5), connection.file());
    skills.push_back(std::move(skill));
  }
  for (Skill& skill : skills) {
    sqlite::Statement evidence = connection.prepare(
        "SELECT run_id, problem, before_candidate, after_candidate, value, low, high, "
        "recorded_at FROM skill_evidence WHERE skill_id = ? ORDER BY seq");
    evidence.bind(1, skill.id);
    while (evidence.step()) {
      skill.evidence.push_back({evidence.int64(0),
                                evidence.text(1),
                                evidence.int64(2),
                                evidence.int64(3),
                                {evidence.real(4), evidence.real(5), evidence.real(6)},
                                evidence.text(7)});
    }
    derive(skill);
  }
  return skills;
}

std::string effect_text(const SkillEffect& effect) {
  return fmt::format("{:.2f}x ({:.2f}-{:.2f})", effect.value, effect.low, effect.high);
}

std::vector<std::string> lower_case_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream stream(text);
  for (std::string word; stream >> word;) {
    std::transform(word.begin(), word.end(), word.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    words.push_back(word);
  }
  return words;
}

std::string lower_case(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

}  // namespace

std::string Skill::action_text() const {
  std::vector<std::string> parts;
  for (const SkillKnobChange& change : changes)
    parts.push_back(
        fmt::format("{} {}->{}", change.knob, value_text(change.from), value_text(change.to)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

double Skill::rank() const {
  return confidence * std::log(effect.value);
}

void KnowledgeBaseMirror::put(const KbDocument& document) {
  knowledge_base_.put(document);
}

void KnowledgeBaseMirror::remove(const std::string& source) {
  knowledge_base_.remove(source);
}

KbDocument skill_document(const Skill& skill) {
  std::vector<std::string> changes;
  for (const SkillKnobChange& change : skill.changes)
    changes.push_back(fmt::format("{} from {} to {}", change.knob, value_text(change.from),
                                  value_text(change.to)));
  const std::string outcome = skill.effect.value >= 1
                                  ? fmt::format("{:.2f}x faster", skill.effect.value)
                                  : fmt::format("{:.2f}x slower", 1 / skill.effect.value);

  KbDocument document;
  document.source = fmt::format("skill:{}", skill.id);
  document.title = fmt::format(
      "For {} on {} ({}), changing {} in template {} made it {} (interval {:.2f}-{:.2f})",
      skill.family, skill.device, skill.shape_class, fmt::join(changes, " and "),
      skill.template_name, outcome, skill.effect.low, skill.effect.high);

  std::string markdown = fmt::format("# {}\n\n", document.title);
  markdown += fmt::format("## Condition\n\n- op family: {}\n- shape class: {}\n- device: {}\n\n",
                          skill.family, skill.shape_class, skill.device);
  markdown += fmt::format("## Action\n\nIn template `{}`:\n\n", skill.template_name);
  for (const SkillKnobChange& change : skill.changes)
    markdown += fmt::format("- `{}`: {} -> {}\n", change.knob, value_text(change.from),
                            value_text(change.to));
  markdown += fmt::format(
      "\n## Effect\n\nPooled speedup {} over {} observations (geometric means of the values and "
      "interval ends); {} confirmations, {} contradictions, confidence {:.2f}.\n\n",
      effect_text(skill.effect), skill.evidence.size(), skill.confirmations, skill.contradictions,
      skill.confidence);
  markdown += "## Evidence\n\n";
  for (const SkillEvidence& evidence : skill.evidence)
    markdown += fmt::format("- run {} ({}): candidate {} -> {}, {}\n", evidence.run_id,
                            evidence.problem, evidence.before_candidate, evidence.after_candidate,
                            effect_text(evidence.effect));
  document.markdown = std::move(markdown);
  document.keys.families = {lower_case(skill.family)};
  document.keys.hardware = lower_case_words(skill.device);
  return document;
}

SkillStore::SkillStore(const std::filesystem::path& file, SkillMirror* mirror)
    : connection_(std::make_unique<sqlite::Connection>(file)), mirror_(mirror) {
  open_tables(*connection_);
}

SkillStore::~SkillStore() = default;

Skill SkillStore::record(const SkillObservation& observation) {
  check_condition(observation);
  const std::vector<SkillKnobChange> changes = canonical_changes(observation);
  check_effect(observation.effect);
  const std::string changes_text = changes_to_json(changes).dump();

  int64_t skill_id = 0;
  {
    sqlite::Transaction transaction(*connection_);
    connection_
        ->prepare(
            "INSERT INTO skills (family, shape_class, device, template, changes) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")
        .bind(1, observation.family)
        .bind(2, observation.shape_class)
        .bind(3, observation.device)
        .bind(4, observation.template_name)
        .bind(5, changes_text)
        .run();
    sqlite::Statement lookup = connection_->prepare(
        "SELECT id FROM skills WHERE family = ? AND shape_class = ? AND device = ? AND "
        "template = ? AND changes = ?");
    lookup.bind(1, observation.family)
        .bind(2, observation.shape_class)
        .bind(3, observation.device)
        .bind(4, observation.template_name)
        .bind(5, changes_text);
    if (!lookup.step())
      throw InternalError(
          fmt::format("{}: the skill just inserted is missing", connection_->file().string()));
    skill_id = lookup.int64(0);
    connection_
        ->prepare(
            "INSERT INTO skill_evidence (skill_id, run_id, problem, before_candidate, "
            "after_candidate, value, low, high) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING")
        .bind(1, skill_id)
        .bind(2, observation.run_id)
        .bind(3, observation.problem)
        .bind(4, observation.before_candidate)
        .bind(5, observation.after_candidate)
        .bind(6, observation.effect.value)
        .bind(7, observation.effect.low)
        .bind(8, observation.effect.high)
        .run();
    transaction.commit();
  }

  Skill skill = *get(skill_id);
  if (mirror_) {
    if (skill.retired)
      mirror_->remove(skill_document(skill).source);
    else
      mirror_->put(skill_document(skill));
  }
  return skill;
}

std::vector<Skill> SkillStore::find(const SkillQuery& query) {
  std::vector<Skill> found;
  for (Skill& skill : load_skills(*connection_, std::nullopt)) {
    const bool matches = !skill.retired && skill.family == query.family &&
                         skill.device == query.device &&
                         (!query.template_name || skill.template_name == *query.template_name) &&
                         (!query.shape_class || skill.shape_class == *query.shape_class);
    if (matches) found.push_back(std::move(skill));
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const Skill& a, const Skill& b) { return a.rank() > b.rank(); });
  return found;
}

std::vector<Skill> SkillStore::all() {
  return load_skills(*connection_, std::nullopt);
}

std::optional<Skill> SkillStore::get(int64_t id) {
  std::vector<Skill> skills = load_skills(*connection_, id);
  if (skills.empty()) return std::nullopt;
  return std::move(skills.front());
}

void SkillStore::mirror_all() {
  if (!mirror_) return;
  for (const Skill& skill : all()) {
    if (skill.retired)
      mirror_->remove(skill_document(skill).source);
    else
      mirror_->put(skill_document(skill));
  }
}

}  // namespace kernelarc
