#include "llm/llm_config.h"

#include <cctype>
#include <climits>
#include <regex>
#include <set>
#include <type_traits>

#include <fmt/format.h>

#include "core/error.h"
#include "llm/providers.h"

namespace kernelarc {

namespace {

enum class Bound { NonNegative, Positive };

bool within(double value, Bound bound) {
  return bound == Bound::Positive ? value > 0 : value >= 0;
}

std::string expected(Bound bound, std::string_view kind) {
  return fmt::format("expected a {} {}", bound == Bound::Positive ? "positive" : "non-negative",
                     kind);
}

/// The number at `key` (`fallback` when absent), checked against the bound; an int must also
/// fit in int.
template <typename T>
T read_bounded(const OrderedJson& object, std::string_view key, T fallback, Bound bound,
               std::string_view where, std::string_view parent) {
  const OrderedJson* member = find_member(object, key);
  if (member == nullptr) return fallback;
  const std::string field = field_path(parent, key);
  constexpr bool integer = std::is_integral_v<T>;
  const auto value = [&] {
    if constexpr (integer)
      return expect_int(*member, where, field);
    else
      return expect_number(*member, where, field);
  }();
  if (!within(static_cast<double>(value), bound))
    throw_input_error(
        where, field,
        expected(bound, integer ? "integer" : "number") + ", got " + describe_json(*member));
  if (integer && value > INT_MAX)
    throw_input_error(where, field, fmt::format("{} is too large (at most {})", value, INT_MAX));
  return static_cast<T>(value);
}

double read_number(const OrderedJson& object, std::string_view key, double fallback, Bound bound,
                   std::string_view where, std::string_view parent) {
  return read_bounded(object, key, fallback, bound, where, parent);
}

int read_int(const OrderedJson& object, std::string_view key, int fallback, Bound bound,
             std::string_view where, std::string_view parent) {
  return read_bounded(object, key, fallback, bound, where, parent);
}

void check_provider(const std::string& provider, std::string_view where, std::string_view field) {
  if (is_known_provider(provider)) return;
  throw_input_error(where, field,
                    fmt::format("expected \"openai\" or \"anthropic\", got \"{}\"", provider));
}

/// http(s)://host[:port][/path]: a host of letters, digits, '.', '-', '_' (or [IPv6]), a port
/// of 1 to 65535, and a path without spaces, quotes or a query.
bool is_endpoint_url(const std::string& endpoint) {
  static const std::regex pattern(
      R"(https?://([A-Za-z0-9._\-]+|\[[0-9A-Fa-f:.]+\])(:([0-9]{1,5}))?(/[A-Za-z0-9._~%!$&'()*+,;=:@/\-]*)?)");
  std::smatch match;
  if (!std::regex_match(endpoint, match, pattern)) return false;
  if (match[3].matched) {
    const int port = std::stoi(match[3].str());
    if (port < 1 || port > 65535) return false;
  }
  return true;
}

void check_endpoint(const std::string& endpoint, std::string_view where, std::string_view field) {
  if (is_endpoint_url(endpoint)) return;
  throw_input_error(where, field,
                    fmt::format("expected an http:// or https:// URL (http://host[:port]/path), "
                                "got \"{}\"",
                                endpoint));
}

void check_model_name(const std::string& model, std::string_view where, std::string_view field) {
  if (model.empty()) throw_input_error(where, field, "must not be empty");
}

// The value is never repeated in the message: a key pasted here by mistake would be printed.
void check_key_env(const std::string& name, std::string_view where, std::string_view field) {
  bool valid = name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]));
  for (const char c : name)
    valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!valid) {
    throw_input_error(where, field,
                      "expected the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*) "
                      "that holds the key, not the key itself");
  }
}

std::string read_string(const OrderedJson& object, std::string_view key, std::string_view where,
                        std::string_view parent) {
  return expect_string(require_member(object, key, where, parent), where, field_path(parent, key));
}

