#include "losses/contrastive.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "common/shape_text.h"

namespace dialtree::losses {

namespace {

bool positive_finite(double x) {
  return std::isfinite(x) && x > 0.0;
}

void check_options(const ContrastiveOptions& o, const char* fn) {
  if (!positive_finite(o.temperature) || !positive_finite(o.base_temperature) ||
      !positive_finite(o.norm_eps) || o.shard_size < 0) {
    throw std::invalid_argument(
        std::string(fn) + ": temperature (" + std::to_string(o.temperature) +
        "), base_temperature (" + std::to_string(o.base_temperature) + ") and norm_eps (" +
        std::to_string(o.norm_eps) + ") must be finite and > 0, shard_size (" +
        std::to_string(o.shard_size) + ") >= 0");
  }
}

at::ScalarType compute_dtype(const at::Tensor& t) {
  return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

/// The loss of every view: z1, z2 [K, B, D] (already in the compute dtype), s [K, B, B] in the
/// same dtype and device. Returns [K].
at::Tensor per_view_losses(const at::Tensor& z1, const at::Tensor& z2, const at::Tensor& s,
                           const ContrastiveOptions& o) {
  const int64_t b = z1.size(1);
  const auto normalise = [&](const at::Tensor& z) {
    // x / max(||x||, eps): a zero vector stays zero, and the norm's backward is 0 there.
    return z / at::norm(z, 2, {-1}, /*keepdim=*/true).clamp_min(o.norm_eps);
  };
  const at::Tensor z = at::cat({normalise(z1), normalise(z2)}, 1);          // [K, 2B, D]
  const at::Tensor logits = at::bmm(z, z.transpose(1, 2)) / o.temperature;  // [K, 2B, 2B]
  const at::Tensor self = at::eye(2 * b, z.options().dtype(at::kBool));
  // log Σ_{c≠a} exp ℓ_ac: the self term is -inf inside the log-sum-exp (which subtracts the row
  // max, so τ = 0.001 cannot overflow). 2B >= 2 keeps one finite term per row.
  const at::Tensor lse =
      at::logsumexp(logits.masked_fill(self, -std::numeric_limits<double>::infinity()), {-1},
                    /*keepdim=*/true);
  const at::Tensor log_prob = logits - lse;  // finite everywhere, diagonal too
  const at::Tensor m = s.repeat({1, 2, 2}).masked_fill(self, 0.0);  // [K, 2B, 2B]
  const at::Tensor weight = m.sum(-1);                              // [K, 2B]
  // A row without positive weight has numerator 0: divide by 1 there (never 0/0, whose
  // backward would be NaN even behind a where()).
  const at::Tensor safe_weight = at::where(weight > 0, weight, at::ones_like(weight));
  const at::Tensor mean_log_prob = (m * log_prob).sum(-1) / safe_weight;    // [K, 2B]
  return (-(o.temperature / o.base_temperature) * mean_log_prob).mean(-1);  // [K]
}

/// per_view_losses(), over shards of options.shard_size examples when requested.
at::Tensor sharded_losses(const at::Tensor& z1, const at::Tensor& z2, const at::Tensor& s,
                          const ContrastiveOptions& o) {
  const int64_t b = z1.size(1);
  if (o.shard_size == 0 || o.shard_size >= b) return per_view_losses(z1, z2, s, o);
  std::vector<at::Tensor> shards;
  for (int64_t start = 0; start < b; start += o.shard_size) {
    const int64_t len = std::min(o.shard_size, b - start);
    shards.push_back(per_view_losses(z1.narrow(1, start, len), z2.narrow(1, start, len),
                                     s.narrow(1, start, len).narrow(2, start, len), o));
  }
  return at::stack(shards).mean(0);
}

void check_features(const at::Tensor& a, const at::Tensor& b, int64_t rank, const char* fn,
                    const char* what) {
  if (!a.defined() || !b.defined() || a.dim() != rank || a.sizes() != b.sizes() || a.numel() == 0) {
    throw std::invalid_argument(std::string(fn) + ": the two views must be non-empty " + what +
                                " tensors of the same shape, got " + shape_text(a) + " and " +
                                shape_text(b));
  }
  if (!at::isFloatingType(a.scalar_type()) || !at::isFloatingType(b.scalar_type())) {
    throw std::invalid_argument(std::string(fn) + ": the views must be floating point");
  }
}

at::Tensor view_masks(const at::Tensor& masks, int64_t k, int64_t b, const at::Tensor& like,
                      const char* fn) {
  if (!masks.defined()) return at::eye(b, like.options()).expand({k, b, b});
  const bool ok =
      (masks.dim() == 2 && masks.size(0) == b && masks.size(1) == b) ||
      (masks.dim() == 3 && masks.size(0) == k && masks.size(1) == b && masks.size(2) == b);
  if (!ok) {
    throw std::invalid_argument(std::string(fn) + ": masks must be [K, B, B] = [" +
                                std::to_string(k) + ", " + std::to_string(b) + ", " +
                                std::to_string(b) + "] or [B, B], got " + shape_text(masks));
  }
  const at::Tensor m = masks.to(like.options());
  return m.dim() == 2 ? m.expand({k, b, b}) : m;
}

}  // namespace

at::Tensor supcon_loss(const at::Tensor& z1, const at::Tensor& z2, const at::Tensor& soft_mask,
                       const ContrastiveOptions& options) {
  constexpr const char* fn = "supcon_loss";
  check_options(options, fn);
  check_features(z1, z2, 2, fn, "[B, D]");
  const at::ScalarType dtype = compute_dtype(z1);
  const at::Tensor a = z1.to(dtype).unsqueeze(0);
  const at::Tensor b = z2.to(z1.device(), dtype).unsqueeze(0);
  const int64_t n = z1.size(0);
  if (soft_mask.defined() &&
      (soft_mask.dim() != 2 || soft_mask.size(0) != n || soft_mask.size(1) != n)) {
    throw std::invalid_argument(std::string(fn) + ": soft_mask must be [B, B] = [" +
                                std::to_string(n) + ", " + std::to_string(n) + "], got " +
                                shape_text(soft_mask));
  }
  return sharded_losses(a, b, view_masks(soft_mask, 1, n, a, fn), options).squeeze(0);
}

at::Tensor supcon_loss_per_view(const at::Tensor& p1, const at::Tensor& p2, const at::Tensor& masks,
                                const ContrastiveOptions& options) {
  constexpr const char* fn = "supcon_loss_per_view";
  check_options(options, fn);
  check_features(p1, p2, 3, fn, "[B, K, P]");
  const at::ScalarType dtype = compute_dtype(p1);
  const at::Tensor a = p1.to(dtype).transpose(0, 1);  // [K, B, P]
  const at::Tensor b = p2.to(p1.device(), dtype).transpose(0, 1);
  return sharded_losses(a, b, view_masks(masks, p1.size(1), p1.size(0), a, fn), options);
}

at::Tensor multi_view_supcon_loss(const at::Tensor& p1, const at::Tensor& p2,
                                  const at::Tensor& masks, const ContrastiveOptions& options) {
  return supcon_loss_per_view(p1, p2, masks, options).mean();
}

at::Tensor multi_view_supcon_loss(const at::Tensor& p1, const at::Tensor& p2,
                                  const std::vector<at::Tensor>& masks,
                                  const ContrastiveOptions& options) {
  if (masks.empty()) throw std::invalid_argument("multi_view_supcon_loss: no mask given");
  for (const at::Tensor& m : masks) {
    if (!m.defined() || m.sizes() != masks.front().sizes()) {
      throw std::invalid_argument("multi_view_supcon_loss: masks differ in shape: " +
                                  shape_text(masks.front()) + " and " + shape_text(m));
    }
  }
  std::vector<at::Tensor> same_device;
  for (const at::Tensor& m : masks) same_device.push_back(m.to(masks.front().device()));
  return multi_view_supcon_loss(p1, p2, at::stack(same_device), options);
}

at::Tensor token_supcon_loss(const at::Tensor& z1, const at::Tensor& z2, const at::Tensor& labels,
                             const ContrastiveOptions& options) {
  if (!labels.defined() || labels.dim() != 1 || labels.scalar_type() != at::kLong ||
      !z1.defined() || z1.dim() != 2 || labels.size(0) != z1.size(0)) {
    throw std::invalid_argument(
        "token_supcon_loss: labels must be int64 [N] with N = z1.size(0), got " +
        shape_text(labels) + " for z1 " + shape_text(z1));
  }
  const at::Tensor l = labels.to(z1.device());
  ContrastiveOptions whole = options;
  whole.shard_size = 0;
  return supcon_loss(z1, z2, l.unsqueeze(0).eq(l.unsqueeze(1)).to(at::kFloat), whole);
}

}  // namespace dialtree::losses
