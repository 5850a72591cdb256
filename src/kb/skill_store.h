// Skills: the board's verified conclusions ("in template T, changing knob X from a to b made it
// r times faster") distilled across runs. A skill is identified by its condition (op family,
// shape class, device) and its action (template and the set of knob changes); every later run
// that observes the same action under the same condition adds evidence that strengthens or
// weakens it. Skills live in the knowledge base's SQLite file (tables skills and
// skill_evidence) and are mirrored into the knowledge base as documents "skill:<id>" so that
// a search finds them beside the notes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kb/knowledge_base.h"

namespace kernelarc {

namespace sqlite {
class Connection;
}

/// One knob of the action; values are JSON integers or strings, as in a stored knob point.
struct SkillKnobChange {
  std::string knob;
  nlohmann::json from;
  nlohmann::json to;
};

/// A speedup (before / after; > 1 is faster) with its interval.
struct SkillEffect {
  double value = 1;
  double low = 1;
  double high = 1;
};

/// What the caller distils from one verified conclusion of an optimization run.
struct SkillObservation {
  std::string family;       ///< op family, e.g. "rmsnorm"
  std::string shape_class;  ///< made by the caller, e.g. "rows>=4096 hidden=4096"
  std::string device;       ///< the device's name, e.g. "cpu", "NVIDIA H200"
  std::string template_name;
  std::vector<SkillKnobChange> changes;  ///< any order; one entry per knob
  SkillEffect effect;
  int64_t run_id = 0;
  int64_t before_candidate = 0;
  int64_t after_candidate = 0;
  std::string problem;
};

/// One observation as kept in a skill's evidence.
struct SkillEvidence {
  int64_t run_id = 0;
  std::string problem;
  int64_t before_candidate = 0;
  int64_t after_candidate = 0;
  SkillEffect effect;
  std::string recorded_at;  ///< UTC ISO-8601
};

struct Skill {
  int64_t id = 0;
  std::string family;
  std::string shape_class;
  std::string device;
  std::string template_name;
  std::vector<SkillKnobChange> changes;  ///< sorted by knob name
  std::vector<SkillEvidence> evidence;   ///< in the order recorded
  /// Simple, conservative pooling: the geometric means of the observations' values, lows and
  /// highs. The interval does not narrow as evidence accumulates (a meta-analysis would), so
  /// repeated observations never overstate how certain the effect is.
  SkillEffect effect;
  int confirmations = 0;   ///< observations whose interval lies above 1 (it held again)
  int contradictions = 0;  ///< observations whose interval lies below 1 (it made it slower)
  double confidence = 0;   ///< (confirmations + 1) / (confirmations + contradictions + 2)
  bool retired = false;    ///< confidence < kRetiredBelow after kRetireAfter observations

  /// "BLOCK 128->256, VEC 4->8"
  std::string action_text() const;
  /// The retrieval order: confidence x log(pooled effect).
  double rank() const;
};

inline constexpr double kRetiredBelow = 0.34;
inline constexpr int kRetireAfter = 3;

/// The condition a search is about; empty optionals match any.
struct SkillQuery {
  std::string family;
  std::string device;
  std::optional<std::string> template_name;
  std::optional<std::string> shape_class;
};

/// Where a skill's document goes. The store calls it after its own transaction has committed
/// (the knowledge base writes through its own connection to the same file, which would wait
/// on the store's write lock).
class SkillMirror {
 public:
  virtual ~SkillMirror() = default;
  virtual void put(const KbDocument& document) = 0;
  virtual void remove(const std::string& source) = 0;
};

class KnowledgeBaseMirror : public SkillMirror {
 public:
  explicit KnowledgeBaseMirror(KnowledgeBase& knowledge_base) : knowledge_base_(knowledge_base) {}
  void put(const KbDocument& document) override;
  void remove(const std::string& source) override;

 private:
  KnowledgeBase& knowledge_base_;
};

/// The document a skill is mirrored as: source "skill:<id>", a one-sentence title, Markdown
/// sections Condition/Action/Effect/Evidence, keys families=[family] and hardware=[the
/// device's words in lower case].
KbDocument skill_document(const Skill& skill);

class SkillStore {
 public:
  /// Opens (creating the tables of) `file`, normally <workspace>/knowledge.sqlite. `mirror`
  /// may be null for a reader (the CLI); a writer passes one so that the knowledge base
  /// follows every change.
  explicit SkillStore(const std::filesystem::path& file, SkillMirror* mirror = nullptr);
  ~SkillStore();
  SkillStore(const SkillStore&) = delete;
  SkillStore& operator=(const SkillStore&) = delete;

  /// Creates the observation's skill or adds the observation to it, in one transaction, then
  /// mirrors it (put while active, remove once retired). A contradiction is recorded the same
  /// way: it is an observation whose high < 1. Recording the same evidence (run and candidate
  /// pair) again changes nothing. InputError naming the field for an observation with an empty
  /// family, device or template, without changes, with a repeated knob, a change whose from equals
  /// its to, a value that is not an integer or string, or an effect that is not 0 < low <= value <=
  /// high.
  Skill record(const SkillObservation& observation);

  /// Active skills under the query's condition, best first by Skill::rank().
  std::vector<Skill> find(const SkillQuery& query);
  /// Every skill, retired ones too, by id.
  std::vector<Skill> all();
  std::optional<Skill> get(int64_t id);

  /// Puts every active skill into the mirror and removes every retired one: repairs the
  /// knowledge base after a mirror call failed once the store had committed.
  void mirror_all();

 private:
  std::unique_ptr<sqlite::Connection> connection_;
  SkillMirror* mirror_;
};

}  // namespace kernelarc
