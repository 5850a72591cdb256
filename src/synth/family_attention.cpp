// The attention binder: finds q, k, v, the index arrays and the outputs by name, tells the layout
// from their shapes, and checks every shape against it. See docs/TEMPLATES.md ("Family:
// attention").
#include "synth/family_attention.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "synth/family_support.h"

namespace kernelarc {

namespace {

AttentionTensor find_attention_tensor(const std::vector<TensorSpec>& tensors,
                                      std::initializer_list<const char*> names) {
  for (const char* name : names)
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].name == name) return {&tensors[i], static_cast<int>(i)};
  return {};
}

constexpr AttentionLayout kLayouts[] = {AttentionLayout::Bhsd, AttentionLayout::Bshd,
                                        AttentionLayout::Ragged, AttentionLayout::Paged};

std::optional<AttentionLayout> layout_from_name(const std::string& name) {
  for (const AttentionLayout layout : kLayouts)
    if (name == attention_layout_name(layout)) return layout;
  return std::nullopt;
}

std::string attention_rank_text(std::size_t rank) {
  return std::to_string(rank) + (rank == 1 ? " dimension" : " dimensions");
}

class AttentionProblemReader {
 public:
  explicit AttentionProblemReader(const Definition& def) : def_(def), known_(static_axes(def)) {}

  AttentionProblem read() {
    read_params();
    find_tensors();
    read_layout();
    check_kv_shapes();
    check_outputs();
    check_indices();
    read_scale();
    return p_;
  }

 private:
  void read_params() {
    const OrderedJson& params = def_.ext.op_params;
    for (const auto& [key, value] : params.items()) {
      const std::string field = "kernelarc.op_params." + key;
      if (key == "causal" || key == "decode") {
        if (!value.is_boolean()) mismatch(def_, field, "expected true or false");
        if (key == "causal") p_.causal = value.get<bool>();
      } else if (key == "layout") {
        if (!value.is_string()) mismatch(def_, field, "expected bhsd, bshd, ragged or paged");
        layout_ = value.get<std::string>();
        if (!layout_from_name(layout_))
          mismatch(def_, field, "expected bhsd, bshd, ragged or paged, got \"" + layout_ + "\"");
      } else if (key == "lse_base") {
        if (value == 2 || value == "2") {
          p_.lse_base2 = true;
        } else if (value == "e") {
          p_.lse_base2 = false;
        } else {
          mismatch(def_, field, "expected 2 or \"e\", got " + value.dump());
        }
      } else if (key == "scale") {
        if (!value.is_number() || !(value.get<double>() > 0))
          mismatch(def_, field, "expected a positive number");
        scale_param_ = value.get<double>();
      } else {
        mismatch(def_, field, "unknown field (expected causal, decode, layout, lse_base, scale)");
      }
    }
  }

  void find_tensors() {
    p_.q = find_attention_tensor(def_.inputs, {"q", "query"});
    p_.k = find_attention_tensor(def_.inputs, {"k", "k_cache", "key"});
    p_.v = find_attention_tensor(def_.inputs, {"v", "v_cache", "value"});
    if (!p_.q || !p_.k || !p_.v)
      mismatch(def_, "inputs",
               "expected a query (q), keys (k or k_cache) and values (v or v_cache)");
    p_.qo_indptr = find_attention_tensor(def_.inputs, {"qo_indptr"});
    p_.kv_indptr = find_attention_tensor(def_.inputs, {"kv_indptr"});
    p_.kv_indices = find_attention_tensor(def_.inputs, {"kv_indices"});
    p_.last_page_len = find_attention_tensor(def_.inputs, {"kv_last_page_len", "last_page_len"});
    p_.scale = find_attention_tensor(def_.inputs, {"sm_scale", "scale"});
    p_.k_scale = find_attention_tensor(def_.inputs, {"k_scale", "k_scales", "key_scale"});
    p_.v_scale = find_attention_tensor(def_.inputs, {"v_scale", "v_scales", "value_scale"});
    std::size_t known = 3;
    for (const AttentionTensor* t : {&p_.qo_indptr, &p_.kv_indptr, &p_.kv_indices,
                                     &p_.last_page_len, &p_.scale, &p_.k_scale, &p_.v_scale})
      known += static_cast<bool>(*t);
    if (known != def_.inputs.size())
      for (const TensorSpec& input : def_.inputs)
        if (!is_known_input(input))
          mismatch(def_, "inputs." + input.name,
                   "not an attention input (q, k, v, qo_indptr, kv_indptr, kv_indices, "
                   "kv_last_page_len, sm_scale, k_scale, v_scale)");
    for (const AttentionTensor* t : {&p_.q, &p_.k, &p_.v})
      if (t->spec->is_scalar()) mismatch(def_, field(*t), "expected a tensor");
    if (!is_packed_float_dtype(p_.q.spec->dtype))
      mismatch(def_, field(p_.q) + ".dtype",
               "expected float32, float16 or bfloat16, got " +
                   std::string(dtype_name(p_.q.spec->dtype)));
    p_.kv_fp4 = dtype_is_packed(p_.k.spec->dtype);
    if (p_.kv_fp4) {
      check_fp4_tensors();
      return;
    }
    for (const AttentionTensor* t : {&p_.k, &p_.v})
      if (t->spec->dtype != p_.q.spec->dtype)
        mismatch(def_, field(*t) + ".dtype",
                 "expected the dtype of " + p_.q.spec->name + ", " +
                     std::string(dtype_name(p_.q.spec->dtype)) +
                     " (or float4_e2m1fn_x2 with k_scale and v_scale), got " +
                     std::string(dtype_name(t->spec->dtype)));
    for (const AttentionTensor* t : {&p_.k_scale, &p_.v_scale})
      if (*t)
        mismatch(def_, field(*t),
                 "block scales go with float4 keys and values; " + p_.k.spec->name + " is " +
                     std::string(dtype_name(p_.k.spec->dtype)));
  }

