#include "app/code_synth_setup.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/backend.h"
#include "backend/calibrate.h"
#include "backend/cpu/cpu_compiler.h"
#include "backend/process.h"
#include "codesynth/command_synthesizer.h"
#include "codesynth/llm_synthesizer.h"
#include "codesynth/prompt_builder.h"
#include "core/error.h"
#include "kb/knowledge_base.h"
#include "llm/ensemble.h"
#include "llm/http_chat_client.h"
#include "llm/response_cache.h"

namespace kernelarc {

SynthChoice parse_synth(const std::string& text) {
  if (text == "template") return {true, ""};
  if (text == "llm" || text == "command") return {false, text};
  if (text == "template+llm") return {true, "llm"};
  if (text == "template+command") return {true, "command"};
  throw InputError(
      fmt::format("--synth {}: expected template, llm, command, template+llm or "
                  "template+command",
                  text));
}

struct CodeSynthSetup::Owned {
  LlmConfig config;
  std::unique_ptr<ChatClient> client;
  std::unique_ptr<CodeSynthesizer> synthesizer;
};

namespace {

/// A run that would fail every request on a missing key stops before it starts. Replay sends
/// nothing and needs no key. The key itself is not read here beyond "is it set".
void check_keys_set(const LlmConfig& config, const CodeSynthFlags& flags) {
  for (std::size_t index = 0; index < config.models.size(); ++index) {
    const ModelConfig& model = config.models[index];
    if (model.api_key_env.empty()) continue;
    const char* value = std::getenv(model.api_key_env.c_str());
    if (value != nullptr && *value != '\0') continue;
    const std::string where = flags.llm_config.empty() ? std::string("--llm-api-key-env")
                                                       : fmt::format("{}: models[{}].api_key_env",
                                                                     flags.llm_config, index);
    throw InputError(fmt::format(
        "{}: the environment variable {} (the key of model \"{}\") is not set or empty; "
        "export it, or run with --llm-replay to answer from the response cache only",
        where, model.api_key_env, model.name));
  }
}

LlmConfig llm_config_from(const CodeSynthFlags& flags) {
  if (!flags.llm_config.empty()) {
    if (!flags.endpoint.empty() || !flags.model.empty())
      throw InputError("--llm-config and --llm-endpoint/--llm-model: give one or the other");
    return load_llm_config(flags.llm_config);
  }
  if (flags.endpoint.empty() || flags.model.empty())
    throw InputError(
        "--synth llm: give --llm-config FILE, or --llm-endpoint URL and --llm-model NAME");
  LlmConfig config;
  config.models.push_back(
      model_from_flags(flags.provider, flags.endpoint, flags.model, flags.api_key_env));
  return config;
}

}  // namespace

CodeSynthSetup::CodeSynthSetup(const std::string& kind, const CodeSynthFlags& flags,
                               const std::filesystem::path& workspace)
    : owned_(std::make_unique<Owned>()) {
  if (kind == "command") {
    if (flags.command.empty())
      throw InputError("--synth command: give the program with --synth-command");
    CommandSynthesizerOptions options;
    options.argv = {"/bin/sh", "-c", flags.command};
    options.timeout_s = flags.command_timeout_s;
    owned_->synthesizer = std::make_unique<CommandSynthesizer>(std::move(options));
    description_ = fmt::format("command: {}", flags.command);
  } else {
    owned_->config = llm_config_from(flags);
    LlmConfig& config = owned_->config;
    if (!flags.prompt_dir.empty()) config.prompt_dir = flags.prompt_dir;
    if (!flags.replay) check_keys_set(config, flags);
    const std::filesystem::path cache =
        flags.cache_dir.empty() ? workspace / "llm-cache" : std::filesystem::path(flags.cache_dir);
    owned_->client = std::make_unique<CachingChatClient>(
        flags.replay ? nullptr : std::make_unique<HttpChatClient>(), cache,
        flags.replay ? CacheMode::Replay : CacheMode::Record);
    owned_->synthesizer = std::make_unique<LlmSynthesizer>(
        *owned_->client,
        [&config](uint64_t seed) -> const ModelConfig& { return choose_model(config, seed); },
        load_prompt_templates(config.prompt_dir));
    std::vector<std::string> models;
    for (const ModelConfig& model : config.models)
      models.push_back(fmt::format("{} (weight {})", model.name, model.weight));
    description_ = fmt::format("llm: {}; responses cached in {}{}", fmt::join(models, ", "),
                               cache.string(), flags.replay ? " (replay only)" : "");
    max_tokens_ = config.max_tokens_total;
    max_cost_usd_ = config.max_cost_usd;
    repair_rounds_ = config.repair_rounds;
  }
  if (flags.max_tokens > 0) max_tokens_ = flags.max_tokens;
  if (flags.max_cost_usd > 0) max_cost_usd_ = flags.max_cost_usd;
  if (flags.repair_rounds >= 0) repair_rounds_ = flags.repair_rounds;
  synthesizer_ = owned_->synthesizer.get();
}

CodeSynthSetup::~CodeSynthSetup() = default;

namespace {

/// The size of cpu0's cache at `level` of `type` ("Data", "Unified") from sysfs, in bytes; 0
/// when sysfs does not say (many VMs).
int64_t sysfs_cache_bytes(int level, const std::string& type) {
  namespace fs = std::filesystem;
  std::error_code error;
  for (fs::directory_iterator it("/sys/devices/system/cpu/cpu0/cache", error), end;
       !error && it != end; it.increment(error)) {
    auto read = [&](const char* name) {
      std::ifstream file(it->path() / name);
      std::string text;
      std::getline(file, text);
      return text;
    };
    if (read("level") != std::to_string(level) || read("type") != type) continue;
    const std::string size = read("size");  // "48K", "2048K", "32M"
    if (size.empty()) return 0;
    const int64_t number = std::atoll(size.c_str());
    return size.back() == 'M' ? number << 20 : size.back() == 'K' ? number << 10 : number;
  }
  return 0;
}

std::string kib(int64_t bytes) {
  return bytes >= (int64_t{4} << 20) ? fmt::format("{} MiB", bytes >> 20)
                                     : fmt::format("{} KiB", bytes >> 10);
}

/// The vector ISA extensions this CPU has, as the compiler's -m names.
std::string cpu_isa() {
  std::vector<std::string> isa;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) isa.push_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) isa.push_back("avx512bw");
  if (__builtin_cpu_supports("avx512vl")) isa.push_back("avx512vl");
  if (__builtin_cpu_supports("avx512vnni")) isa.push_back("avx512vnni");
  if (__builtin_cpu_supports("avx512bf16")) isa.push_back("avx512bf16");
  if (__builtin_cpu_supports("avx2")) isa.push_back("avx2");
  if (__builtin_cpu_supports("fma")) isa.push_back("fma");
  if (__builtin_cpu_supports("f16c")) isa.push_back("f16c");
#elif defined(__aarch64__)
  isa.push_back("neon");
#endif
  return isa.empty() ? "scalar only" : fmt::format("{}", fmt::join(isa, ", "));
}

