#include "losses/replaced_token.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "common/shape_text.h"

namespace dialtree::losses {

CorruptedInput corrupt_targets(const at::Tensor& masked_ids, const at::Tensor& mlm_labels,
                               const at::Tensor& sampled, const at::Tensor& attention_mask,
                               std::int64_t ignore_index) {
  const bool ok = masked_ids.defined() && mlm_labels.defined() && sampled.defined() &&
                  attention_mask.defined() && masked_ids.dim() == 2 &&
                  mlm_labels.sizes() == masked_ids.sizes() &&
                  attention_mask.sizes() == masked_ids.sizes() && sampled.dim() == 1 &&
                  masked_ids.scalar_type() == at::kLong && mlm_labels.scalar_type() == at::kLong &&
                  sampled.scalar_type() == at::kLong;
  if (!ok) {
    throw std::invalid_argument(
        "corrupt_targets: expected int64 masked_ids and mlm_labels [B, L], attention_mask "
        "[B, L] and int64 sampled [N]; got " +
        shape_text(masked_ids) + ", " + shape_text(mlm_labels) + ", " +
        shape_text(attention_mask) + " and " + shape_text(sampled));
  }
  const at::Tensor targets = mlm_labels.ne(ignore_index);
  const std::int64_t n = targets.sum().item<std::int64_t>();
  if (sampled.size(0) != n) {
    throw std::invalid_argument("corrupt_targets: " + std::to_string(sampled.size(0)) +
                                " sampled ids for " + std::to_string(n) + " targets");
  }
  const at::Tensor original = at::where(targets, mlm_labels, masked_ids);
  CorruptedInput out;
  out.input_ids = original.clone();
  out.input_ids.index_put_({targets}, sampled);
  out.replaced = out.input_ids.ne(original) & attention_mask.ne(0);
  return out;
}

at::Tensor replaced_token_loss(const at::Tensor& logits, const at::Tensor& replaced) {
  if (!logits.defined() || !replaced.defined() || logits.dim() != 1 ||
      replaced.sizes() != logits.sizes()) {
    throw std::invalid_argument("replaced_token_loss: expected logits [M] and replaced [M], got " +
                                shape_text(logits) + " and " + shape_text(replaced));
  }
  if (!at::isFloatingType(logits.scalar_type())) {
    throw std::invalid_argument("replaced_token_loss: logits must be floating point");
  }
  const at::Tensor x = logits.to(at::kFloat);
  // Sum / max(M, 1): 0 with a zero gradient for an empty batch (a mean would be 0/0).
  const at::Tensor sum = at::binary_cross_entropy_with_logits(
      x, replaced.to(x.device(), at::kFloat), {}, {}, at::Reduction::Sum);
  return sum / static_cast<double>(std::max<std::int64_t>(1, x.size(0)));
}

}  // namespace dialtree::losses