  /// NVFP4 keys and values: both float4, each with its float8_e4m3fn block scales.
  void check_fp4_tensors() {
    if (!dtype_is_packed(p_.v.spec->dtype))
      mismatch(def_, field(p_.v) + ".dtype",
               "expected float4 like " + p_.k.spec->name + ", got " +
                   std::string(dtype_name(p_.v.spec->dtype)));
    for (const auto& [scale, of] : {std::pair{&p_.k_scale, &p_.k}, std::pair{&p_.v_scale, &p_.v}}) {
      if (!*scale)
        mismatch(def_, "inputs",
                 "float4 " + of->spec->name +
                     " needs its block scales (k_scale and v_scale, float8_e4m3fn, one per 16 "
                     "values)");
      if (scale->spec->is_scalar()) mismatch(def_, field(*scale), "expected a tensor");
      if (scale->spec->dtype != DType::Float8E4M3FN)
        mismatch(def_, field(*scale) + ".dtype",
                 "expected float8_e4m3fn (NVFP4 block scales), got " +
                     std::string(dtype_name(scale->spec->dtype)));
    }
  }

  /// The last axis of a float4 row counts bytes (two values each) and its scales' last axis
  /// counts blocks of 16 values; every other axis is the one the row would have.
  void check_fp4_shapes() {
    const std::vector<std::string>& k = shape(p_.k);
    if (p_.head_dim % 16 != 0)
      mismatch(def_, field(p_.q),
               fmt::format("NVFP4 keys and values need a head dimension that is a multiple of "
                           "16 (one scale per 16 values), got {}",
                           p_.head_dim));
    const int64_t bytes = static_value(p_.k, k.size() - 1, "packed head dimension");
    if (bytes * 2 != p_.head_dim)
      mismatch(def_, field(p_.k),
               fmt::format("expected {} bytes (two float4 values each) on the last axis for the "
                           "head dimension {}, got {} ({})",
                           p_.head_dim / 2, p_.head_dim, bytes, k.back()));
    for (const AttentionTensor* t : {&p_.k_scale, &p_.v_scale}) {
      const std::vector<std::string>& s = shape(*t);
      if (s.size() != k.size() || !std::equal(k.begin(), k.end() - 1, s.begin()))
        mismatch(
            def_, field(*t),
            fmt::format("expected the shape of {} with scale blocks last, [{}, ...], got {}",
                        p_.k.spec->name, fmt::join(k.begin(), k.end() - 1, ", "), shape_text(s)));
      const int64_t blocks = static_value(*t, s.size() - 1, "scale block count");
      if (blocks * 16 != p_.head_dim)
        mismatch(def_, field(*t),
                 fmt::format("expected {} scales (one per 16 values) on the last axis, got {} ({})",
                             p_.head_dim / 16, blocks, s.back()));
    }
    if (!p_.decode)
      mismatch(def_, field(p_.q),
               "float4 keys and values are served for decode only (one query per sequence)");
  }

  bool is_known_input(const TensorSpec& input) const {
    for (const AttentionTensor* t :
         {&p_.q, &p_.k, &p_.v, &p_.qo_indptr, &p_.kv_indptr, &p_.kv_indices, &p_.last_page_len,
          &p_.scale, &p_.k_scale, &p_.v_scale})
      if (t->spec == &input) return true;
    return false;
  }

