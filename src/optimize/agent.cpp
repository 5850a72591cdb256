#include "optimize/agent.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "optimize/board_text.h"
#include "optimize/code_moves.h"

namespace kernelarc {

namespace {

PolicyOptions policy_options(const std::string& name, const Strategy& strategy,
                             const std::vector<std::string>& templates, const SpaceLookup& spaces) {
  PolicyOptions options;
  options.templates = templates;
  options.spaces = spaces;
  options.operator_options.agent = name;
  options.operator_options.weights = strategy.weights;
  options.operator_options.mutable_knobs = strategy_knob_filter(strategy);
  return options;
}

std::vector<std::string> require_templates(const std::string& agent,
                                           std::vector<std::string> templates) {
  if (templates.empty())
    throw InputError(
        fmt::format("agent {}: no template has a knob its strategy may change", agent));
  return templates;
}

KnobStep step_of(const KnobSuggestion& suggestion) {
  KnobStep step;
  step.knob = suggestion.knob;
  step.offset = suggestion.direction == KnobDirection::Lower ? -1 : 1;
  if (suggestion.direction == KnobDirection::Set) step.value = suggestion.value;
  return step;
}

}  // namespace

Agent::Agent(std::string name, const Strategy& strategy, std::vector<std::string> templates,
             SpaceLookup spaces, AgentOptions options)
    : name_(std::move(name)),
      strategy_(&strategy),
      templates_(require_templates(name_, std::move(templates))),
      spaces_(std::move(spaces)),
      options_(std::move(options)),
      rng_(options_.seed),
      policy_(make_policy(options_.policy, policy_options(name_, strategy, templates_, spaces_))),
      operator_(templates_, spaces_,
                policy_options(name_, strategy, templates_, spaces_).operator_options) {}

Proposal Agent::start_at(const std::string& template_name, KnobPoint point) const {
  Proposal proposal;
  proposal.agent = name_;
  proposal.template_name = template_name;
  proposal.point = std::move(point);
  proposal.operation = Operation::Seed;
  return proposal;
}

std::vector<const SkillHint*> Agent::hints_for(const std::string& template_name) const {
  std::vector<const SkillHint*> hints;
  for (const SkillHint& hint : options_.hints)
    if (hint.template_name == template_name) hints.push_back(&hint);
  return hints;
}

std::optional<Proposal> Agent::warm_seed_proposal() const {
  for (const std::string& name : templates_) {
    const auto hints = hints_for(name);
    if (hints.empty()) continue;
    const ConstrainedSpace* space = spaces_(name);
    const KnobPoint start = space->space().default_point();
    // The strongest skill alone first, then all of them together: a change verified in one
    // context can hurt in another, so the combination is the less certain start.
    const auto strongest = std::max_element(hints.begin(), hints.end(),
                                            [](auto* a, auto* b) { return a->weight < b->weight; });
    for (const KnobPoint& point : {apply_hints(start, {*strongest}), apply_hints(start, hints)}) {
      if (point == start || !space->is_valid(point) || tree_.contains(name, point)) continue;
      Proposal proposal = start_at(name, point);
      proposal.prior = hint_prior(point, hints);
      return proposal;
    }
  }
  return std::nullopt;
}

std::optional<Proposal> Agent::seed_proposal() const {
  if (auto warm = warm_seed_proposal()) return warm;
  for (const std::string& name : templates_) {
    const ConstrainedSpace* space = spaces_(name);
    KnobPoint point = space->space().default_point();
    if (!space->is_valid(point)) {
      auto first = space->first_valid(1);
      if (first.empty()) continue;
      point = std::move(first.front());
    }
    if (tree_.contains(name, point)) continue;
    return start_at(name, std::move(point));
  }
  return std::nullopt;
}

void Agent::maybe_make_code(Proposal& proposal) {
  if (options_.code_template.empty()) return;
  if (proposal.template_name != options_.code_template) {
    if (!proposal.parent || rng_.uniform() >= options_.code_share) return;
    proposal.template_name = options_.code_template;
    proposal.prior.reset();
  }
  // Revisions number the agent's programs; the value the operator drew means nothing.
  proposal.point = {{std::string(kRevisionKnob), KnobValue(int64_t{code_nodes_})}};
}

std::optional<std::string> Agent::maybe_follow_diagnosis(Proposal& proposal) {
  if (!proposal.parent || proposal.template_name == options_.code_template) return std::nullopt;
  const auto found = suggestions_.find(*proposal.parent);
  if (found == suggestions_.end()) return std::nullopt;
  const KnobSpace& space = spaces_(tree_.node(*proposal.parent).template_name)->space();
  std::vector<const KnobSuggestion*> usable;
  std::vector<KnobStep> steps;
  for (const KnobSuggestion& suggestion : found->second) {
    const auto index = space.knob_index(suggestion.knob);
    if (!index || !strategy_changes(*strategy_, space.knobs()[*index])) continue;
    usable.push_back(&suggestion);
    steps.push_back(step_of(suggestion));
  }
  // No draw without a usable suggestion, so a search without diagnoses draws as before.
  if (steps.empty() || rng_.uniform() >= options_.diagnosis_share) return std::nullopt;
  auto stepped = operator_.step(tree_, *proposal.parent, steps, rng_);
  if (!stepped) return std::nullopt;
  proposal = std::move(stepped->proposal);
  ++diagnosis_moves_;
  return "diagnosis: " + suggestion_text(*usable[stepped->step]);
}

std::optional<Proposal> Agent::repair_proposal() {
  if (!failed_code_) return std::nullopt;
  const int failed = *std::exchange(failed_code_, std::nullopt);
  int chain = 0;  // repairs already made in a row up to this node
  for (std::optional<int> node = failed; node && chain <= options_.repair_rounds;) {
    const SearchNode& current = tree_.node(*node);
    if (!current.parent || tree_.node(*current.parent).status != CandidateStatus::Failed ||
        !is_code(tree_.node(*current.parent)))
      break;
    ++chain;
    node = current.parent;
  }
  if (chain >= options_.repair_rounds) return std::nullopt;
  Proposal proposal;
  proposal.parent = failed;
  proposal.agent = name_;
  proposal.template_name = options_.code_template;
  proposal.operation = Operation::Inherit;
  maybe_make_code(proposal);
  return proposal;
}

std::optional<AgentProposal> Agent::propose(const SharedView& view) {
  if (auto repair = repair_proposal())
    return AgentProposal{std::move(*repair), std::nullopt, {}, std::nullopt};
  if (auto seed = seed_proposal()) {
    maybe_make_code(*seed);  // a template seed has no parent, so it stays a template point
    return AgentProposal{std::move(*seed), std::nullopt, {}, std::nullopt};
  }
  if (auto adopted = adopt_team_best(view)) return adopted;
  if (since_improvement_ >= options_.plateau) {
    since_improvement_ = 0;
    if (auto drafted = draft(view)) return drafted;
  }
  if (auto proposal = policy_->propose(tree_, rng_)) {
    maybe_make_code(*proposal);
    std::optional<std::string> note = maybe_follow_diagnosis(*proposal);
    if (const auto hints = hints_for(proposal->template_name); !hints.empty())
      proposal->prior = hint_prior(proposal->point, hints);
    return AgentProposal{std::move(*proposal), std::nullopt, {}, std::move(note)};
  }
  return draft(view);
}

std::optional<AgentProposal> Agent::draft(const SharedView& view) {
  // The three ways in turn, starting from a different one each time, so that repeated
  // plateaus try all of them.
  const int first = drafts_++ % 3;
  for (int i = 0; i < 3; ++i) {
    std::optional<AgentProposal> drafted;
    switch ((first + i) % 3) {
      case 0:
        drafted = draft_from_board(view);
        break;
      case 1:
        drafted = draft_from_other(view);
        break;
      default:
        drafted = draft_restart();
        break;
    }
    if (drafted) return drafted;
  }
  return std::nullopt;
}

std::optional<AgentProposal> Agent::draft_from_board(const SharedView& view) {
  std::map<std::string, std::vector<const Conclusion*>> by_template;
  // A program's revision number is a name, not a knob: no conclusion moves it.
  for (const Conclusion& conclusion : view.conclusions)
    if (conclusion.template_name != options_.code_template &&
        std::find(templates_.begin(), templates_.end(), conclusion.template_name) !=
            templates_.end())
      by_template[conclusion.template_name].push_back(&conclusion);
  for (const std::string& name : templates_) {
    const auto found = by_template.find(name);
    if (found == by_template.end()) continue;
    const ConstrainedSpace* space = spaces_(name);
    const auto own_best = tree_.best(name);
    KnobPoint point = own_best ? tree_.node(*own_best).point : space->space().default_point();
    int applied = 0;
    for (const Conclusion* conclusion : found->second) {
      KnobPoint changed = point;
      for (const KnobChange& change : conclusion->changes) changed[change.knob] = change.to;
      if (changed == point || !space->is_valid(changed)) continue;
      point = std::move(changed);
      ++applied;
    }
    if (applied == 0 || tree_.contains(name, point)) continue;
    return AgentProposal{
        start_at(name, std::move(point)), board_start_text(name_, applied, name), {}, std::nullopt};
  }
  return std::nullopt;
}

bool Agent::can_start_from(const AgentBest& other) const {
  // Programs are their agent's own: another agent's revision 3 is not this agent's.
  return other.agent != name_ && other.template_name != options_.code_template &&
         std::find(templates_.begin(), templates_.end(), other.template_name) != templates_.end() &&
         !tree_.contains(other.template_name, other.point);
}

AgentProposal Agent::start_from(const AgentBest& other, std::string_view reason) const {
  return AgentProposal{start_at(other.template_name, other.point),
                       start_from_text(name_, reason, other.agent, other.candidate_id,
                                       other.template_name, format_knob_point(other.point)),
                       {other.candidate_id},
                       std::nullopt};
}

std::optional<AgentProposal> Agent::draft_from_other(const SharedView& view) {
  for (const AgentBest& other : view.bests)
    if (can_start_from(other)) return start_from(other, "plateaued");
  return std::nullopt;
}

std::optional<AgentProposal> Agent::adopt_team_best(const SharedView& view) {
  if (strategy_->roles.empty()) return std::nullopt;
  for (const AgentBest& other : view.bests) {
    if (best_ && !improves_beyond_noise(other.fitness, other.noise, best_fitness_, best_noise_,
                                        options_.min_gain))
      return std::nullopt;  // the bests come best first: no later one beats this agent's either
    if (can_start_from(other)) return start_from(other, "was beaten beyond noise");
  }
  return std::nullopt;
}

std::optional<AgentProposal> Agent::draft_restart() {
  auto proposal = operator_.apply(Operation::Restart, tree_, std::nullopt, rng_);
  if (!proposal) return std::nullopt;
  proposal->agent = name_;
  maybe_make_code(*proposal);
  // Built before the proposal is moved into the result: the members are initialized in order,
  // so a text made inside the braces read the template name after it had been moved out.
  std::string text = restart_text(name_, proposal->template_name);
  return AgentProposal{std::move(*proposal), std::move(text), {}, std::nullopt};
}

int Agent::add(const Proposal& proposal) {
  const int node = tree_.add(proposal);
  if (proposal.template_name == options_.code_template) ++code_nodes_;
  return node;
}

bool Agent::record(int node, const CandidateResult& result,
                   std::vector<KnobSuggestion> suggestions) {
  tree_.record(node, result);
  if (result.passed && !suggestions.empty()) suggestions_[node] = std::move(suggestions);
  policy_->observe(tree_, node);
  bool improved = false;
  if (result.passed) {
    improved = !best_ || improves_beyond_noise(*result.fitness, result.noise, best_fitness_,
                                               best_noise_, options_.min_gain);
    if (improved) {
      best_ = node;
      best_fitness_ = *result.fitness;
      best_noise_ = result.noise;
    }
  }
  since_improvement_ = improved ? 0 : since_improvement_ + 1;
  if (!result.passed && is_code(tree_.node(node)) && options_.repair_rounds > 0)
    failed_code_ = node;
  return improved;
}

nlohmann::json Agent::summary() const {
  nlohmann::json json = {{"strategy", strategy_->name}, {"templates", templates_},
                         {"candidates", tree_.size()},  {"since_improvement", since_improvement_},
                         {"drafts", drafts_},           {"diagnosis_moves", diagnosis_moves_}};
  if (best_) {
    const SearchNode& node = tree_.node(*best_);
    json["best"] = {{"template", node.template_name},
                    {"point", format_knob_point(node.point)},
                    {"fitness", best_fitness_}};
  }
  return json;
}

}  // namespace kernelarc
