// The routing rule of the moe family, one function for every template (docs/TEMPLATES.md,
// "Family: moe"): from one token's E logits, the KA_TOP_K chosen experts and their weights.
// Plain loops over KA_EXPERTS with no shared memory, so a CUDA thread or a CPU loop calls it alike.
#pragma once

#include "ka_problem.h"

#ifndef __CUDACC_RTC__
#include <cmath>
#endif

/// exp for the scores, within 2 ulp on the device (CUDA's expf) as on the host: top-k compares
/// scores, and __expf's larger error would move near-ties away from the float32 reference.
KA_HD float ka_moe_exp(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  return std::exp(x);
#endif
}

static_assert(KA_EXPERTS % KA_N_GROUP == 0, "experts split into equal groups");
static_assert(KA_TOPK_GROUP <= KA_N_GROUP && KA_TOP_K <= KA_EXPERTS, "routing bounds");

/// From the token's KA_EXPERTS logits (and ka's bias):
/// ids[k] and weights[k] for k < KA_TOP_K, in decreasing selection score (ties: lower expert).
KA_HD void ka_moe_route(const KaArgs& ka, const float* logits, int* ids, float* weights) {
  float score[KA_EXPERTS];
  if (KA_SCORING_SIGMOID) {
    for (int e = 0; e < KA_EXPERTS; ++e) score[e] = 1.0f / (1.0f + ka_moe_exp(-logits[e]));
  } else {
    float top = logits[0];
    for (int e = 1; e < KA_EXPERTS; ++e) top = logits[e] > top ? logits[e] : top;
    float sum = 0.0f;
    for (int e = 0; e < KA_EXPERTS; ++e) {
      score[e] = ka_moe_exp(logits[e] - top);
      sum += score[e];
    }
    for (int e = 0; e < KA_EXPERTS; ++e) score[e] /= sum;
  }
  // Selection scores; an excluded expert is -inf and never chosen.
  const float kExcluded = -__builtin_huge_valf();
  float select[KA_EXPERTS];
  for (int e = 0; e < KA_EXPERTS; ++e) select[e] = score[e] + ka.bias(e);
  if (KA_N_GROUP > 1) {
    constexpr int kPerGroup = KA_EXPERTS / KA_N_GROUP;
    float group_score[KA_N_GROUP];
    for (int g = 0; g < KA_N_GROUP; ++g) {
      float best = kExcluded, second = kExcluded;
      for (int i = 0; i < kPerGroup; ++i) {
        const float c = select[g * kPerGroup + i];
        if (c > best) {
          second = best;
          best = c;
        } else if (c > second) {
          second = c;
        }
      }
      group_score[g] = KA_GROUP_SCORE_MAX || kPerGroup < 2 ? best : best + second;
    }
    bool kept[KA_N_GROUP];
    for (int g = 0; g < KA_N_GROUP; ++g) kept[g] = false;
    for (int round = 0; round < KA_TOPK_GROUP; ++round) {
      int pick = -1;
      for (int g = 0; g < KA_N_GROUP; ++g)
        if (!kept[g] && (pick < 0 || group_score[g] > group_score[pick])) pick = g;
      kept[pick] = true;
    }
    for (int e = 0; e < KA_EXPERTS; ++e)
      if (!kept[e / kPerGroup]) select[e] = kExcluded;
  }
  // A flag an expert rather than a scan of the ids chosen so far: O(E) a pick, not O(E k)
  // (a decode step routes its token on one thread).
  bool taken[KA_EXPERTS];
  for (int e = 0; e < KA_EXPERTS; ++e) taken[e] = false;
  float total = 0.0f;
  for (int k = 0; k < KA_TOP_K; ++k) {
    int pick = -1;
    for (int e = 0; e < KA_EXPERTS; ++e)
      if (!taken[e] && (pick < 0 || select[e] > select[pick])) pick = e;
    taken[pick] = true;
    ids[k] = pick;
    weights[k] = score[pick];
    total += score[pick];
  }
  const float scale = KA_RENORMALIZE
                          ? KA_ROUTED_SCALING / (KA_SCORING_SIGMOID ? total + 1e-20f : total)
                          : KA_ROUTED_SCALING;
  for (int k = 0; k < KA_TOP_K; ++k) weights[k] *= scale;
}