  std::string field(const AttentionTensor& t, const char* kind = "inputs") const {
    return std::string(kind) + "." + t.spec->name;
  }

  const std::vector<std::string>& shape(const AttentionTensor& t) const { return *t.spec->shape; }

  int64_t static_value(const AttentionTensor& t, std::size_t dim, const char* what) const {
    const std::string& axis = shape(t)[dim];
    const auto it = known_.find(axis);
    if (it == known_.end())
      mismatch(def_, field(t), fmt::format("the {} ({}) must be a const or expr axis", what, axis));
    if (it->second <= 0)
      mismatch(def_, field(t), fmt::format("the {} ({}) must be positive", what, axis));
    return it->second;
  }

  /// Which of k's dimensions 1 and 2 holds the kv heads in a dense rank-4 k: the one named like
  /// heads, else the only static one.
  bool kv_heads_second(const std::vector<std::string>& k) const {
    const bool named1 = k[1].find("head") != std::string::npos;
    const bool named2 = k[2].find("head") != std::string::npos;
    if (named1 != named2) return named1;
    const bool static1 = known_.contains(k[1]), static2 = known_.contains(k[2]);
    if (static1 != static2) return static1;
    mismatch(def_, "kernelarc.op_params.layout",
             "cannot tell from " + shape_text(k) +
                 " whether the heads come before the sequence; give bhsd or bshd");
  }

  void read_layout() {
    const std::size_t q_rank = shape(p_.q).size(), k_rank = shape(p_.k).size();
    if (layout_.empty()) {
      if (p_.kv_indices)
        layout_ = "paged";
      else if (p_.kv_indptr)
        layout_ = "ragged";
      else if (k_rank == 4)
        layout_ = kv_heads_second(shape(p_.k)) ? "bhsd" : "bshd";
      else
        mismatch(def_, field(p_.k),
                 "expected [batch, heads, seq, dim] or [batch, seq, heads, dim] keys, or index "
                 "arrays (kv_indptr) of a ragged or paged layout");
    }
    p_.layout = *layout_from_name(layout_);
    const bool dense = p_.dense();
    const std::size_t want_k = p_.layout == AttentionLayout::Ragged ? 3 : 4;
    if (k_rank != want_k)
      mismatch(def_, field(p_.k),
               fmt::format("expected {} for the {} layout, got {}", attention_rank_text(want_k),
                           layout_, shape_text(shape(p_.k))));
    if (q_rank != 3 && !(dense && q_rank == 4))
      mismatch(def_, field(p_.q),
               dense ? "expected [batch, heads, seq, dim], [batch, seq, heads, dim] or, for "
                       "decode, [batch, heads, dim]"
                     : "expected [tokens, heads, dim]");
    const std::vector<std::string>& q = shape(p_.q);
    p_.head_dim = static_value(p_.q, q_rank - 1, "head dimension");
    p_.decode = q_rank == 3 && (dense || !p_.qo_indptr);
    if (dense) {
      p_.batch_axis = q[0];
      const bool heads_second = p_.layout == AttentionLayout::Bhsd;
      if (q_rank == 4) p_.q_seq_axis = heads_second ? q[2] : q[1];
      p_.q_heads = static_value(p_.q, q_rank == 3 || heads_second ? 1 : 2, "query head count");
    } else {
      (p_.decode ? p_.batch_axis : p_.total_q_axis) = q[0];
      p_.q_heads = static_value(p_.q, 1, "query head count");
    }
    if (p_.layout == AttentionLayout::Ragged && !p_.qo_indptr)
      mismatch(def_, "inputs", "the ragged layout needs qo_indptr and kv_indptr");
  }

  void check_kv_shapes() {
    const std::vector<std::string>& k = shape(p_.k);
    if (shape(p_.v) != k)
      mismatch(def_, field(p_.v),
               "expected the shape of " + p_.k.spec->name + ", " + shape_text(k));
    if (p_.kv_fp4)
      check_fp4_shapes();
    else if (k.back() != shape(p_.q).back())
      mismatch(def_, field(p_.k),
               "expected the head dimension " + shape(p_.q).back() + " of " + p_.q.spec->name);
    switch (p_.layout) {
      case AttentionLayout::Bhsd:
      case AttentionLayout::Bshd: {
        const bool heads_second = p_.layout == AttentionLayout::Bhsd;
        if (k[0] != p_.batch_axis)
          mismatch(def_, field(p_.k), "expected the batch axis " + p_.batch_axis + " first");
        p_.kv_seq_axis = heads_second ? k[2] : k[1];
        p_.kv_heads = static_value(p_.k, heads_second ? 1 : 2, "key/value head count");
        break;
      }
      case AttentionLayout::Ragged:
        p_.kv_rows_axis = k[0];
        p_.kv_heads = static_value(p_.k, 1, "key/value head count");
        break;
      case AttentionLayout::Paged:
        p_.page_size = static_value(p_.k, 1, "page size");
        p_.kv_heads = static_value(p_.k, 2, "key/value head count");
        break;
    }
    if (p_.q_heads % p_.kv_heads != 0)
      mismatch(def_, field(p_.q),
               fmt::format("expected a multiple of the {} key/value heads, got {} query heads",
                           p_.kv_heads, p_.q_heads));
  }

