// ka_problem.h for the row families: the op selection macros, element conversions, and KaArgs
// with the row accessors (prologue evaluation, weight and bias, typed stores), plus the nvrtc
// kernel parameter list or ka_bind. The accessors are the same on CUDA and the CPU; only the
// element types and the vector loads differ.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>

#include "synth/family_row.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

const char* kRowCudaPrelude = R"(#define KA_HD __host__ __device__ __forceinline__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "ka_math.h"

KA_HD float ka_row_to_float(float x) { return x; }
KA_HD float ka_row_to_float(__half x) { return __half2float(x); }
KA_HD float ka_row_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
KA_HD float ka_row_to_float(double x) { return static_cast<float>(x); }
KA_HD float ka_row_to_float(int x) { return static_cast<float>(x); }
KA_HD float ka_row_to_float(long long x) { return static_cast<float>(x); }
KA_HD void ka_row_from_float(float x, float& y) { y = x; }
KA_HD void ka_row_from_float(float x, __half& y) { y = __float2half_rn(x); }
KA_HD void ka_row_from_float(float x, __nv_bfloat16& y) { y = __float2bfloat16_rn(x); }

// N elements moved as one aligned unit: up to 16 bytes is one vector instruction, 32 bytes two.
template <typename T, int N>
struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) KaRowPack {
  T v[N];
};

// A pack of 2 to 16 bytes as the unsigned integer one store instruction writes.
template <int BYTES> struct KaRowBits {};
template <> struct KaRowBits<2> { typedef unsigned short type; };
template <> struct KaRowBits<4> { typedef unsigned int type; };
template <> struct KaRowBits<8> { typedef uint2 type; };
template <> struct KaRowBits<16> { typedef uint4 type; };

// N elements moved unchanged, as one aligned access (two for 32 bytes).
template <int N, typename T>
KA_HD KaRowPack<T, N> ka_pack_load(const T* p) {
  return *reinterpret_cast<const KaRowPack<T, N>*>(p);
}

template <int N, typename T>
KA_HD void ka_pack_store(T* p, const KaRowPack<T, N>& pack) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
#ifdef __CUDA_ARCH__
  // A plain assignment of the pack may be split into narrower stores where the compiler merges
  // branches; __stwb (the default write-back policy) keeps it one instruction.
  if constexpr (kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16) {
    typedef typename KaRowBits<kBytes>::type bits_t;
    __stwb(reinterpret_cast<bits_t*>(p), *reinterpret_cast<const bits_t*>(&pack));
    return;
  }
#endif
  *reinterpret_cast<KaRowPack<T, N>*>(p) = pack;
}

template <int N, typename T>
KA_HD void ka_row_load(const T* p, float (&out)[N]) {
  const KaRowPack<T, N> pack = ka_pack_load<N>(p);
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = ka_row_to_float(pack.v[i]);
}

template <int N, typename T>
KA_HD void ka_row_store(T* p, const float (&in)[N]) {
  KaRowPack<T, N> pack;
#pragma unroll
  for (int i = 0; i < N; ++i) ka_row_from_float(in[i], pack.v[i]);
  ka_pack_store<N>(p, pack);
}
)";

// Float8 outputs (quantize): one byte per element, converted with saturation to the largest
// finite value and rounding to nearest even, as torch's .clamp(-max, max).to(float8) does.
// The cvt instruction converts pairs and needs sm_89 or later.
const char* kCudaFloat8 = R"(
struct KaFp8E4M3 {
  unsigned char bits;
};
struct KaFp8E5M2 {
  unsigned char bits;
};
__device__ __forceinline__ void ka_row_from_float(float x, KaFp8E4M3& y) {
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(x));
  y.bits = static_cast<unsigned char>(pair & 0xff);
}
__device__ __forceinline__ void ka_row_from_float(float x, KaFp8E5M2& y) {
  unsigned short pair;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(x));
  y.bits = static_cast<unsigned char>(pair & 0xff);
}
)";

const char* kCpuPrelude = R"(#define KA_HD inline
#include <cstdint>
#include <cstdio>
#include "kernelarc/abi.h"
#include "ka_cpu_types.h"
#include "ka_math.h"

