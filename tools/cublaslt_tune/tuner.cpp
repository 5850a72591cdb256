#include "tuner.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "core/error.h"

namespace kernelarc::cublaslt {

namespace {

void check_cuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess)
    throw InternalError(fmt::format("{}: {}", what, cudaGetErrorString(error)));
}

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw InternalError(fmt::format("{}: {}", what, cublasLtGetStatusString(status)));
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return CUDA_R_64F;
    case DType::Float32:
      return CUDA_R_32F;
    case DType::Float16:
      return CUDA_R_16F;
    case DType::BFloat16:
      return CUDA_R_16BF;
    case DType::Float8E4M3FN:
      return CUDA_R_8F_E4M3;
    case DType::Float8E5M2:
      return CUDA_R_8F_E5M2;
    case DType::Int8:
      return CUDA_R_8I;
    case DType::Int32:
      return CUDA_R_32I;
    case DType::UInt8:
      return CUDA_R_8U;
    default:
      throw InputError(fmt::format("cuBLASLt has no type for {}", dtype_name(dtype)));
  }
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) {
    check_cuda(cudaMalloc(&data_, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};

/// An Expert-API configuration: the CUBLASLT_ALGO_CONFIG_* values.
struct Config {
  int32_t algo_id = 0;
  uint32_t tile = CUBLASLT_MATMUL_TILE_UNDEFINED;
  uint32_t stages = CUBLASLT_MATMUL_STAGES_UNDEFINED;
  int32_t split_k = 1;
  uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
  uint32_t swizzle = 0;
  uint32_t custom = 0;
  uint16_t inner_shape = 0;
  uint16_t cluster = 0;
};

template <class T>
cublasStatus_t set_config(cublasLtMatmulAlgo_t& algo,
                          cublasLtMatmulAlgoConfigAttributes_t attribute, const T& value) {
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, attribute, &value, sizeof(value));
}

template <class T>
T get_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  T value{};
  std::size_t written = 0;
  check_lt(cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof(value), &written),
           "cublasLtMatmulAlgoConfigGetAttribute");
  return value;
}

Config read_config(const cublasLtMatmulAlgo_t& algo) {
  Config config;
  config.algo_id = get_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID);
  config.tile = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
  config.stages = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  config.split_k = get_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  config.reduction = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  config.swizzle = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  config.custom = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
  config.inner_shape = get_config<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID);
  config.cluster = get_config<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  return config;
}

/// The data types of one problem in cuBLASLt's operand order: its A is our B (see Bench).
struct Types {
  cudaDataType_t lt_a, lt_b, c;
};

/// cublasLtMatmulAlgoInit plus every configuration attribute; false when cuBLASLt refuses one.
bool build_algo(cublasLtHandle_t handle, const Types& types, const Config& config,
                cublasLtMatmulAlgo_t& algo) {
  return cublasLtMatmulAlgoInit(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, types.lt_a, types.lt_b,
                                types.c, types.c, config.algo_id, &algo) == CUBLAS_STATUS_SUCCESS &&
         set_config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, config.tile) == CUBLAS_STATUS_SUCCESS &&
         set_config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, config.stages) == CUBLAS_STATUS_SUCCESS &&
         set_config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, config.split_k) ==
             CUBLAS_STATUS_SUCCESS &&
         set_config(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, config.reduction) ==
             CUBLAS_STATUS_SUCCESS &&
         set_config(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, config.swizzle) ==
             CUBLAS_STATUS_SUCCESS &&
         set_config(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, config.custom) ==
             CUBLAS_STATUS_SUCCESS &&
         set_config(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, config.inner_shape) ==
             CUBLAS_STATUS_SUCCESS &&
         set_config(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, config.cluster) ==
             CUBLAS_STATUS_SUCCESS;
}

/// An array capability (tile or stages ids); {undefined} when the algorithm lists none, as the
/// cuBLASLt documentation prescribes.
std::vector<uint32_t> capability_ids(const cublasLtMatmulAlgo_t& algo,
                                     cublasLtMatmulAlgoCapAttributes_t capability,
                                     uint32_t undefined) {
  std::size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, capability, nullptr, 0, &bytes) !=
          CUBLAS_STATUS_SUCCESS ||
      bytes < sizeof(uint32_t))
    return {undefined};
  std::vector<uint32_t> ids(bytes / sizeof(uint32_t));
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, capability, ids.data(),
                                        ids.size() * sizeof(uint32_t),
                                        &bytes) != CUBLAS_STATUS_SUCCESS)
    return {undefined};
  ids.resize(bytes / sizeof(uint32_t));
  return ids.empty() ? std::vector<uint32_t>{undefined} : ids;
}

