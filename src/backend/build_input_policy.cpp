#include "backend/build_input_policy.h"

#include <algorithm>
#include <regex>
#include <set>

#include <fmt/format.h>

namespace kernelarc {
namespace {

// Flags are whole-string matches, so "-O3 -wrapper x" as one list element is refused too.
// Deliberately absent: -wrapper, -B, -specs, -fplugin, @file, -include/-imacros/-isystem/
// -iquote, -I or -L outside the solution, -o, -x, -M* (writes dependency files), -save-temps,
// --sysroot, -Wl/-Wa/-Wp (pass-through to other programs), -mllvm, -flto (loads the linker
// plugin), nvcc's -ccbin/--compiler-bindir, -Xlinker, --keep, -odir, --run.

const std::regex kDefine(R"(-[DU][A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+\-]*)?)");
// A relative include path inside the solution's sources (the build runs beside src/).
const std::regex kInclude(R"(-Isrc(/[A-Za-z0-9_][A-Za-z0-9_.\-]*)*/?)");

const std::regex kHostFlag(
    R"(-O[0-3sgz]?|-Ofast|-g[0-3]?|-w|-pthread|-fPIC|-fpic)"
    R"(|-std=(c|gnu)(\+\+)?(99|11|14|17|20|23|2a|2b|2c))"
    R"(|-m(arch|tune|cpu)=[A-Za-z0-9_.+\-]+)"
    R"(|-mprefer-vector-width=(128|256|512|none))"
    R"(|-m(no-)?(avx|avx2|avx512[a-z0-9]*|fma|fma4|f16c|sse[0-9.]*|ssse3|bmi|bmi2|popcnt|lzcnt)"
    R"(|vzeroupper|amx-[a-z0-9]+|neon|sve|sve2|fp16|dotprod))"
    R"(|-f(no-)?(fast-math|unsafe-math-optimizations|trapping-math|math-errno)"
    R"(|finite-math-only|associative-math|reciprocal-math|signed-zeros|rounding-math)"
    R"(|cx-limited-range|unroll-loops|unroll-all-loops|peel-loops|tree-vectorize)"
    R"(|tree-loop-vectorize|tree-slp-vectorize|slp-vectorize|vectorize|omit-frame-pointer)"
    R"(|openmp|openmp-simd|strict-aliasing|prefetch-loop-arrays|exceptions|rtti)"
    R"(|semantic-interposition|ipa-pta|inline-functions|builtin|split-loops|loop-interchange)"
    R"(|unswitch-loops|tracer|variable-expansion-in-unroller|schedule-insns|schedule-insns2)"
    R"(|sched-pressure|modulo-sched|gcse|aggressive-loop-optimizations|signaling-nans))"
    R"(|-ffp-contract=(fast|on|off)|-f(vect|simd)-cost-model=(unlimited|dynamic|cheap|very-cheap))"
    R"(|-falign-(loops|functions|jumps)=[0-9]{1,4})"
    // Warnings only: a comma would make -Wl, -Wa or -Wp pass options to another program.
    R"(|-W(no-)?[a-z][a-z0-9+\-]*(=[a-z0-9+\-]+)?)");

const std::regex kLinkFlag(R"(-l[A-Za-z0-9_+\-][A-Za-z0-9_+.\-]*|-pthread|-fopenmp|-fopenmp-simd)");

const std::regex kArch(R"((sm|compute)_[0-9]{2,3}[af]?)");
const std::regex kCudaFlag(
    R"(-O[0-3]|-G|-g|-w|-lineinfo|--generate-line-info|-use_fast_math|--use_fast_math)"
    R"(|-{1,2}maxrregcount=[0-9]{1,3}|-{1,2}std=c\+\+(11|14|17|20))"
    R"(|-arch=(sm|compute)_[0-9]{2,3}[af]?|--gpu-architecture=(sm|compute)_[0-9]{2,3}[af]?)"
    R"(|(-gencode|--generate-code)=arch=compute_[0-9]{2,3}[af]?,code=(sm|compute)_[0-9]{2,3}[af]?)"
    R"(|-{1,2}(ftz|prec-div|prec-sqrt|fmad)=(true|false))"
    R"(|--extra-device-vectorization|--expt-relaxed-constexpr|--expt-extended-lambda)"
    R"(|--extended-lambda|-restrict|--restrict|-res-usage|--resource-usage)"
    R"(|--default-stream=(per-thread|legacy)|--diag-suppress=[0-9]{1,5}(,[0-9]{1,5})*)"
    R"(|-W(no-)?[a-z][a-z0-9+\-]*)");
const std::regex kPtxasOption(
    R"(-v|--verbose|-O[0-3]|--warn-on-spills|--warn-on-local-memory-usage|-dlcm=(ca|cg|cs))"
    R"(|--allow-expensive-optimizations=(true|false)|-maxrregcount=[0-9]{1,3})");

bool matches(const std::string& flag, const std::regex& pattern) {
  return std::regex_match(flag, pattern);
}

std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (std::size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
    items.push_back(list.substr(start, comma - start));
  items.push_back(list.substr(start));
  return items;
}

bool host_flag(const std::string& flag) {
  return matches(flag, kHostFlag) || matches(flag, kDefine) || matches(flag, kInclude);
}

/// nvcc's "-Xcompiler a,b" and "-Xptxas a,b" forms: every item must be allowed on its own.
std::optional<bool> pass_through(const std::string& flag) {
  for (const auto& [prefix, host] : {std::pair<std::string, bool>{"-Xcompiler=", true},
                                     {"--compiler-options=", true},
                                     {"-Xptxas=", false},
                                     {"--ptxas-options=", false}}) {
    if (!flag.starts_with(prefix)) continue;
    const std::vector<std::string> items = split_commas(flag.substr(prefix.size()));
    return std::all_of(items.begin(), items.end(), [&](const std::string& item) {
      return host ? matches(item, kHostFlag) || matches(item, kDefine)
                  : matches(item, kPtxasOption);
    });
  }
  return std::nullopt;
}

bool allowed(const std::string& flag, FlagTarget target) {
  switch (target) {
    case FlagTarget::HostCompiler:
      return host_flag(flag);
    case FlagTarget::CudaCompiler:
      if (auto through = pass_through(flag)) return *through;
      return matches(flag, kCudaFlag) || matches(flag, kDefine) || matches(flag, kInclude);
    case FlagTarget::Linker:
      if (auto through = pass_through(flag)) return *through;
      return matches(flag, kLinkFlag);
  }
  return false;
}

/// The flags that take their value as the next list element, and how the two join.
std::optional<std::string> joined_form(const std::string& flag, FlagTarget target) {
  if (flag == "-D" || flag == "-U" || flag == "-I") return flag;
  if (target == FlagTarget::HostCompiler) return std::nullopt;
  if (flag == "-Xcompiler" || flag == "--compiler-options" || flag == "-Xptxas" ||
      flag == "--ptxas-options" || flag == "-maxrregcount" || flag == "--maxrregcount" ||
      flag == "--default-stream")
    return flag + "=";
  return std::nullopt;
}

const char* target_name(FlagTarget target) {
  switch (target) {
    case FlagTarget::HostCompiler:
      return "the host compiler";
    case FlagTarget::CudaCompiler:
      return "nvcc or NVRTC";
    case FlagTarget::Linker:
      return "the link";
  }
  return "";
}

const std::regex kSourcePath(
    R"([A-Za-z0-9_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*(/[A-Za-z0-9_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*)*)");
const std::set<std::string> kSourceExtensions = {".c", ".cc", ".cpp", ".cxx", ".cu",  ".cuh",
                                                 ".h", ".hh", ".hpp", ".hxx", ".inc", ".inl"};
const std::regex kSymbol(R"([A-Za-z_][A-Za-z0-9_]*)");
const std::set<std::string> kLanguages = {"cpp", "c", "cuda", "cuda_cpp"};

}  // namespace

std::optional<std::string> refuse_flags(const std::vector<std::string>& flags, FlagTarget target,
                                        std::string_view list) {
  for (std::size_t index = 0; index < flags.size(); ++index) {
    std::string flag = flags[index];
    std::string shown = flag;  // as the list gave it: "-I /" for a two-element flag
    if (auto prefix = joined_form(flag, target); prefix && index + 1 < flags.size()) {
      shown = flag + " " + flags[index + 1];
      flag = *prefix + flags[++index];
    }
    if (!allowed(flag, target))
      return fmt::format(
          "{}: flag \"{}\" is not allowed for {} (a synthesized solution may set "
          "optimization, target, fast-math, warning and -D flags; see docs/SECURITY.md)",
          list, shown, target_name(target));
  }
  return std::nullopt;
}

std::optional<std::string> refuse_source_path(const std::string& path) {
  if (!std::regex_match(path, kSourcePath))
    return fmt::format(
        "source path \"{}\": expected a relative path of letters, digits, '_', '-' and '.' "
        "(no \"..\", no leading '/', '-' or '.')",
        path);
  const std::string extension = std::filesystem::path(path).extension().string();
  if (!kSourceExtensions.count(extension))
    return fmt::format(
        "source path \"{}\": expected a source or header file (.c, .cc, .cpp, .cxx, .cu, .cuh, "
        ".h, .hh, .hpp, .hxx, .inc, .inl)",
        path);
  return std::nullopt;
}

bool is_synthesized_solution(const Solution& solution) {
  return solution.ext.is_object() && solution.ext.contains("synthesized");
}

std::optional<std::string> refuse_build_inputs(const Solution& solution) {
  if (auto refused = refuse_flags(solution.cflags, FlagTarget::HostCompiler, "cflags"))
    return refused;
  if (auto refused = refuse_flags(solution.cuda_cflags, FlagTarget::CudaCompiler, "cuda_cflags"))
    return refused;
  if (auto refused = refuse_flags(solution.ld_flags, FlagTarget::Linker, "ld_flags"))
    return refused;
  for (const SourceFile& source : solution.sources)
    if (auto refused = refuse_source_path(source.path)) return refused;
  if (auto refused = refuse_source_path(solution.entry_file)) return "entry file: " + *refused;
  if (!std::regex_match(solution.entry_symbol, kSymbol))
    return fmt::format("entry point symbol \"{}\": expected a C identifier", solution.entry_symbol);
  for (const std::string& language : solution.languages)
    if (!kLanguages.count(language))
      return fmt::format("language \"{}\": expected cpp, c, cuda or cuda_cpp", language);
  return std::nullopt;
}

}  // namespace kernelarc
