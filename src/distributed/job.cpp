#include "distributed/job.h"

#include <fmt/format.h>

#include "core/error.h"
#include "eval/trace_from_json.h"

namespace kernelarc {

namespace {

// Ordered: a trace keeps its fields' order, as it is stored.
template <typename Parse>
auto parse_json(const std::string& text, const std::string& where, Parse parse) {
  try {
    return parse(OrderedJson::parse(text));
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("{}: {}", where, error.what()));
  }
}

}  // namespace

std::string job_to_json(const Job& job) {
  return nlohmann::json{{"protocol", job.protocol}, {"ticket", job.ticket},
                        {"reply_to", job.reply_to}, {"device_kind", job.device_kind},
                        {"hardware", job.hardware}, {"problem", job.problem},
                        {"oracle", job.oracle},     {"solution", job.solution},
                        {"guard", job.guard},       {"refused_by", job.refused_by}}
      .dump();
}

Job job_from_json(const std::string& text, const std::string& where) {
  return parse_json(text, where, [](const OrderedJson& json) {
    Job job;
    job.protocol = json.at("protocol").get<int>();
    job.ticket = json.at("ticket").get<uint64_t>();
    job.reply_to = json.at("reply_to").get<std::string>();
    job.device_kind = json.at("device_kind").get<std::string>();
    job.hardware = json.at("hardware").get<std::string>();
    job.problem = json.at("problem").get<std::string>();
    job.oracle = json.at("oracle").get<std::string>();
    job.solution = json.at("solution").get<std::string>();
    job.guard = nlohmann::json::parse(json.at("guard").dump());
    job.refused_by = json.value("refused_by", std::vector<std::string>{});
    return job;
  });
}

std::string result_to_json(const JobResult& result) {
  OrderedJson traces = OrderedJson::array();
  for (const Trace& trace : result.traces) traces.push_back(trace_to_json(trace));
  return OrderedJson{{"ticket", result.ticket},     {"solution", result.solution},
                     {"worker", result.worker},     {"refused", result.refused},
                     {"requeued", result.requeued}, {"traces", traces}}
      .dump();
}

JobResult result_from_json(const std::string& text, const std::string& where) {
  return parse_json(text, where, [&](const OrderedJson& json) {
    JobResult result;
    result.ticket = json.at("ticket").get<uint64_t>();
    result.solution = json.at("solution").get<std::string>();
    result.worker = json.at("worker").get<std::string>();
    result.refused = json.at("refused").get<std::string>();
    result.requeued = json.at("requeued").get<bool>();
    for (const OrderedJson& trace : json.at("traces"))
      result.traces.push_back(trace_from_json(trace, where));
    return result;
  });
}

nlohmann::json guard_settings_to_json(const GuardFlags& flags,
                                      const std::vector<Workload>& selected) {
  std::vector<std::string> uuids;
  for (const Workload& workload : selected) uuids.push_back(workload.uuid);
  return {{"trials", flags.trials},
          {"warmup", flags.warmup},
          {"iterations", flags.iterations},
          {"budget_s", flags.budget_s},
          {"checked_timed_calls", flags.checked_timed_calls},
          {"timeout_ms", flags.timeout_ms},
          {"seed", flags.seed},
          {"cflags", flags.cflags},
          {"workloads", uuids}};
}

void apply_guard_settings(const nlohmann::json& settings, GuardFlags& flags) {
  flags.trials = settings.at("trials").get<int>();
  flags.warmup = settings.at("warmup").get<int>();
  flags.iterations = settings.at("iterations").get<int>();
  flags.budget_s = settings.at("budget_s").get<double>();
  flags.checked_timed_calls = settings.at("checked_timed_calls").get<int>();
  flags.timeout_ms = settings.at("timeout_ms").get<int>();
  flags.seed = settings.at("seed").get<uint64_t>();
  flags.cflags = settings.at("cflags").get<std::string>();
  flags.workloads = settings.at("workloads").get<std::vector<std::string>>();
  flags.no_baseline = true;
  flags.json_path.clear();
}

}  // namespace kernelarc
