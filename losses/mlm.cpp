#include "losses/mlm.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "common/shape_text.h"

namespace dialtree::losses {

MlmLossParts mlm_loss_parts(const at::Tensor& logits, const at::Tensor& labels,
                            std::int64_t ignore_index) {
  const bool shapes_ok = logits.defined() && labels.defined() && logits.dim() >= 2 &&
                         logits.dim() <= 3 && labels.dim() == logits.dim() - 1 &&
                         labels.sizes() == logits.sizes().slice(0, logits.dim() - 1) &&
                         logits.size(-1) >= 1;
  if (!shapes_ok) {
    throw std::invalid_argument(
        "mlm_loss: logits must be [B, L, V] with labels [B, L], or [N, V] "
        "with labels [N]; got logits " +
        shape_text(logits) + " and labels " + shape_text(labels));
  }
  if (!at::isFloatingType(logits.scalar_type())) {
    throw std::invalid_argument("mlm_loss: logits must be floating point");
  }
  if (!at::isIntegralType(labels.scalar_type(), /*includeBool=*/false)) {
    throw std::invalid_argument("mlm_loss: labels must be an integer tensor");
  }
  const int64_t vocab = logits.size(-1);
  const at::Tensor flat_labels = labels.reshape({-1}).to(logits.device(), at::kLong);
  const at::Tensor target = flat_labels != ignore_index;
  if (at::any(target & ((flat_labels < 0) | (flat_labels >= vocab))).item<bool>()) {
    throw std::invalid_argument("mlm_loss: a label lies outside [0, " + std::to_string(vocab) +
                                ") and is not the ignore index " + std::to_string(ignore_index));
  }
  const at::ScalarType dtype = logits.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor log_probs = at::log_softmax(logits.reshape({-1, vocab}), -1, dtype);
  MlmLossParts out;
  // Sum reduction: 0 with a zero gradient when every label is ignored (Mean would be 0/0).
  out.nll_sum = at::nll_loss(log_probs, flat_labels, {}, at::Reduction::Sum, ignore_index);
  out.num_targets = target.sum();
  out.loss = out.nll_sum / out.num_targets.clamp_min(1).to(dtype);
  return out;
}

at::Tensor mlm_loss(const at::Tensor& logits, const at::Tensor& labels, std::int64_t ignore_index) {
  return mlm_loss_parts(logits, labels, ignore_index).loss;
}

}  // namespace dialtree::losses
