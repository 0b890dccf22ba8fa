#include "losses/objective.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

namespace dialtree::losses {

namespace {

void check_weight(double w, const char* name) {
  if (!std::isfinite(w) || w < 0.0) {
    throw std::invalid_argument(std::string("combine_objective: ") + name +
                                " must be finite and >= 0, got " + std::to_string(w));
  }
}

/// Adds weight·part to `total` (undefined = nothing yet) and returns the part's value.
double accumulate(at::Tensor& total, const at::Tensor& part, double weight, const char* name) {
  if (!part.defined()) return 0.0;
  if (part.numel() != 1 || !at::isFloatingType(part.scalar_type())) {
    throw std::invalid_argument(std::string("combine_objective: ") + name +
                                " must be a floating tensor with one element");
  }
  const at::Tensor term = part.reshape({}) * weight;
  total = total.defined() ? total + term : term;
  return part.detach().to(at::kDouble).item<double>();
}

}  // namespace

Objective combine_objective(const ObjectiveParts& parts, const ObjectiveWeights& weights) {
  check_weight(weights.contrastive_weight, "contrastive_weight");
  check_weight(weights.mlm_weight, "mlm_weight");
  check_weight(weights.self_weight, "self_weight");
  check_weight(weights.token_contrastive_weight, "token_contrastive_weight");
  if (!parts.sup.defined() && !parts.mlm_labelled.defined() && !parts.self.defined() &&
      !parts.mlm_unlabelled.defined() && !parts.token.defined()) {
    throw std::invalid_argument("combine_objective: every loss part is absent");
  }
  Objective out;
  at::Tensor labelled;
  at::Tensor unlabelled;
  out.sup = accumulate(labelled, parts.sup, weights.contrastive_weight, "sup");
  out.mlm_labelled = accumulate(labelled, parts.mlm_labelled, weights.mlm_weight, "mlm_labelled");
  out.token_contrastive =
      accumulate(labelled, parts.token, weights.token_contrastive_weight, "token");
  out.self = accumulate(unlabelled, parts.self, weights.self_weight, "self");
  out.mlm_unlabelled =
      accumulate(unlabelled, parts.mlm_unlabelled, weights.mlm_weight, "mlm_unlabelled");
  if (!labelled.defined()) {
    out.total = unlabelled;
  } else if (!unlabelled.defined()) {
    out.total = labelled;
  } else {
    out.total = labelled + unlabelled;
  }
  out.labelled = weights.contrastive_weight * out.sup + weights.mlm_weight * out.mlm_labelled +
                 weights.token_contrastive_weight * out.token_contrastive;
  out.unlabelled = weights.self_weight * out.self + weights.mlm_weight * out.mlm_unlabelled;
  out.total_value = out.labelled + out.unlabelled;
  return out;
}

}  // namespace dialtree::losses
