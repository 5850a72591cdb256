// The op families the template synthesizer knows, each with its binder.
#include <algorithm>

#include "synth/family.h"

namespace kernelarc {

const FamilyBinder* find_family_binder(std::string_view family) {
  static const std::vector<std::unique_ptr<FamilyBinder>> binders = [] {
    std::vector<std::unique_ptr<FamilyBinder>> all;
    all.push_back(make_row_binder());
    all.push_back(make_elementwise_binder());
    all.push_back(make_gemm_binder());
    all.push_back(make_rope_binder());
    all.push_back(make_transpose_binder());
    all.push_back(make_fused_binder());
    all.push_back(make_attention_binder());
    all.push_back(make_scaled_gemm_binder());
    all.push_back(make_moe_binder());
    all.push_back(make_moe_backward_binder());
    all.push_back(make_mlp_binder());
    return all;
  }();
  for (const auto& binder : binders) {
    const std::vector<std::string> families = binder->families();
    if (std::find(families.begin(), families.end(), family) != families.end()) return binder.get();
  }
  return nullptr;
}

}  // namespace kernelarc
