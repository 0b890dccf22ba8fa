// SPACE-2's soft-mask supervised contrastive loss (SupCon family) and its multi-view form
// (docs/method.md §4.1). With an identity mask it is NT-Xent / SimCLR, SPACE-2's self-supervised
// loss.
//
// Only <ATen/core/Tensor.h> is included here (about 1.5 s to parse, versus ~10 s for
// model/torch_api.h); at::Tensor and torch::Tensor are the same type.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace dialtree::losses {

/// Hyper-parameters of the contrastive loss (docs/method.md §4.1 defaults).
struct ContrastiveOptions {
  double temperature = 0.07;       ///< τ, > 0; logits are (z_a · z_b) / τ
  double base_temperature = 0.07;  ///< τ_base, > 0; the loss is scaled by τ / τ_base
  /// L2 normalisation divides by max(||z||, norm_eps), so an all-zero vector stays zero
  /// (docs/failure-cases.md C21). Applied in float32 or float64 (see supcon_loss()), so 1e-12 is
  /// representable.
  double norm_eps = 1e-12;
  /// 0: one loss over the whole batch. s > 0: the batch is cut into consecutive shards of s
  /// examples (the last may be smaller), each shard gets its own loss with its own sub-mask, and
  /// the shard losses are averaged with equal weight. This reproduces SPACE-2's 8-GPU
  /// DataParallel run, where each replica saw 16 of the 128 examples (docs/method.md §4.5).
  std::int64_t shard_size = 0;
};

/// Soft-mask supervised contrastive loss of one view set (docs/method.md §4.1).
///
/// Z = [normalise(z1); normalise(z2)] (2B x D); ℓ_ab = Z_a·Z_b / τ;
/// log p_ab = ℓ_ab − log Σ_{c≠a} exp ℓ_ac (log-sum-exp, self term excluded; finite for
/// τ = 0.001, docs/failure-cases.md C29); M = tile(S, 2x2) with its diagonal zeroed;
/// L = mean over the 2B anchors of −(τ/τ_base) · Σ_b M_ab log p_ab / Σ_b M_ab.
/// An anchor whose mask row sums to 0 contributes 0 (no NaN, zero gradient); it still counts in
/// the mean. It cannot happen when diag(S) = 1, because the other view of the anchor weighs 1.
/// B = 1 works (docs/failure-cases.md C35): then each anchor's only candidate is its other view,
/// loss 0.
///
/// Computation runs in float64 for double inputs and in float32 otherwise (half and bfloat16
/// inputs are upcast, so the loss is well defined under autocast); the result has that dtype.
/// @param z1 float [B, D], first dropout view (need not be normalised), B >= 1, D >= 1
/// @param z2 float [B, D], second view of the same examples, same shape and device as z1
/// @param soft_mask float [B, B], S_ij in [0, 1] with S_ii = 1 (not checked: checking would
///   cost a device sync); identity = NT-Xent, and an undefined tensor means the identity.
///   Any device and dtype; converted to z1's device and the compute dtype.
/// @return 0-d tensor on z1's device.
/// @throws std::invalid_argument on wrong ranks or shapes, non-floating inputs, or a
///   non-positive / non-finite temperature, base temperature or norm_eps, or shard_size < 0.
at::Tensor supcon_loss(const at::Tensor& z1, const at::Tensor& z2, const at::Tensor& soft_mask,
                       const ContrastiveOptions& options = {});

/// The per-view losses of SPACE-2's projection ("Subspace") head outputs: view k uses
/// p1[:, k, :], p2[:, k, :] and masks[k] in supcon_loss(); all K views are computed in one
/// batched pass.
/// @param p1 float [B, K, P], first dropout view of the K projected sub-vectors
/// @param p2 float [B, K, P], second view, same shape and device as p1
/// @param masks float [K, B, B] (one soft mask per view, docs/method.md §3.5 per-view mode) or
///   [B, B] (the same mask for every view); an undefined tensor means the identity for every
///   view, i.e. the self-supervised loss on unlabelled data
/// @return float [K] on p1's device (float64 for double inputs, else float32).
/// @throws std::invalid_argument as supcon_loss(), also if masks has K' != K views.
at::Tensor supcon_loss_per_view(const at::Tensor& p1, const at::Tensor& p2, const at::Tensor& masks,
                                const ContrastiveOptions& options = {});

/// L_sup = (1/K) Σ_k L(Z^(k), S^k) (docs/method.md §4.1): the mean of supcon_loss_per_view().
/// With an undefined `masks` this is L_self = (1/K) Σ_k L(Z^(k), I).
/// @return 0-d tensor. @throws as supcon_loss_per_view().
at::Tensor multi_view_supcon_loss(const at::Tensor& p1, const at::Tensor& p2,
                                  const at::Tensor& masks, const ContrastiveOptions& options = {});

/// As above with the K masks given separately, each float [B, B] (stacked to [K, B, B]).
/// @throws std::invalid_argument if `masks` is empty or the masks differ in shape, and as above.
at::Tensor multi_view_supcon_loss(const at::Tensor& p1, const at::Tensor& p2,
                                  const std::vector<at::Tensor>& masks,
                                  const ContrastiveOptions& options = {});

/// The token-level tree term (docs/training.md "A token-level tree term"): supcon_loss() over
/// value-mention tokens instead of examples, the S view at token level. Row i of z1 and z2 is one
/// token in the two dropout views; S_ij = 1 when tokens i and j belong to mentions of the same
/// slot (labels_i == labels_j), so an anchor's positives are its other view and every mention
/// token of the same slot, its negatives the mention tokens of other slots. One loss over all N
/// tokens (options.shard_size is ignored).
/// @param z1 float [N, D] token vectors, first view, N >= 1
/// @param z2 float [N, D], the same tokens in the second view
/// @param labels int64 [N], the slot id of each token (any values; only equality counts)
/// @return 0-d tensor (float64 for double inputs, else float32) on z1's device.
/// @throws std::invalid_argument if labels is not int64 [N], and as supcon_loss().
at::Tensor token_supcon_loss(const at::Tensor& z1, const at::Tensor& z2, const at::Tensor& labels,
                             const ContrastiveOptions& options = {});

}  // namespace dialtree::losses
