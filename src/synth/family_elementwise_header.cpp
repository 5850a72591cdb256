// ka_problem.h for the element-wise families: KaArgs with rows(), cols(), vector_ok(n),
// apply<N>(row, col) and apply1(row, col), plus KA_KERNEL_PARAMS / KA_ARGS (nvrtc) or ka_bind
// (shared objects and CPU). See docs/TEMPLATES.md ("Family: elementwise").
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "synth/family_elementwise.h"
#include "synth/family_support.h"

namespace kernelarc {

namespace {

std::string axis_var(const std::string& axis) {
  return "ka_axis_" + axis;
}

std::string rows_code(const ElementwiseProblem& problem) {
  if (problem.row_axes.empty()) return "1LL";
  std::vector<std::string> factors;
  for (const std::string& axis : problem.row_axes) factors.push_back(axis_var(axis));
  return fmt::format("({})", fmt::join(factors, " * "));
}

// The inputs the expression reads, in definition order.
std::vector<int> used_inputs(const ElementwiseProblem& problem) {
  std::set<int> used;
  for (const ElementwiseOperand& operand : problem.operands) used.insert(operand.input);
  return {used.begin(), used.end()};
}

constexpr const char* kElementwiseCudaPrelude = R"(#define KA_TARGET_CUDA 1
#define KA_HD __host__ __device__ __forceinline__
#define KA_UNROLL _Pragma("unroll")
)";

constexpr const char* kCpuPrelude = R"(#define KA_TARGET_CPU 1
#define KA_HD inline
#define KA_UNROLL _Pragma("GCC unroll 16")
#include <cstdint>
#include "ka_cpu_types.h"
)";

// Vector accesses on CUDA: N elements move in pieces of at most 16 bytes (one LDG/STG.128
// each); the caller guarantees the alignment (vector_ok).
constexpr const char* kCudaAccess = R"(
template <int BYTES> struct ka_vec_bits;
template <> struct ka_vec_bits<2> { typedef unsigned short type; };
template <> struct ka_vec_bits<4> { typedef unsigned int type; };
template <> struct ka_vec_bits<8> { typedef uint2 type; };
template <> struct ka_vec_bits<16> { typedef uint4 type; };

// Elements per access: N, or as many as fit in 16 bytes.
template <typename T, int N>
struct ka_vec_piece {
  static constexpr int value = N * (int)sizeof(T) > 16 ? 16 / (int)sizeof(T) : N;
};

template <int N, typename T>
KA_HD void ka_load(const T* p, float (&v)[N]) {
  static_assert((N & (N - 1)) == 0, "N must be a power of two");
  constexpr int kPiece = ka_vec_piece<T, N>::value;
  typedef typename ka_vec_bits<kPiece * (int)sizeof(T)>::type bits_t;
  KA_UNROLL
  for (int c = 0; c < N; c += kPiece) {
    const bits_t bits = *reinterpret_cast<const bits_t*>(p + c);
    const T* e = reinterpret_cast<const T*>(&bits);
    KA_UNROLL
    for (int i = 0; i < kPiece; ++i) v[c + i] = ka_to_float(e[i]);
  }
}

template <int N, typename T>
KA_HD void ka_store(T* p, const float (&v)[N]) {
  static_assert((N & (N - 1)) == 0, "N must be a power of two");
  constexpr int kPiece = ka_vec_piece<T, N>::value;
  typedef typename ka_vec_bits<kPiece * (int)sizeof(T)>::type bits_t;
  KA_UNROLL
  for (int c = 0; c < N; c += kPiece) {
    bits_t bits;
    T* e = reinterpret_cast<T*>(&bits);
    KA_UNROLL
    for (int i = 0; i < kPiece; ++i) e[i] = ka_from_float<T>(v[c + i]);
    *reinterpret_cast<bits_t*>(p + c) = bits;
  }
}
)";