  /// The shape of an output of one value per (query, head): q's shape without the head dimension.
  std::vector<std::string> lse_shape() const {
    const std::vector<std::string>& q = shape(p_.q);
    return {q.begin(), q.end() - 1};
  }

  void check_outputs() {
    p_.output = find_attention_tensor(def_.outputs, {"output", "out", "o", "attn_output"});
    if (!p_.output && !def_.outputs.empty() && def_.outputs.front().name != "lse")
      p_.output = {&def_.outputs.front(), 0};
    p_.lse = find_attention_tensor(def_.outputs, {"lse"});
    if (!p_.output)
      mismatch(def_, "outputs", "expected the attention output (output) and optionally lse");
    if (def_.outputs.size() != 1u + static_cast<bool>(p_.lse))
      mismatch(def_, "outputs", "expected the attention output and, optionally, lse; no others");
    if (p_.output.spec->is_scalar() || shape(p_.output) != shape(p_.q))
      mismatch(def_, field(p_.output, "outputs"),
               "expected the shape of " + p_.q.spec->name + ", " + shape_text(shape(p_.q)));
    if (!is_packed_float_dtype(p_.output.spec->dtype))
      mismatch(def_, field(p_.output, "outputs") + ".dtype",
               "expected float32, float16 or bfloat16");
    if (!p_.lse) return;
    const std::vector<std::string> want = lse_shape();
    if (p_.lse.spec->is_scalar() || shape(p_.lse) != want)
      mismatch(def_, field(p_.lse, "outputs"), "expected shape " + shape_text(want));
    if (p_.lse.spec->dtype != DType::Float32)
      mismatch(def_, field(p_.lse, "outputs") + ".dtype", "expected float32");
  }

  void check_index(const AttentionTensor& t, const std::string& axis) {
    if (!t) return;
    if (t.spec->is_scalar() || shape(t).size() != 1)
      mismatch(def_, field(t), "expected a 1-D index array");
    if (t.spec->dtype != DType::Int32 && t.spec->dtype != DType::Int64)
      mismatch(def_, field(t) + ".dtype",
               "expected int32 or int64, got " + std::string(dtype_name(t.spec->dtype)));
    if (!axis.empty() && shape(t)[0] != axis)
      mismatch(def_, field(t), "expected shape [" + axis + "]");
  }

  void check_indices() {
    const bool dense = p_.dense();
    if (dense) {
      for (const AttentionTensor* t :
           {&p_.qo_indptr, &p_.kv_indptr, &p_.kv_indices, &p_.last_page_len})
        if (*t) mismatch(def_, field(*t), "a dense layout takes no index arrays");
      return;
    }
    if (!p_.kv_indptr) mismatch(def_, "inputs", "expected kv_indptr (batch + 1 offsets)");
    check_index(p_.kv_indptr, "");
    p_.indptr_axis = shape(p_.kv_indptr)[0];
    check_index(p_.qo_indptr, p_.indptr_axis);
    if (p_.layout == AttentionLayout::Paged) {
      if (!p_.kv_indices) mismatch(def_, "inputs", "the paged layout needs kv_indices");
      check_index(p_.kv_indices, "");
      p_.kv_rows_axis = shape(p_.kv_indices)[0];
      check_index(p_.last_page_len, p_.decode ? p_.batch_axis : "");
    } else {
      for (const AttentionTensor* t : {&p_.kv_indices, &p_.last_page_len})
        if (*t) mismatch(def_, field(*t), "only the paged layout takes page indices");
    }
  }

  void read_scale() {
    if (p_.scale) {
      const TensorSpec& s = *p_.scale.spec;
      if (!s.is_scalar() && !s.shape->empty())
        mismatch(def_, field(p_.scale), "expected a scalar (shape null or [])");
      if (!is_scalar_operand_dtype(s.dtype) || s.dtype == DType::Int32 || s.dtype == DType::Int64)
        mismatch(def_, field(p_.scale) + ".dtype", "expected a float dtype");
    }
    p_.scale_value = scale_param_.value_or(1.0 / std::sqrt(static_cast<double>(p_.head_dim)));
  }