template <class T>
T capability_value(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t capability) {
  T value{};
  std::size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, capability, &value, sizeof(value), &written) !=
      CUBLAS_STATUS_SUCCESS)
    return T{};
  return value;
}

/// The configurations of one algorithm, as a mixed-radix index space (never materialised: the
/// product of tiles, stages, split-K/reduction pairs, swizzles, custom options and clusters
/// reaches millions).
struct AlgoSpace {
  int32_t algo_id = 0;
  std::vector<uint32_t> tiles, stages;
  std::vector<std::pair<int32_t, uint32_t>> split_reductions;  // (split-K, reduction scheme)
  uint32_t swizzles = 1;                                       // 0 .. swizzles - 1
  uint32_t customs = 1;                                        // 0 .. customs - 1
  const std::vector<uint16_t>* clusters = nullptr;

  uint64_t size() const {
    return uint64_t{tiles.size()} * stages.size() * split_reductions.size() * swizzles * customs *
           clusters->size();
  }

  Config at(uint64_t index) const {
    Config config;
    config.algo_id = algo_id;
    config.cluster = (*clusters)[index % clusters->size()];
    index /= clusters->size();
    config.custom = static_cast<uint32_t>(index % customs);
    index /= customs;
    config.swizzle = static_cast<uint32_t>(index % swizzles);
    index /= swizzles;
    const auto& [split_k, reduction] = split_reductions[index % split_reductions.size()];
    config.split_k = split_k;
    config.reduction = reduction;
    index /= split_reductions.size();
    config.stages = stages[index % stages.size()];
    index /= stages.size();
    config.tile = tiles[index];
    return config;
  }
};

constexpr int32_t kSplitK[] = {1, 2, 4, 8, 16};
constexpr uint32_t kReductionSchemes[] = {CUBLASLT_REDUCTION_SCHEME_INPLACE,
                                          CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                                          CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE};

/// Every algorithm id cuBLASLt has for the types, with the configuration space its
/// capabilities (CUBLASLT_ALGO_CAP_*) allow.
std::vector<AlgoSpace> enumerate_space(cublasLtHandle_t handle, const Types& types,
                                       const std::vector<uint16_t>& clusters) {
  constexpr int kMaxAlgoIds = 1024;
  std::vector<int> ids(kMaxAlgoIds);
  int count = 0;
  check_lt(cublasLtMatmulAlgoGetIds(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, types.lt_a, types.lt_b,
                                    types.c, types.c, kMaxAlgoIds, ids.data(), &count),
           "cublasLtMatmulAlgoGetIds");
  std::vector<AlgoSpace> spaces;
  for (int i = 0; i < count; ++i) {
    cublasLtMatmulAlgo_t algo;
    if (cublasLtMatmulAlgoInit(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, types.lt_a, types.lt_b,
                               types.c, types.c, ids[i], &algo) != CUBLAS_STATUS_SUCCESS)
      continue;
    AlgoSpace space;
    space.algo_id = ids[i];
    space.tiles = capability_ids(algo, CUBLASLT_ALGO_CAP_TILE_IDS, CUBLASLT_MATMUL_TILE_UNDEFINED);
    space.stages =
        capability_ids(algo, CUBLASLT_ALGO_CAP_STAGES_IDS, CUBLASLT_MATMUL_STAGES_UNDEFINED);
    const bool split_k = capability_value<int32_t>(algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) != 0;
    const uint32_t reduction_mask =
        capability_value<uint32_t>(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
    space.split_reductions.push_back({1, CUBLASLT_REDUCTION_SCHEME_NONE});
    for (int32_t splits : kSplitK) {
      if (!split_k || splits == 1) continue;
      for (uint32_t scheme : kReductionSchemes)
        if (reduction_mask & scheme) space.split_reductions.push_back({splits, scheme});
    }
    space.swizzles =
        capability_value<uint32_t>(algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) != 0 ? 2 : 1;
    space.customs = static_cast<uint32_t>(
        std::max(0, capability_value<int32_t>(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX)) + 1);
    space.clusters = &clusters;
    spaces.push_back(std::move(space));
  }
  return spaces;
}

/// A stride coprime to `total` near total / golden ratio: walking index = j * stride mod total
/// visits every configuration once, spread over all algorithms, and the same ones every run.
uint64_t sampling_stride(uint64_t total) {
  if (total <= 2) return 1;
  uint64_t stride = static_cast<uint64_t>(static_cast<double>(total) * 0.6180339887498949) | 1;
  while (std::gcd(stride, total) != 1) ++stride;
  return stride;
}

struct Timing {
  double median_us = 0;
  double p90_us = 0;
};

Timing summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  Timing timing;
  timing.median_us = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  // Nearest rank: the smallest sample with at least 90% of the samples at or below it.
  timing.p90_us = samples[static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1];
  return timing;
}