std::string cpu_facts(const Calibration& c) {
  std::string text = fmt::format("{} (cpu): {} cores; ISA {}; fp32 FMA {:.2f} TFLOP/s",
                                 c.description, c.cores, cpu_isa(), c.fp32_fma_tflops);
  if (const auto isa = c.environment.find("fma_isa"); isa != c.environment.end())
    text += fmt::format(" (measured with {})", isa->second);
  text += fmt::format("; copy bandwidth {:.0f} GB/s", c.copy_bandwidth_gbs);
  int64_t l1 = sysfs_cache_bytes(1, "Data");
  if (l1 == 0) l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE) > 0 ? sysconf(_SC_LEVEL1_DCACHE_SIZE) : 0;
  if (l1 > 0) text += fmt::format("; L1d {} per core", kib(l1));
  if (c.l2_bytes > 0) text += fmt::format("; L2 {} per core", kib(c.l2_bytes));
  // A VM may report a host's or an invented last-level cache (508 MiB was seen): sysfs, when it
  // has one, caps it, and a size no CPU has per socket is called out rather than trusted.
  int64_t llc = c.llc_bytes;
  if (const int64_t sysfs = sysfs_cache_bytes(3, "Unified"); sysfs > 0 && sysfs < llc) llc = sysfs;
  if (llc > (int64_t{384} << 20))
    text += fmt::format(
        "; last-level cache reported as {}, not credible (a VM?): plan for a "
        "few MiB per core",
        kib(llc));
  else if (llc > 0)
    text += fmt::format("; last-level cache {} shared", kib(llc));
  return text;
}

}  // namespace