  const Definition& def_;
  const AxisValues known_;
  AttentionProblem p_;
  std::string layout_;
  std::optional<double> scale_param_;
};

std::string parenthesized(const std::string& expression) {
  return "(" + expression + ")";
}

class AttentionBinder : public FamilyBinder {
 public:
  // NVFP4 keys and values are a family of their own, so that only the templates that dequantize
  // them are offered such problems.
  std::vector<std::string> families() const override { return {"attention", "attention_nvfp4"}; }

  FamilyBinding bind(const Definition& def, const KernelTemplate& kernel) const override {
    if (!kernel.serves(def.ext.op_family))
      mismatch(def, "kernelarc.op_family",
               "template " + kernel.name + " does not serve \"" + def.ext.op_family + "\"");
    const AttentionProblem p = read_attention_problem(def);
    if (kernel.target == DeviceKind::Cuda && p.head_dim % 8 != 0)
      mismatch(def, "inputs." + p.q.spec->name,
               fmt::format("the CUDA templates need a head dimension that is a multiple of 8 "
                           "(16-byte rows), got {}",
                           p.head_dim));
    const bool nvfp4_family = def.ext.op_family == "attention_nvfp4";
    if (p.kv_fp4 != nvfp4_family)
      mismatch(def, "kernelarc.op_family",
               p.kv_fp4 ? "expected \"attention_nvfp4\" for float4 keys and values"
                        : "\"attention_nvfp4\" needs float4 keys and values, but " +
                              p.k.spec->name + " is " + std::string(dtype_name(p.k.spec->dtype)));
    if (p.kv_fp4 && kernel.target != DeviceKind::Cuda)
      mismatch(def, "inputs." + p.k.spec->name + ".dtype",
               std::string(dtype_name(p.k.spec->dtype)) +
                   " keys and values (NVFP4) are read only by the CUDA templates");
    FamilyBinding binding;
    binding.header = generate_attention_header(p, def, kernel);
    const bool dense = p.dense();
    const std::string batch =
        p.batch_axis.empty() ? parenthesized(p.indptr_axis + " - 1") : p.batch_axis;
    const std::string q_seq = p.q_seq_axis.empty() ? "1" : p.q_seq_axis;
    binding.sizes["BATCH"] = batch;
    binding.sizes["TOTAL_Q"] =
        p.total_q_axis.empty() ? parenthesized(batch + " * " + q_seq) : p.total_q_axis;
    binding.sizes["MAX_Q_LEN"] = dense || p.decode ? q_seq : p.total_q_axis;
    binding.sizes["MAX_KV_LEN"] =
        dense ? p.kv_seq_axis
              : (p.layout == AttentionLayout::Ragged
                     ? p.kv_rows_axis
                     : parenthesized(fmt::format("{} * {}", p.kv_rows_axis, p.page_size)));
    binding.constants["HEAD_DIM"] = p.head_dim;
    binding.constants["Q_HEADS"] = p.q_heads;
    binding.constants["KV_HEADS"] = p.kv_heads;
    binding.constants["GROUP"] = p.q_heads / p.kv_heads;
    binding.constants["PAGE_SIZE"] = p.page_size;
    binding.constants["PAGED"] = p.layout == AttentionLayout::Paged ? 1 : 0;
    binding.constants["CAUSAL"] = p.causal ? 1 : 0;
    binding.constants["DECODE"] = p.decode ? 1 : 0;
    binding.constants["RAGGED_Q"] = p.ragged_q() ? 1 : 0;
    binding.constants["ELEM_BYTES"] = static_cast<int64_t>(dtype_size(p.q.spec->dtype));
    binding.constants["KV_FP4"] = p.kv_fp4 ? 1 : 0;
    return binding;
  }
};

}  // namespace

const char* attention_layout_name(AttentionLayout layout) {
  switch (layout) {
    case AttentionLayout::Bhsd:
      return "bhsd";
    case AttentionLayout::Bshd:
      return "bshd";
    case AttentionLayout::Ragged:
      return "ragged";
    case AttentionLayout::Paged:
      break;
  }
  return "paged";
}

AttentionProblem read_attention_problem(const Definition& def) {
  return AttentionProblemReader(def).read();
}

std::unique_ptr<FamilyBinder> make_attention_binder() {
  return std::make_unique<AttentionBinder>();
}

}  // namespace kernelarc
