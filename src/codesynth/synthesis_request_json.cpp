#include "codesynth/synthesis_request_json.h"

namespace kernelarc {

namespace {

nlohmann::json candidate_to_json(const CandidateContext& candidate) {
  return {{"candidate_id", candidate.candidate_id},
          {"solution", solution_to_json(candidate.solution)},
          {"status", candidate.status ? status_name(*candidate.status) : ""},
          {"results", candidate.results},
          {"diagnosis", candidate.diagnosis},
          {"log", candidate.log}};
}

}  // namespace

nlohmann::json synthesis_request_to_json(const SynthesisRequest& request) {
  const Problem& problem = *request.problem;
  nlohmann::json workloads = nlohmann::json::array();
  for (const Workload& workload : request.workloads.empty() ? problem.workloads : request.workloads)
    workloads.push_back(resolve_axes(problem.definition, workload));
  nlohmann::json inspirations = nlohmann::json::array();
  for (const CandidateContext& inspiration : request.inspirations)
    inspirations.push_back(candidate_to_json(inspiration));
  return {{"protocol", kSynthesisProtocolVersion},
          {"problem", problem.definition.raw},
          {"workloads", std::move(workloads)},
          {"device", request.device},
          {"hardware", request.hardware},
          {"agent", request.agent},
          {"strategy", request.strategy},
          {"move", synthesis_move_name(request.move)},
          {"parent", request.parent ? candidate_to_json(*request.parent) : nlohmann::json()},
          {"inspirations", std::move(inspirations)},
          {"knowledge", request.knowledge},
          {"board", request.board},
          {"recent_failures", request.recent_failures},
          {"seed", request.seed}};
}

}  // namespace kernelarc