std::string hardware_facts(const std::filesystem::path& workspace, const std::string& device) {
  const auto calibration = load_calibration(workspace, device);
  if (!calibration) return fmt::format("{} (not calibrated: run kernelarc calibrate)", device);
  const Calibration& c = *calibration;
  const Backend& backend = backend_for(c.device);
  if (backend.kind() == DeviceKind::Cpu)
    return cpu_facts(c) + "\nCompiler: " + backend.compiler_text();
  std::string text = fmt::format("{} ({}): copy bandwidth {:.0f} GB/s, fp32 FMA {:.1f} TFLOP/s",
                                 c.description, c.device, c.copy_bandwidth_gbs, c.fp32_fma_tflops);
  for (const auto& [dtype, tflops] : c.tensor_tflops)
    text += fmt::format(", {} tensor cores {:.0f} TFLOP/s", dtype, tflops);
  if (c.sm_count > 0) text += fmt::format(", {} SMs", c.sm_count);
  if (c.cores > 0) text += fmt::format(", {} cores", c.cores);
  if (c.l2_bytes > 0) text += fmt::format(", L2 {} KiB", c.l2_bytes / 1024);
  if (c.llc_bytes > 0) text += fmt::format(", last-level cache {} KiB", c.llc_bytes / 1024);
  text += "\nCompiler: " + backend.compiler_text();
  for (const auto& [name, value] : c.environment)
    if (name == "driver" || name == "runtime" || name == "nvrtc")
      text += fmt::format("; {} {}", name, value);
  return text;
}

namespace {

/// Whether a chunk is about the other kind of device: a GPU note in a CPU prompt misleads.
bool about_other_device(const KbHit& hit, bool cpu) {
  static const std::vector<std::string> kGpuWords = {
      "GPU",           "CUDA",      "warp",   "__global__", "tensor core", "Tensor Core",
      "shared memory", "HBM",       "SM ",    "SMs",        "nvcc",        "NVRTC",
      "Hopper",        "Blackwell", "Ampere", "H100",       "H200"};
  static const std::vector<std::string> kCpuWords = {"AVX",       "OpenMP", "-march",
                                                     "SIMD lane", "L1d",    "hyperthread"};
  const std::string text = hit.title + "\n" + hit.heading + "\n" + hit.text;
  const std::vector<std::string>& words = cpu ? kGpuWords : kCpuWords;
  return std::any_of(words.begin(), words.end(),
                     [&](const std::string& word) { return text.find(word) != std::string::npos; });
}

}  // namespace

std::vector<std::string> synthesis_knowledge(const std::filesystem::path& workspace,
                                             const std::string& family, const std::string& device,
                                             int limit) {
  KnowledgeBase knowledge = open_knowledge_base(workspace);
  knowledge.ensure_builtin_notes();
  const Backend& backend = backend_for(device);
  const bool cpu = backend.kind() == DeviceKind::Cpu;
  KbQuery query;
  query.text = family;
  query.keys.families = {family};
  query.keys.hardware = {backend.kind_name()};
  query.limit = 3 * limit;  // room for the chunks about the other device, dropped below
  std::vector<std::string> texts;
  for (const KbHit& hit : knowledge.search(query)) {
    if (about_other_device(hit, cpu)) continue;
    texts.push_back(fmt::format("{} > {}\n{}", hit.title, hit.heading, hit.text));
    if (static_cast<int>(texts.size()) == limit) break;
  }
  return texts;
}

}  // namespace kernelarc