template <typename T>
KA_HD float ka_row_to_float(T x) {
  return ka_to_float(x);
}
template <typename T>
KA_HD void ka_row_from_float(float x, T& y) {
  y = ka_from_float<T>(x);
}

// Plain loops: the compiler vectorises them in the caller's simd loops.
template <int N, typename T>
KA_HD void ka_row_load(const T* p, float (&out)[N]) {
  for (int i = 0; i < N; ++i) out[i] = ka_row_to_float(p[i]);
}

template <int N, typename T>
KA_HD void ka_row_store(T* p, const float (&in)[N]) {
  for (int i = 0; i < N; ++i) ka_row_from_float(in[i], p[i]);
}
)";

const char* kAlignedHelper = R"(
// Whether n elements at p form an aligned pack (alignment min(16, n * sizeof(T)) bytes).
template <typename T>
KA_HD bool ka_row_aligned(const T* p, int n) {
  const unsigned long long bytes = sizeof(T) * n < 16 ? sizeof(T) * n : 16;
  return reinterpret_cast<unsigned long long>(p) % bytes == 0;
}
)";

const char* kBindHelpers = R"(
inline bool ka_row_contiguous(const ka_tensor& t) {
  long long expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.stride[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

inline const char* ka_row_dtype_name(int dtype) {
  static const char* const names[] = {"float64", "float32", "float16", "bfloat16",
                                      "float8_e4m3fn", "float8_e5m2", "int8", "int16",
                                      "int32", "int64", "uint8", "bool"};
  return dtype >= 0 && dtype < 12 ? names[dtype] : "an unknown dtype";
}

inline const char* ka_row_check(const ka_tensor& t, const char* name, int dtype, int ndim,
                                char* message, int size) {
  if (t.dtype != dtype) {
    std::snprintf(message, size, "%s: expected %s, got %s", name, ka_row_dtype_name(dtype),
                  ka_row_dtype_name(t.dtype));
  } else if (t.ndim != ndim) {
    std::snprintf(message, size, "%s: expected %d dimensions, got %d", name, ndim, t.ndim);
  } else if (!ka_row_contiguous(t)) {
    std::snprintf(message, size, "%s: expected a contiguous row-major tensor", name);
  } else {
    return nullptr;
  }
  return message;
}

// Binds axis `axis` to dimension d of t on its first appearance, compares it afterwards.
inline const char* ka_row_dim(const ka_tensor& t, const char* name, int d, const char* axis,
                              long long* value, bool* seen, char* message, int size) {
  const long long extent = static_cast<long long>(t.shape[d]);
  if (!*seen) {
    *value = extent;
    *seen = true;
    return nullptr;
  }
  if (extent == *value) return nullptr;
  std::snprintf(message, size, "%s: dimension %d (%s) is %lld, expected %lld", name, d, axis,
                extent, *value);
  return message;
}
)";

class HeaderWriter {
 public:
  HeaderWriter(const RowProblem& row, const Definition& def, const KernelTemplate& kernel)
      : row_(row), def_(def), kernel_(kernel), cuda_(kernel.target == DeviceKind::Cuda) {}

  std::string write() {
    out_ += fmt::format(
        "// ka_problem.h: generated by kernelarc's row binder for \"{}\" (op family {}, template "
        "{}).\n#pragma once\n#define KA_TARGET_CUDA {}\n#define KA_TARGET_CPU {}\n",
        def_.name, row_.family, kernel_.name, cuda_ ? 1 : 0, cuda_ ? 0 : 1);
    out_ += cuda_ ? cuda_pack_prelude() : std::string(kCpuPrelude) + kAlignedHelper;
    if (cuda_ && row_.op == RowOp::Quantize) out_ += kCudaFloat8;
    write_macros();
    write_args();
    if (cuda_) write_kernel_params();
    if (kernel_.build == TemplateBuild::SharedObject) write_bind();
    return out_;
  }

 private:
  std::string type(const RowTensor& t) const { return element_type(t.dtype); }
  std::string element_type(DType dtype) const {
    if (cuda_ && dtype == DType::Float8E4M3FN) return "KaFp8E4M3";
    if (cuda_ && dtype == DType::Float8E5M2) return "KaFp8E5M2";
    return header_element_type(dtype, cuda_);
  }

  void write_macros() {
    const auto flag = [](bool on) { return on ? 1 : 0; };
    out_ += fmt::format(
        "\n#define KA_OP_RMSNORM {}\n#define KA_OP_LAYERNORM {}\n#define KA_OP_SOFTMAX {}\n"
        "#define KA_OP_LOGSUMEXP {}\n#define KA_EPS {}\n#define KA_HAS_WEIGHT {}\n"
        "#define KA_HAS_BIAS {}\n#define KA_HAS_PROLOGUE_OUTPUT {}\n"
        "#define KA_MAX_ELEM_BYTES {}\n#define KA_NUM_ROW_INPUTS {}\n"
        "#define KA_OP_QUANTIZE {}\n#define KA_FP8_MAX {}\n#define KA_OP_REDUCE {}\n"
        "#define KA_REDUCE_SUM 0\n#define KA_REDUCE_MEAN 1\n#define KA_REDUCE_MAX 2\n"
        "#define KA_REDUCE_MIN 3\n#define KA_REDUCTION {}\n",
        flag(row_.op == RowOp::RmsNorm), flag(row_.op == RowOp::LayerNorm),
        flag(row_.op == RowOp::Softmax), flag(row_.op == RowOp::LogSumExp), float_literal(row_.eps),
        flag(row_.weight.has_value()), flag(row_.bias.has_value()),
        flag(row_.prologue_output.has_value()), max_elem_bytes(), row_.row_inputs.size(),
        flag(row_.op == RowOp::Quantize), float_literal(row_.fp8_max),
        flag(row_.op == RowOp::Reduce), static_cast<int>(row_.reduction));
  }

  std::size_t max_elem_bytes() const {
    std::size_t bytes = 0;
    for (const RowTensor& t : row_.row_inputs) bytes = std::max(bytes, dtype_size(t.dtype));
    return bytes;
  }

  /// Tensors whose packs vector_ok must vouch for: everything read or written per column.
  std::vector<std::string> vector_members() const {
    std::vector<std::string> members;
    for (const RowTensor& t : row_.row_inputs) members.push_back("in_" + t.name);
    if (row_.weight) members.push_back("weight_");
    if (row_.bias) members.push_back("bias_");
    if (!writes_row_values(row_.op)) members.push_back("out_");
    if (row_.prologue_output) members.push_back("prologue_out_");
    return members;
  }

  void write_args() {
    out_ += "\nstruct KaArgs {\n";
    for (const RowTensor& t : row_.row_inputs)
      out_ += fmt::format("  const {}* in_{};\n", type(t), t.name);
    for (const RowTensor& t : row_.scalars)
      out_ += fmt::format("  const {}* scalar_{};\n", type(t), t.name);
    if (row_.weight) out_ += fmt::format("  const {}* weight_;\n", type(*row_.weight));
    if (row_.bias) out_ += fmt::format("  const {}* bias_;\n", type(*row_.bias));
    out_ += fmt::format("  {}* out_;\n", type(row_.output));
    if (row_.prologue_output)
      out_ += fmt::format("  {}* prologue_out_;\n", type(*row_.prologue_output));
    if (row_.scale_output) out_ += "  float* scale_out_;\n";
    out_ += "  long long rows_, cols_;\n\n";
    out_ += "  KA_HD long long rows() const { return rows_; }\n";
    out_ += "  KA_HD long long cols() const { return cols_; }\n";

    out_ += "  // Packs of n elements: a whole number per row, every pointer aligned for them.\n";
    out_ += "  KA_HD bool vector_ok(int n) const {\n    return cols_ % n == 0";
    for (const std::string& member : vector_members())
      out_ += fmt::format(" &&\n           ka_row_aligned({}, n)", member);
    out_ += ";\n  }\n";

    out_ +=
        "  // The prologue at columns [col, col + N) of a row. N > 1 needs vector_ok(N) and "
        "col % N == 0.\n"
        "  template <int N>\n"
        "  KA_HD void load_row(long long row, long long col, float (&v)[N]) const {\n"
        "    const long long at = row * cols_ + col;\n";
    for (const RowTensor& t : row_.row_inputs) {
      if (!row_.prologue.variables().count(t.name)) continue;
      out_ += fmt::format("    float v_{0}[N];\n    ka_row_load<N>(in_{0} + at, v_{0});\n", t.name);
    }
    for (const RowTensor& t : row_.scalars) {
      if (!row_.prologue.variables().count(t.name)) continue;
      out_ += fmt::format("    const float s_{0} = ka_row_to_float(*scalar_{0});\n", t.name);
    }
    const std::string code = row_.prologue.to_code([&](const std::string& name) {
      for (const RowTensor& t : row_.scalars)
        if (t.name == name) return "s_" + name;
      return "v_" + name + "[i]";
    });
    out_ += fmt::format(
        "    for (int i = 0; i < N; ++i) v[i] = {};\n"
        "  }}\n",
        code);

    out_ +=
        "  template <int N>\n"
        "  KA_HD void store_prologue(long long row, long long col, const float (&v)[N]) const {\n";
    out_ += row_.prologue_output ? "    ka_row_store<N>(prologue_out_ + row * cols_ + col, v);\n"
                                 : "    (void)row, (void)col, (void)v;\n";
    out_ += "  }\n";

    write_column_loader("load_weight", row_.weight, "weight_", "1.0f");
    write_column_loader("load_bias", row_.bias, "bias_", "0.0f");

    if (writes_row_values(row_.op)) {
      out_ +=
          "  KA_HD void store_row_value(long long row, float value) const {\n"
          "    ka_row_from_float(value, out_[row]);\n  }\n";
    }
    if (row_.scale_output) {
      out_ +=
          "  KA_HD void store_row_scale(long long row, float scale) const {\n"
          "    scale_out_[row] = scale;\n  }\n";
    }
    if (!writes_row_values(row_.op)) {
      out_ +=
          "  template <int N>\n"
          "  KA_HD void store_row(long long row, long long col, const float (&y)[N]) const {\n"
          "    ka_row_store<N>(out_ + row * cols_ + col, y);\n  }\n";
    }
    out_ += "};\n";
  }

  void write_column_loader(const char* function, const std::optional<RowTensor>& tensor,
                           const char* member, const char* absent) {
    out_ += fmt::format(
        "  template <int N>\n  KA_HD void {}(long long col, float (&v)[N]) const {{\n", function);
    if (tensor) {
      out_ += fmt::format("    ka_row_load<N>({} + col, v);\n", member);
    } else {
      out_ += fmt::format("    (void)col;\n    for (int i = 0; i < N; ++i) v[i] = {};\n", absent);
    }
    out_ += "  }\n";
  }

  std::string rows_expression(const std::function<std::string(const std::string&)>& axis) const {
    std::string text = "1LL";
    for (std::size_t i = 0; i + 1 < row_.row_shape.size(); ++i)
      text += " * " + axis(row_.row_shape[i]);
    return text;
  }

  /// The KaArgs initialiser list, in member order; `input`/`output` give the pointer of the
  /// definition's i-th input/output, `axis` an axis value.
  std::string args_initialiser(const std::function<std::string(const RowTensor&)>& input,
                               const std::function<std::string(const RowTensor&)>& output,
                               const std::function<std::string(const std::string&)>& axis) const {
    std::vector<std::string> parts;
    for (const RowTensor& t : row_.row_inputs) parts.push_back(input(t));
    for (const RowTensor& t : row_.scalars) parts.push_back(input(t));
    if (row_.weight) parts.push_back(input(*row_.weight));
    if (row_.bias) parts.push_back(input(*row_.bias));
    parts.push_back(output(row_.output));
    if (row_.prologue_output) parts.push_back(output(*row_.prologue_output));
    if (row_.scale_output) parts.push_back(output(*row_.scale_output));
    parts.push_back(rows_expression(axis));
    parts.push_back(axis(row_.row_shape.back()));
    return fmt::format("{}", fmt::join(parts, ", "));
  }

  void write_kernel_params() {
    out_ += kernel_params_define(def_, [&](DType dtype) { return element_type(dtype); });
    out_ +=
        fmt::format("#define KA_ARGS (KaArgs{{{}}})\n",
                    args_initialiser([](const RowTensor& t) { return "ka_in_" + t.name; },
                                     [](const RowTensor& t) { return "ka_out_" + t.name; },
                                     [](const std::string& axis) { return "ka_axis_" + axis; }));
  }

  void check_tensor(const RowTensor& t, bool is_input, bool scalar,
                    std::map<std::string, std::size_t>& axis_slot) {
    const std::string ref = fmt::format("{}[{}]", is_input ? "inputs" : "outputs", t.index);
    out_ += fmt::format(
        "  if (const char* e = ka_row_check({}, \"{}\", {}, {}, message, sizeof message)) "
        "return e;\n",
        ref, t.name, abi_dtype_name(t.dtype), scalar ? 0 : t.shape.size());
    if (scalar) return;
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      const std::size_t slot = axis_slot.at(t.shape[d]);
      out_ += fmt::format(
          "  if (const char* e = ka_row_dim({}, \"{}\", {}, \"{}\", &axis[{}], &seen[{}], message, "
          "sizeof message)) return e;\n",
          ref, t.name, d, t.shape[d], slot, slot);
    }
  }

  void write_bind() {
    out_ += kBindHelpers;
    std::map<std::string, std::size_t> axis_slot;
    std::vector<std::string> initial_values, initial_seen;
    for (const Axis& axis : def_.axes) {
      axis_slot[axis.name] = initial_values.size();
      const bool known = axis.kind == AxisKind::Const;
      initial_values.push_back(known ? std::to_string(axis.value) + "LL" : "0LL");
      initial_seen.push_back(known ? "true" : "false");
    }
    out_ += fmt::format(
        "\n// Checks the tensors against the definition and fills *args; nullptr or a message.\n"
        "inline const char* ka_bind(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs,\n"
        "                           int n_outputs, KaArgs* args) {{\n"
        "  static thread_local char message[256];\n"
        "  if (n_inputs != {0} || n_outputs != {1}) {{\n"
        "    std::snprintf(message, sizeof message, \"expected {0} inputs and {1} outputs, got "
        "%d and %d\", n_inputs, n_outputs);\n"
        "    return message;\n  }}\n"
        "  long long axis[{2}] = {{{3}}};\n  bool seen[{2}] = {{{4}}};\n",
        row_.n_inputs, row_.n_outputs, std::max<std::size_t>(initial_values.size(), 1),
        fmt::join(initial_values, ", "), fmt::join(initial_seen, ", "));
    for (std::size_t i = 0; i < def_.inputs.size(); ++i) {
      const TensorSpec& spec = def_.inputs[i];
      const bool scalar = spec.is_scalar() || spec.shape->empty();
      RowTensor t{spec.name, spec.dtype, static_cast<int>(i),
                  spec.shape.value_or(std::vector<std::string>{})};
      check_tensor(t, true, scalar, axis_slot);
    }
    for (std::size_t i = 0; i < def_.outputs.size(); ++i) {
      const TensorSpec& spec = def_.outputs[i];
      RowTensor t{spec.name, spec.dtype, static_cast<int>(i), *spec.shape};
      check_tensor(t, false, false, axis_slot);
    }
    const auto cpu_type = [&](const RowTensor& t) { return type(t); };
    out_ += fmt::format(
        "  *args = KaArgs{{{}}};\n  return nullptr;\n}}\n",
        args_initialiser(
            [&](const RowTensor& t) {
              return fmt::format("static_cast<const {}*>(inputs[{}].data)", cpu_type(t), t.index);
            },
            [&](const RowTensor& t) {
              return fmt::format("static_cast<{}*>(outputs[{}].data)", cpu_type(t), t.index);
            },
            [&](const std::string& name) { return fmt::format("axis[{}]", axis_slot.at(name)); }));
  }

  const RowProblem& row_;
  const Definition& def_;
  const KernelTemplate& kernel_;
  const bool cuda_;
  std::string out_;
};

}  // namespace

std::string cuda_pack_prelude() {
  return std::string(kRowCudaPrelude) + kAlignedHelper;
}

std::string generate_row_header(const RowProblem& problem, const Definition& definition,
                                const KernelTemplate& kernel) {
  return HeaderWriter(problem, definition, kernel).write();
}

}  // namespace kernelarc