/// Deterministic values in [-1, 1) for the operands: timings on all-zero data flatter some
/// kernels (less switching power), so the data looks like a real layer's.
void fill_random(void* device, DType dtype, int64_t count, uint64_t seed) {
  const std::size_t element = dtype_size(dtype);
  std::vector<unsigned char> host(static_cast<std::size_t>(count) * element);
  uint64_t state = seed;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double value = static_cast<double>(state >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    store_element(dtype, host.data() + static_cast<std::size_t>(i) * element, value);
  }
  check_cuda(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
}

/// One shape on the device: operands, descriptors, events and the L2 flush buffer. The matmul
/// is set up exactly as gemm_cublaslt.cu sets it up: row-major C[M, N] is column-major C^T, so
/// cuBLASLt computes C^T = op(B)^T . op(A)^T with our B as its A operand.
class Bench {
 public:
  Bench(cublasLtHandle_t handle, const GemmProblemShapes& problem, const GemmShape& shape,
        const TuneOptions& options, std::size_t flush_bytes)
      : handle_(handle),
        options_(options),
        a_(dtype_size(problem.type_a) * shape.m * shape.k),
        b_(dtype_size(problem.type_b) * shape.n * shape.k),
        c_(dtype_size(problem.type_c) * shape.m * shape.n),
        workspace_(options.workspace_bytes),
        flush_(flush_bytes),
        flush_bytes_(flush_bytes) {
    fill_random(a_.data(), problem.type_a, shape.m * shape.k, 1);
    fill_random(b_.data(), problem.type_b, shape.n * shape.k, 2);
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    events_.resize(2 * static_cast<std::size_t>(options.runs));
    for (cudaEvent_t& event : events_) check_cuda(cudaEventCreate(&event), "cudaEventCreate");

    check_lt(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
             "cublasLtMatmulDescCreate");
    const cublasOperation_t trans_lt_a = problem.b_k_major ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t trans_lt_b = problem.a_k_major ? CUBLAS_OP_N : CUBLAS_OP_T;
    check_lt(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_lt_a,
                                            sizeof(trans_lt_a)),
             "setting TRANSA");
    check_lt(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_lt_b,
                                            sizeof(trans_lt_b)),
             "setting TRANSB");
    const uint64_t b_rows = problem.b_k_major ? shape.k : shape.n;
    const uint64_t b_cols = problem.b_k_major ? shape.n : shape.k;
    const uint64_t a_rows = problem.a_k_major ? shape.k : shape.m;
    const uint64_t a_cols = problem.a_k_major ? shape.m : shape.k;
    types_ = {cuda_type(problem.type_b), cuda_type(problem.type_a), cuda_type(problem.type_c)};
    check_lt(cublasLtMatrixLayoutCreate(&lt_a_, types_.lt_a, b_rows, b_cols, b_rows),
             "cublasLtMatrixLayoutCreate");
    check_lt(cublasLtMatrixLayoutCreate(&lt_b_, types_.lt_b, a_rows, a_cols, a_rows),
             "cublasLtMatrixLayoutCreate");
    check_lt(cublasLtMatrixLayoutCreate(&lt_c_, types_.c, shape.n, shape.m, shape.n),
             "cublasLtMatrixLayoutCreate");
  }

  ~Bench() {
    cublasLtMatrixLayoutDestroy(lt_c_);
    cublasLtMatrixLayoutDestroy(lt_b_);
    cublasLtMatrixLayoutDestroy(lt_a_);
    cublasLtMatmulDescDestroy(op_);
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
    cudaStreamDestroy(stream_);
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  const Types& types() const { return types_; }

  /// The heuristic's first choice within the workspace.
  cublasLtMatmulAlgo_t heuristic_first() {
    cublasLtMatmulPreference_t preference = nullptr;
    check_lt(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    const uint64_t workspace = options_.workspace_bytes;
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulAlgoGetHeuristic(handle_, op_, lt_a_, lt_b_, lt_c_, lt_c_, preference,
                                              1, &result, &returned);
    cublasLtMatmulPreferenceDestroy(preference);
    check_lt(status, "cublasLtMatmulAlgoGetHeuristic");
    if (returned < 1) throw InternalError("cuBLASLt's heuristic has no algorithm for this GEMM");
    return result.algo;
  }

  /// True when cuBLASLt accepts the configuration for this GEMM within the workspace.
  bool valid(const cublasLtMatmulAlgo_t& algo) {
    cublasLtMatmulHeuristicResult_t result{};
    return cublasLtMatmulAlgoCheck(handle_, op_, lt_a_, lt_b_, lt_c_, lt_c_, &algo, &result) ==
               CUBLAS_STATUS_SUCCESS &&
           result.workspaceSize <= options_.workspace_bytes;
  }

  /// Median and p90 of `runs` timed calls, each after a write of twice the L2 size so that no
  /// operand starts in cache; nullopt when a call fails.
  std::optional<Timing> time(const cublasLtMatmulAlgo_t& algo) {
    for (int i = 0; i < options_.warmup; ++i)
      if (!matmul(algo)) return drain();
    for (int i = 0; i < options_.runs; ++i) {
      check_cuda(cudaMemsetAsync(flush_.data(), i & 0xff, flush_bytes_, stream_), "L2 flush");
      check_cuda(cudaEventRecord(events_[2 * i], stream_), "cudaEventRecord");
      if (!matmul(algo)) return drain();
      check_cuda(cudaEventRecord(events_[2 * i + 1], stream_), "cudaEventRecord");
    }
    check_cuda(cudaStreamSynchronize(stream_), "running a configuration");
    std::vector<double> samples;
    for (int i = 0; i < options_.runs; ++i) {
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]),
                 "cudaEventElapsedTime");
      samples.push_back(ms * 1000.0);
    }
    return summarize(std::move(samples));
  }

 private:
  bool matmul(const cublasLtMatmulAlgo_t& algo) {
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(handle_, op_, &alpha, b_.data(), lt_a_, a_.data(), lt_b_, &beta,
                          c_.data(), lt_c_, c_.data(), lt_c_, &algo, workspace_.data(),
                          options_.workspace_bytes, stream_) == CUBLAS_STATUS_SUCCESS;
  }

  std::optional<Timing> drain() {
    check_cuda(cudaStreamSynchronize(stream_), "running a configuration");
    return std::nullopt;
  }

  cublasLtHandle_t handle_;
  const TuneOptions& options_;
  DeviceBuffer a_, b_, c_, workspace_, flush_;
  std::size_t flush_bytes_;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> events_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t lt_a_ = nullptr, lt_b_ = nullptr, lt_c_ = nullptr;
  Types types_{};
};