// On the CPU the compiler vectorises the element loops itself.
constexpr const char* kCpuAccess = R"(
template <int N, typename T>
inline void ka_load(const T* p, float (&v)[N]) {
  KA_UNROLL
  for (int i = 0; i < N; ++i) v[i] = ka_to_float(p[i]);
}

template <int N, typename T>
inline void ka_store(T* p, const float (&v)[N]) {
  KA_UNROLL
  for (int i = 0; i < N; ++i) p[i] = ka_from_float<T>(v[i]);
}
)";

constexpr const char* kCommonHelpers = R"(
// Python's // and % on axis values.
KA_HD long long ka_floordiv(long long a, long long b) {
  const long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
KA_HD long long ka_floormod(long long a, long long b) {
  const long long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Whether p suits an access of n elements: aligned to the piece size (at most 16 bytes).
template <typename T>
KA_HD bool ka_aligned(const T* p, int n) {
  const unsigned long long bytes = (unsigned long long)n * sizeof(T);
  return (unsigned long long)p % (bytes < 16 ? bytes : 16) == 0;
}
)";

class HeaderWriter {
 public:
  HeaderWriter(const ElementwiseProblem& problem, const Definition& def,
               const KernelTemplate& kernel)
      : problem_(problem),
        def_(def),
        cuda_(kernel.target == DeviceKind::Cuda),
        nvrtc_(kernel.build == TemplateBuild::Nvrtc),
        inputs_(used_inputs(problem)) {}

  std::string write() {
    std::string out;
    out += description();
    out += "#pragma once\n";
    out += cuda_ ? kElementwiseCudaPrelude : kCpuPrelude;
    out += "#include \"ka_math.h\"\n";
    if (!nvrtc_) out += "#include \"kernelarc/abi.h\"\n";
    out += conversions();
    out += cuda_ ? kCudaAccess : kCpuAccess;
    out += kCommonHelpers;
    out += fmt::format("\ntypedef {} ka_out_t;  // {}\n",
                       header_element_type(output().dtype, cuda_), output().name);
    out += args_struct();
    out += nvrtc_ ? kernel_params() : bind_function();
    return out;
  }

 private:
  const TensorSpec& input(int index) const { return def_.inputs[index]; }
  const TensorSpec& output() const { return def_.outputs[0]; }

  std::string description() const {
    std::string text = fmt::format(
        "// ka_problem.h for \"{}\" ({} family), generated by kernelarc's element-wise binder.\n"
        "// output {}[r, c] = {}  for r < ROWS = {}, c < COLS = {}\n",
        def_.name, problem_.family, output().name, problem_.expression.text(),
        problem_.row_axes.empty() ? "1" : fmt::format("{}", fmt::join(problem_.row_axes, " * ")),
        problem_.column_axis);
    for (const ElementwiseOperand& operand : problem_.operands) {
      const std::string& tensor = input(operand.input).name;
      switch (operand.kind) {
        case OperandKind::Row:
          text += fmt::format("//   {} = {}[r, ({}) + c]  (row of width {})\n", operand.name,
                              tensor, operand.offset_text, operand.width_axis);
          break;
        case OperandKind::Column:
          text += fmt::format("//   {} = {}[({}) + c]  (per column, width {})\n", operand.name,
                              tensor, operand.offset_text, operand.width_axis);
          break;
        case OperandKind::Scalar:
          text += fmt::format("//   {} = {}  (scalar)\n", operand.name, tensor);
          break;
      }
    }
    return text;
  }

  std::string conversions() const {
    if (!cuda_) return "";  // ka_cpu_types.h has them all
    std::set<DType> dtypes = {output().dtype};
    for (int index : inputs_) dtypes.insert(input(index).dtype);
    std::string text;
    if (dtypes.contains(DType::Float16)) text += "#include <cuda_fp16.h>\n";
    if (dtypes.contains(DType::BFloat16)) text += "#include <cuda_bf16.h>\n";
    text += "\nKA_HD float ka_to_float(float x) { return x; }\n";
    text += "template <typename T>\nKA_HD T ka_from_float(float x);\n";
    text += "template <>\nKA_HD float ka_from_float<float>(float x) { return x; }\n";
    for (DType dtype : dtypes) {
      const std::string type = header_element_type(dtype, true);
      switch (dtype) {
        case DType::Float16:
          text += "KA_HD float ka_to_float(__half x) { return __half2float(x); }\n";
          text +=
              "template <>\nKA_HD __half ka_from_float<__half>(float x) { "
              "return __float2half_rn(x); }\n";
          break;
        case DType::BFloat16:
          text += "KA_HD float ka_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }\n";
          text +=
              "template <>\nKA_HD __nv_bfloat16 ka_from_float<__nv_bfloat16>(float x) { "
              "return __float2bfloat16_rn(x); }\n";
          break;
        case DType::Float32:
          break;
        default:  // scalar inputs
          text += fmt::format("KA_HD float ka_to_float({} x) {{ return (float)x; }}\n", type);
      }
    }
    return text;
  }

  std::string input_type(int index) const { return header_element_type(input(index).dtype, cuda_); }

  std::string args_struct() const {
    std::string members, loads, checks;
    for (int index : inputs_)
      members += fmt::format("  const {}* in_{};\n", input_type(index), input(index).name);
    members += "  long long n_rows, n_cols;\n";
    for (const ElementwiseOperand& operand : problem_.operands) {
      const std::string pointer = "in_" + input(operand.input).name;
      const std::string& name = operand.name;
      switch (operand.kind) {
        case OperandKind::Row:
          members += fmt::format("  long long w_{0}, o_{0};  // row width, column offset\n", name);
          loads += fmt::format(
              "    float v_{0}[N];\n    ka_load<N>({1} + row * w_{0} + o_{0} + col, v_{0});\n",
              name, pointer);
          checks += fmt::format(" && w_{0} % n == 0 && o_{0} % n == 0", name);
          break;
        case OperandKind::Column:
          members += fmt::format("  long long o_{};  // column offset\n", name);
          loads += fmt::format("    float v_{0}[N];\n    ka_load<N>({1} + o_{0} + col, v_{0});\n",
                               name, pointer);
          checks += fmt::format(" && o_{} % n == 0", name);
          break;
        case OperandKind::Scalar:
          loads += fmt::format("    const float s_{} = ka_to_float({}[0]);\n", name, pointer);
          break;
      }
    }
    std::string alignment;
    for (int index : inputs_) {
      if (input(index).is_scalar() || input(index).shape->empty()) continue;
      alignment += fmt::format(" && ka_aligned(in_{}, n)", input(index).name);
    }
    const std::string value = problem_.expression.to_code([&](const std::string& name) {
      const auto operand =
          std::find_if(problem_.operands.begin(), problem_.operands.end(),
                       [&](const ElementwiseOperand& o) { return o.name == name; });
      return operand->kind == OperandKind::Scalar ? "s_" + name : "v_" + name + "[i]";
    });
    return fmt::format(R"(
struct KaArgs {{
  ka_out_t* out;
{0}
  KA_HD long long rows() const {{ return n_rows; }}
  KA_HD long long cols() const {{ return n_cols; }}

  // Whether apply<n> may run: n a power of two dividing the columns, every row width and
  // column offset, and every pointer aligned for the vector access.
  KA_HD bool vector_ok(int n) const {{
    return n >= 1 && (n & (n - 1)) == 0 && n_cols % n == 0 && ka_aligned(out, n){1}{2};
  }}

  // output[row, col .. col + N) for col % N == 0 (N > 1 needs vector_ok(N)).
  template <int N>
  KA_HD void apply(long long row, long long col) const {{
{3}    float result[N];
    KA_UNROLL
    for (int i = 0; i < N; ++i) result[i] = {4};
    ka_store<N>(out + row * n_cols + col, result);
  }}

  // output[row, col], any col.
  KA_HD void apply1(long long row, long long col) const {{ apply<1>(row, col); }}
}};
)",
                       members, checks, alignment, loads, value);
  }

  // The brace initialiser of KaArgs over ka_out_<output>, ka_in_<input> and ka_axis_<axis>.
  std::string args_initializer() const {
    std::vector<std::string> fields = {"ka_out_" + output().name};
    for (int index : inputs_) fields.push_back("ka_in_" + input(index).name);
    fields.push_back(rows_code(problem_));
    fields.push_back(axis_var(problem_.column_axis));
    for (const ElementwiseOperand& operand : problem_.operands) {
      if (operand.kind == OperandKind::Row) fields.push_back(axis_var(operand.width_axis));
      if (operand.kind != OperandKind::Scalar) fields.push_back(operand.offset_code);
    }
    return fmt::format("KaArgs{{{}}}", fmt::join(fields, ", "));
  }

  std::string kernel_params() const {
    std::vector<std::string> params;
    for (std::size_t i = 0; i < def_.inputs.size(); ++i) {
      const bool used =
          std::find(inputs_.begin(), inputs_.end(), static_cast<int>(i)) != inputs_.end();
      params.push_back(fmt::format("const {}* ka_in_{}",
                                   used ? input_type(static_cast<int>(i)) : "void",
                                   def_.inputs[i].name));
    }
    params.push_back(fmt::format("ka_out_t* ka_out_{}", output().name));
    for (const std::string& axis : problem_.axes) params.push_back("long long " + axis_var(axis));
    return fmt::format("\n#define KA_KERNEL_PARAMS {}\n#define KA_ARGS ({})\n",
                       fmt::join(params, ", "), args_initializer());
  }

  std::string bind_function() const {
    std::string body = fmt::format(
        "  if (n_inputs != {0} || n_outputs != 1) return \"expected {0} input{1} and 1 output\";\n",
        def_.inputs.size(), def_.inputs.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < def_.inputs.size(); ++i)
      body += bind_tensor_checks(def_.inputs[i], fmt::format("inputs[{}]", i));
    body += bind_tensor_checks(output(), "outputs[0]");
    for (const AxisSource& source : problem_.axis_sources) {
      body += fmt::format("  [[maybe_unused]] const long long {} = {};\n", axis_var(source.name),
                          source.code);
    }
    for (std::size_t i = 0; i < def_.inputs.size(); ++i)
      body += bind_shape_checks(def_.inputs[i], fmt::format("inputs[{}]", i));
    body += bind_shape_checks(output(), "outputs[0]");
    for (const ElementwiseOperand& operand : problem_.operands) {
      if (operand.kind == OperandKind::Scalar) continue;
      body += fmt::format(
          "  if ({0} < 0 || {0} + {1} > {2})\n"
          "    return \"{3}: column_offset {4} must be >= 0 and leave {5} columns within {6}'s "
          "width {7}\";\n",
          operand.offset_code, axis_var(problem_.column_axis), axis_var(operand.width_axis),
          operand.name, operand.offset_text, problem_.column_axis, input(operand.input).name,
          operand.width_axis);
    }
    for (int index : inputs_) {
      body += fmt::format("  const {0}* ka_in_{1} = static_cast<const {0}*>(inputs[{2}].data);\n",
                          input_type(index), input(index).name, index);
    }
    body += fmt::format("  ka_out_t* ka_out_{} = static_cast<ka_out_t*>(outputs[0].data);\n",
                        output().name);
    body += fmt::format("  *args = {};\n  return nullptr;\n", args_initializer());
    return ka_bind_definition(body, "fills *args; nullptr or what is wrong");
  }

  const ElementwiseProblem& problem_;
  const Definition& def_;
  bool cuda_;
  bool nvrtc_;
  std::vector<int> inputs_;
};

}  // namespace

std::string generate_elementwise_header(const ElementwiseProblem& problem,
                                        const Definition& definition,
                                        const KernelTemplate& kernel) {
  return HeaderWriter(problem, definition, kernel).write();
}

}  // namespace kernelarc