ModelConfig parse_model(const OrderedJson& spec, std::string_view where, const std::string& field) {
  expect_object(spec, where, field);
  if (find_member(spec, "api_key") != nullptr) {
    throw_input_error(where, field_path(field, "api_key"),
                      "keys must not be written in the configuration: put the key in an "
                      "environment variable and name it in \"api_key_env\"");
  }
  reject_unknown_keys(spec,
                      {"name", "provider", "endpoint", "model", "api_key_env", "weight",
                       "temperature", "max_tokens", "timeout_s", "retries", "backoff_s",
                       "price_input_per_mtok", "price_output_per_mtok"},
                      where, field);
  ModelConfig model;
  model.provider = read_string(spec, "provider", where, field);
  check_provider(model.provider, where, field_path(field, "provider"));
  model.endpoint = read_string(spec, "endpoint", where, field);
  check_endpoint(model.endpoint, where, field_path(field, "endpoint"));
  model.model = read_string(spec, "model", where, field);
  check_model_name(model.model, where, field_path(field, "model"));
  model.name = model.model + "@" + model.provider;
  if (const OrderedJson* name = find_member(spec, "name")) {
    model.name = expect_string(*name, where, field_path(field, "name"));
    if (model.name.empty())
      throw_input_error(where, field_path(field, "name"), "must not be empty");
  }
  if (const OrderedJson* key_env = find_member(spec, "api_key_env")) {
    model.api_key_env = expect_string(*key_env, where, field_path(field, "api_key_env"));
    check_key_env(model.api_key_env, where, field_path(field, "api_key_env"));
  }
  const ModelConfig defaults;
  model.weight = read_number(spec, "weight", defaults.weight, Bound::NonNegative, where, field);
  model.temperature =
      read_number(spec, "temperature", defaults.temperature, Bound::NonNegative, where, field);
  model.max_tokens =
      read_int(spec, "max_tokens", defaults.max_tokens, Bound::Positive, where, field);
  model.timeout_s =
      read_number(spec, "timeout_s", defaults.timeout_s, Bound::Positive, where, field);
  model.retries = read_int(spec, "retries", defaults.retries, Bound::NonNegative, where, field);
  model.backoff_s =
      read_number(spec, "backoff_s", defaults.backoff_s, Bound::NonNegative, where, field);
  model.price_input_per_mtok =
      read_number(spec, "price_input_per_mtok", 0, Bound::NonNegative, where, field);
  model.price_output_per_mtok =
      read_number(spec, "price_output_per_mtok", 0, Bound::NonNegative, where, field);
  return model;
}

std::vector<ModelConfig> parse_models(const OrderedJson& root, std::string_view where) {
  const OrderedJson& list = require_member(root, "models", where, "");
  if (!list.is_array() || list.empty())
    throw_input_error(where, "models", "expected a non-empty array, got " + describe_json(list));
  std::vector<ModelConfig> models;
  std::set<std::string> names;
  bool any_weight = false;
  for (std::size_t index = 0; index < list.size(); ++index) {
    const std::string field = field_index("models", index);
    models.push_back(parse_model(list[index], where, field));
    if (!names.insert(models.back().name).second) {
      throw_input_error(where, field_path(field, "name"),
                        fmt::format("\"{}\" names another model too; give each a distinct "
                                    "\"name\"",
                                    models.back().name));
    }
    any_weight = any_weight || models.back().weight > 0;
  }
  if (!any_weight)
    throw_input_error(where, "models", "every weight is zero: at least one must be positive");
  return models;
}

void parse_budget(const OrderedJson& budget, std::string_view where, LlmConfig& config) {
  expect_object(budget, where, "budget");
  reject_unknown_keys(budget, {"max_tokens", "max_cost_usd"}, where, "budget");
  if (const OrderedJson* tokens = find_member(budget, "max_tokens")) {
    config.max_tokens_total = expect_int(*tokens, where, "budget.max_tokens");
    if (*config.max_tokens_total <= 0) {
      throw_input_error(where, "budget.max_tokens",
                        "expected a positive integer, got " + describe_json(*tokens));
    }
  }
  if (find_member(budget, "max_cost_usd") != nullptr)
    config.max_cost_usd = read_number(budget, "max_cost_usd", 0, Bound::Positive, where, "budget");
}

}  // namespace

LlmConfig parse_llm_config(const OrderedJson& json, const std::string& where) {
  expect_object(json, where, "");
  reject_unknown_keys(json, {"models", "budget", "repair_rounds", "prompt_dir"}, where, "");
  LlmConfig config;
  config.models = parse_models(json, where);
  if (const OrderedJson* budget = find_member(json, "budget")) parse_budget(*budget, where, config);
  config.repair_rounds =
      read_int(json, "repair_rounds", config.repair_rounds, Bound::NonNegative, where, "");
  if (const OrderedJson* prompt_dir = find_member(json, "prompt_dir"))
    config.prompt_dir = expect_string(*prompt_dir, where, "prompt_dir");
  return config;
}

LlmConfig load_llm_config(const std::filesystem::path& path) {
  LlmConfig config =
      parse_llm_config(parse_json_text(read_text_file(path), path.string()), path.string());
  if (!config.prompt_dir.empty() && config.prompt_dir.is_relative())
    config.prompt_dir = path.parent_path() / config.prompt_dir;
  return config;
}

ModelConfig model_from_flags(const std::string& provider, const std::string& endpoint,
                             const std::string& model, const std::string& api_key_env) {
  constexpr std::string_view kWhere = "command line";
  check_provider(provider, kWhere, "--llm-provider");
  check_endpoint(endpoint, kWhere, "--llm-endpoint");
  check_model_name(model, kWhere, "--llm-model");
  check_key_env(api_key_env, kWhere, "--llm-api-key-env");
  ModelConfig config;
  config.name = model + "@" + provider;
  config.provider = provider;
  config.endpoint = endpoint;
  config.model = model;
  config.api_key_env = api_key_env;
  return config;
}

}  // namespace kernelarc