TableEntry make_entry(const GemmProblemShapes& problem, const GemmShape& shape,
                      const Config& config, double median_us, double heuristic_median_us) {
  TableEntry entry;
  entry.m = shape.m;
  entry.n = shape.n;
  entry.k = shape.k;
  entry.a_k_major = problem.a_k_major;
  entry.b_k_major = problem.b_k_major;
  entry.type_a = problem.type_a;
  entry.type_b = problem.type_b;
  entry.type_c = problem.type_c;
  entry.algo_id = config.algo_id;
  entry.tile = config.tile;
  entry.stages = config.stages;
  entry.split_k = config.split_k;
  entry.reduction = config.reduction;
  entry.swizzle = config.swizzle;
  entry.custom = config.custom;
  entry.inner_shape = config.inner_shape;
  entry.cluster = config.cluster;
  entry.median_us = median_us;
  entry.heuristic_median_us = heuristic_median_us;
  return entry;
}

/// Clusters exist from sm_90 on; before, only the library's choice is tried.
std::vector<uint16_t> cluster_choices(int compute_major) {
  if (compute_major < 9) return {CUBLASLT_CLUSTER_SHAPE_AUTO};
  return {CUBLASLT_CLUSTER_SHAPE_AUTO, CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
          CUBLASLT_CLUSTER_SHAPE_1x2x1, CUBLASLT_CLUSTER_SHAPE_2x2x1};
}

ShapeReport tune_shape(cublasLtHandle_t handle, const GemmProblemShapes& problem,
                       const GemmShape& shape, const TuneOptions& options, std::size_t flush_bytes,
                       const std::vector<uint16_t>& clusters, TableEntry& kept) {
  Bench bench(handle, problem, shape, options, flush_bytes);
  const cublasLtMatmulAlgo_t heuristic_algo = bench.heuristic_first();
  const std::optional<Timing> heuristic = bench.time(heuristic_algo);
  if (!heuristic) throw InternalError("the heuristic's first choice failed to run");

  const std::vector<AlgoSpace> spaces = enumerate_space(handle, bench.types(), clusters);
  uint64_t total = 0;
  for (const AlgoSpace& space : spaces) total += space.size();
  const uint64_t stride = sampling_stride(total);
  // AlgoCheck rejects most points (a tile the shape cannot use, stages that do not fit), so up
  // to 50 checks per wanted configuration; checks cost microseconds, runs cost milliseconds.
  const uint64_t max_checks =
      std::min<uint64_t>(total, 50 * static_cast<uint64_t>(std::max(options.max_configs, 1)));
  std::optional<Config> best_config;
  Timing best;
  int tried = 0;
  uint64_t index = 0;
  for (uint64_t check = 0; check < max_checks && tried < options.max_configs; ++check) {
    uint64_t local = index;
    index = (index + stride) % total;
    const AlgoSpace* space = nullptr;
    for (const AlgoSpace& candidate : spaces) {
      if (local < candidate.size()) {
        space = &candidate;
        break;
      }
      local -= candidate.size();
    }
    const Config config = space->at(local);
    cublasLtMatmulAlgo_t algo;
    if (!build_algo(handle, bench.types(), config, algo) || !bench.valid(algo)) continue;
    const std::optional<Timing> timing = bench.time(algo);
    if (!timing) continue;
    ++tried;
    if (!best_config || timing->median_us < best.median_us) {
      best_config = config;
      best = *timing;
    }
  }

  // The noise rule: a configuration replaces the heuristic's choice only when even its slow runs
  // (p90) beat the heuristic's typical run (median).
  if (best_config && best.p90_us < heuristic->median_us) {
    kept = make_entry(problem, shape, *best_config, best.median_us, heuristic->median_us);
  } else {
    kept = make_entry(problem, shape, read_config(heuristic_algo), heuristic->median_us,
                      heuristic->median_us);
  }
  return {shape, tried, heuristic->median_us, kept.median_us};
}

}  // namespace

std::optional<std::string> cuda_device_problem() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) return fmt::format("no CUDA device ({})", cudaGetErrorString(error));
  if (count == 0) return "no CUDA device";
  return std::nullopt;
}

Table tune_problem(const GemmProblemShapes& problem, const TuneOptions& options,
                   std::vector<ShapeReport>& reports) {
  check_cuda(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp properties{};
  check_cuda(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  const std::size_t flush_bytes =
      std::max<std::size_t>(2 * static_cast<std::size_t>(properties.l2CacheSize), 1 << 20);
  const std::vector<uint16_t> clusters = cluster_choices(properties.major);

  cublasLtHandle_t handle = nullptr;
  check_lt(cublasLtCreate(&handle), "cublasLtCreate");
  Table table;
  table.device = properties.name;
  table.cublaslt_version = static_cast<int64_t>(cublasLtGetVersion());
  try {
    for (const GemmShape& shape : problem.shapes) {
      // An empty GEMM launches nothing (gemm_cublaslt returns before cuBLASLt); nothing to tune.
      if (shape.m == 0 || shape.n == 0 || shape.k == 0) continue;
      TableEntry entry;
      reports.push_back(tune_shape(handle, problem, shape, options, flush_bytes, clusters, entry));
      table.entries.push_back(entry);
    }
  } catch (...) {
    cublasLtDestroy(handle);
    throw;
  }
  cublasLtDestroy(handle);
  return table;
}

}  // namespace kernelarc::cublaslt
