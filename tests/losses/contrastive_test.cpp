// SPACE-2 soft-mask supervised contrastive loss (docs/method.md §4.1): hand-computed values, the
// NT-Xent special case against an independent loop implementation, the multi-view wrapper,
// docs/failure-cases.md C21/C29/C30/C35 and a finite-difference gradient check.
#include "losses/contrastive.h"

#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace dialtree::losses {
namespace {

at::Tensor make(const std::vector<double>& values, std::vector<int64_t> shape) {
  return at::tensor(values, at::kDouble).reshape(shape).clone();
}

std::vector<double> random_values(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

/// Standard NT-Xent (SimCLR) with plain loops, written from the paper's definition: anchors are
/// the 2B views, the positive of view i of example n is the other view of n, and the softmax
/// runs over every other view. z1, z2 are row-major [B, D].
double nt_xent_reference(const std::vector<double>& z1, const std::vector<double>& z2,
                         std::size_t b, std::size_t d, double tau, double base) {
  std::vector<std::vector<double>> z;
  for (const auto* src : {&z1, &z2}) {
    for (std::size_t i = 0; i < b; ++i) {
      std::vector<double> row(src->begin() + i * d, src->begin() + (i + 1) * d);
      double norm = 0;
      for (double x : row) norm += x * x;
      norm = std::sqrt(norm);
      for (double& x : row) x /= norm;
      z.push_back(row);
    }
  }
  const std::size_t n = 2 * b;
  double total = 0;
  for (std::size_t a = 0; a < n; ++a) {
    const std::size_t positive = (a + b) % n;
    double denom = 0;
    double pos_logit = 0;
    for (std::size_t c = 0; c < n; ++c) {
      if (c == a) continue;
      double dot = 0;
      for (std::size_t k = 0; k < d; ++k) dot += z[a][k] * z[c][k];
      denom += std::exp(dot / tau);
      if (c == positive) pos_logit = dot / tau;
    }
    total += -(tau / base) * (pos_logit - std::log(denom));
  }
  return total / static_cast<double>(n);
}

// 4x2 example: B = 2 examples, D = 2, τ = 0.5, τ_base = 1 (factor τ/τ_base = 0.5).
//   z1 = [(2, 0), (0, 0.5)] -> normalised a0 = (1, 0),   a1 = (0, 1)
//   z2 = [(3, 4), (4, 3)]   -> normalised a2 = (.6, .8), a3 = (.8, .6)
//   Gram: a0·a1 = 0, a0·a2 = .6, a0·a3 = .8, a1·a2 = .8, a1·a3 = .6, a2·a3 = .96
//   logits = Gram / τ: row0 (to a1,a2,a3) = 0, 1.2, 1.6    row1 (a0,a2,a3) = 0, 1.6, 1.2
//                      row2 (a0,a1,a3) = 1.2, 1.6, 1.92    row3 (a0,a1,a2) = 1.6, 1.2, 1.92
//   S = [[1, .5], [.5, 1]]; M_ab = S[a mod 2][b mod 2] off the diagonal, so every row of M
//   sums to 2: row0 weights (a1,a2,a3) = .5, 1, .5; row1 (a0,a2,a3) = .5, .5, 1;
//   row2 (a0,a1,a3) = 1, .5, .5; row3 (a0,a1,a2) = .5, 1, .5.
//   With L0 = ln(1 + e^1.2 + e^1.6) = 2.2271231 (rows 0, 1) and
//        L2 = ln(e^1.2 + e^1.6 + e^1.92) = 2.7143045 (rows 2, 3):
//   row0: −0.5 · (.5·0 + 1·1.2 + .5·1.6 − 2·L0) / 2 = 0.5 · (L0 − 1)
//   row1: −0.5 · (.5·0 + .5·1.6 + 1·1.2 − 2·L0) / 2 = 0.5 · (L0 − 1)
//   row2: −0.5 · (1·1.2 + .5·1.6 + .5·1.92 − 2·L2) / 2 = 0.5 · (L2 − 1.48)
//   row3: −0.5 · (.5·1.6 + 1·1.2 + .5·1.92 − 2·L2) / 2 = 0.5 · (L2 − 1.48)
//   mean = (L0 + L2 − 2.48) / 4 = 0.6153569
TEST(SupConLoss, HandComputedFourByTwoAndInputHandling) {
  const at::Tensor z1 = make({2, 0, 0, 0.5}, {2, 2});
  const at::Tensor z2 = make({3, 4, 4, 3}, {2, 2});
  const at::Tensor s = make({1, 0.5, 0.5, 1}, {2, 2});
  ContrastiveOptions opts;
  opts.temperature = 0.5;
  opts.base_temperature = 1.0;
  const double l0 = std::log(1 + std::exp(1.2) + std::exp(1.6));
  const double l2 = std::log(std::exp(1.2) + std::exp(1.6) + std::exp(1.92));
  const double expected = (l0 + l2 - 2.48) / 4;
  EXPECT_NEAR(expected, 0.6153569, 1e-7);

  const at::Tensor loss = supcon_loss(z1, z2, s, opts);
  EXPECT_EQ(loss.dim(), 0);
  EXPECT_EQ(loss.scalar_type(), at::kDouble);
  EXPECT_NEAR(loss.item<double>(), expected, 1e-6);

  // Float inputs compute in float32 and return float32; half inputs are upcast to float32.
  const at::Tensor f = supcon_loss(z1.to(at::kFloat), z2.to(at::kFloat), s.to(at::kFloat), opts);
  EXPECT_EQ(f.scalar_type(), at::kFloat);
  EXPECT_NEAR(f.item<double>(), expected, 1e-5);
  const at::Tensor h = supcon_loss(z1.to(at::kHalf), z2.to(at::kHalf), s, opts);
  EXPECT_EQ(h.scalar_type(), at::kFloat);
  EXPECT_NEAR(h.item<double>(), expected, 1e-3);

  // The same example through the multi-view wrapper: K = 1 view, [B, 1, D].
  EXPECT_NEAR(
      multi_view_supcon_loss(z1.unsqueeze(1), z2.unsqueeze(1), s.unsqueeze(0), opts).item<double>(),
      expected, 1e-6);

  // Scaling a view does not matter (L2 normalisation inside); τ/τ_base scales linearly only
  // through the prefactor when τ is fixed.
  EXPECT_NEAR(supcon_loss(z1 * 7, z2 * 0.01, s, opts).item<double>(), expected, 1e-6);
  ContrastiveOptions half_base = opts;
  half_base.base_temperature = 0.5;
  EXPECT_NEAR(supcon_loss(z1, z2, s, half_base).item<double>(), 2 * expected, 1e-6);

  // Bad inputs.
  EXPECT_THROW(supcon_loss(z1, z2.narrow(0, 0, 1), s, opts), std::invalid_argument);
  EXPECT_THROW(supcon_loss(z1, z2, make({1, 0, 0, 1, 0, 0}, {2, 3}), opts), std::invalid_argument);
  EXPECT_THROW(supcon_loss(z1.to(at::kLong), z2.to(at::kLong), s, opts), std::invalid_argument);
  EXPECT_THROW(supcon_loss(z1.reshape({4}), z2.reshape({4}), s, opts), std::invalid_argument);
  ContrastiveOptions bad = opts;
  bad.temperature = 0;
  EXPECT_THROW(supcon_loss(z1, z2, s, bad), std::invalid_argument);
  bad = opts;
  bad.base_temperature = std::nan("");
  EXPECT_THROW(supcon_loss(z1, z2, s, bad), std::invalid_argument);
  bad = opts;
  bad.shard_size = -1;
  EXPECT_THROW(supcon_loss(z1, z2, s, bad), std::invalid_argument);
}

// The token-level tree term (docs/training.md "A token-level tree term") on the same four rows:
// two tokens in two dropout views. Same slot (labels 5, 5): S is all ones, so every row of M
// sums to 3: row0 −0.5·(0 + 1.2 + 1.6 − 3·L0)/3, row1 the same, rows 2 and 3
// −0.5·(1.2 + 1.6 + 1.92 − 3·L2)/3, mean = (L0 + L2 − 7.52/3) / 4 = 0.6086902
// Different slots (labels 1, 2): S = I, NT-Xent (the loop reference). shard_size is ignored.
TEST(TokenSupConLoss, SameSlotTokensArePositivesOthersNegatives) {
  const at::Tensor z1 = make({2, 0, 0, 0.5}, {2, 2});
  const at::Tensor z2 = make({3, 4, 4, 3}, {2, 2});
  ContrastiveOptions opts;
  opts.temperature = 0.5;
  opts.base_temperature = 1.0;
  opts.shard_size = 1;  // would give each token its own loss in supcon_loss(); ignored here
  const double l0 = std::log(1 + std::exp(1.2) + std::exp(1.6));
  const double l2 = std::log(std::exp(1.2) + std::exp(1.6) + std::exp(1.92));
  const at::Tensor same = token_supcon_loss(z1, z2, at::tensor({5, 5}, at::kLong), opts);
  EXPECT_EQ(same.dim(), 0);
  EXPECT_NEAR(same.item<double>(), (l0 + l2 - 7.52 / 3) / 4, 1e-9);
  EXPECT_NEAR(same.item<double>(), 0.6086902, 1e-7);
  const double nt = nt_xent_reference({2, 0, 0, 0.5}, {3, 4, 4, 3}, 2, 2, 0.5, 1.0);
  EXPECT_NEAR(token_supcon_loss(z1, z2, at::tensor({1, 2}, at::kLong), opts).item<double>(), nt,
              1e-9);
  // Only equality counts: labels 7 and -3 are two slots as well.
  EXPECT_NEAR(token_supcon_loss(z1, z2, at::tensor({7, -3}, at::kLong), opts).item<double>(), nt,
              1e-9);
  // Labels must be int64 [N].
  EXPECT_THROW(token_supcon_loss(z1, z2, at::tensor({5, 5}, at::kInt), opts),
               std::invalid_argument);
  EXPECT_THROW(token_supcon_loss(z1, z2, at::tensor({5, 5, 5}, at::kLong), opts),
               std::invalid_argument);
  EXPECT_THROW(token_supcon_loss(z1, z2, at::Tensor(), opts), std::invalid_argument);
}

// S = I reduces to NT-Xent; the multi-view wrapper averages the per-view losses; shards average
// per-shard losses.
TEST(SupConLoss, IdentityMaskIsNtXentAndMultiViewAverages) {
  std::mt19937 rng(7);
  const std::size_t b = 5, d = 3;
  const std::vector<double> v1 = random_values(b * d, rng);
  const std::vector<double> v2 = random_values(b * d, rng);
  const at::Tensor z1 = make(v1, {5, 3});
  const at::Tensor z2 = make(v2, {5, 3});
  for (const double tau : {0.07, 0.5, 2.0}) {
    ContrastiveOptions opts;
    opts.temperature = tau;
    const double reference = nt_xent_reference(v1, v2, b, d, tau, opts.base_temperature);
    EXPECT_NEAR(supcon_loss(z1, z2, at::eye(5, at::kDouble), opts).item<double>(), reference,
                1e-9 * std::max(1.0, std::abs(reference)))
        << "tau " << tau;
    // An undefined mask means the identity.
    EXPECT_NEAR(supcon_loss(z1, z2, at::Tensor(), opts).item<double>(), reference,
                1e-9 * std::max(1.0, std::abs(reference)));
  }

  // Multi-view: K = 3 views of P = 4, per-view soft masks.
  const int64_t k = 3, p = 4;
  const at::Tensor p1 = make(random_values(b * k * p, rng), {5, 3, 4});
  const at::Tensor p2 = make(random_values(b * k * p, rng), {5, 3, 4});
  std::vector<at::Tensor> masks;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int64_t view = 0; view < k; ++view) {
    at::Tensor m = make(random_values(b * b, rng), {5, 5}).abs().clamp_max(1.0);
    m = ((m + m.t()) / 2).fill_diagonal_(1.0);
    masks.push_back(m);
  }
  const at::Tensor per_view = supcon_loss_per_view(p1, p2, at::stack(masks));
  ASSERT_EQ(per_view.sizes().vec(), std::vector<int64_t>{3});
  double mean = 0;
  for (int64_t view = 0; view < k; ++view) {
    const double single =
        supcon_loss(p1.select(1, view), p2.select(1, view), masks[view]).item<double>();
    EXPECT_NEAR(per_view[view].item<double>(), single, 1e-12);
    mean += single / k;
  }
  EXPECT_NEAR(multi_view_supcon_loss(p1, p2, at::stack(masks)).item<double>(), mean, 1e-12);
  EXPECT_NEAR(multi_view_supcon_loss(p1, p2, masks).item<double>(), mean, 1e-12);
  // One [B, B] mask shared by all views; undefined = L_self with identity masks.
  EXPECT_NEAR(supcon_loss_per_view(p1, p2, masks[1])[2].item<double>(),
              supcon_loss(p1.select(1, 2), p2.select(1, 2), masks[1]).item<double>(), 1e-12);
  double self_mean = 0;
  for (int64_t view = 0; view < k; ++view) {
    self_mean +=
        supcon_loss(p1.select(1, view), p2.select(1, view), at::Tensor()).item<double>() / k;
  }
  EXPECT_NEAR(multi_view_supcon_loss(p1, p2, at::Tensor()).item<double>(), self_mean, 1e-12);
  EXPECT_THROW(supcon_loss_per_view(p1, p2, at::stack(masks).narrow(0, 0, 2)),
               std::invalid_argument);
  EXPECT_THROW(multi_view_supcon_loss(p1, p2, std::vector<at::Tensor>{}), std::invalid_argument);
  EXPECT_THROW(
      multi_view_supcon_loss(p1, p2, std::vector<at::Tensor>{masks[0], masks[0].narrow(0, 0, 4)}),
      std::invalid_argument);

  // Shards of 2 examples over B = 5: shards {0,1}, {2,3}, {4}, averaged with equal weight.
  ContrastiveOptions sharded;
  sharded.shard_size = 2;
  double shard_mean = 0;
  for (const auto& [start, len] :
       std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 2}, {4, 1}}) {
    shard_mean +=
        supcon_loss(p1.select(1, 0).narrow(0, start, len), p2.select(1, 0).narrow(0, start, len),
                    masks[0].narrow(0, start, len).narrow(1, start, len))
            .item<double>() /
        3;
  }
  EXPECT_NEAR(supcon_loss(p1.select(1, 0), p2.select(1, 0), masks[0], sharded).item<double>(),
              shard_mean, 1e-12);
  EXPECT_NEAR(supcon_loss_per_view(p1, p2, at::stack(masks), sharded)[0].item<double>(), shard_mean,
              1e-12);
  sharded.shard_size = 5;  // >= B: one shard
  EXPECT_NEAR(supcon_loss(p1.select(1, 0), p2.select(1, 0), masks[0], sharded).item<double>(),
              supcon_loss(p1.select(1, 0), p2.select(1, 0), masks[0]).item<double>(), 1e-12);
}

// C29 (τ = 0.01 and 0.001), C35 (batch of 1), C21 (all-zero vector), empty mask row.
TEST(SupConLoss, LowTemperatureBatchOfOneZeroVectorAndEmptyRow) {
  // Worked example: B = 3 one-hot examples, both views identical (positives identical,
  // negatives orthogonal), S = I. Anchor loss = (τ/τ_base)·ln(1 + 4·e^{−1/τ}) ≈ 0: at τ = 0.001
  // a naive exp(1/τ) = e^1000 overflows even in double.
  for (const auto dtype : {at::kFloat, at::kDouble}) {
    for (const double tau : {0.01, 0.001}) {
      ContrastiveOptions opts;
      opts.temperature = tau;
      at::Tensor z1 = at::eye(3, dtype).requires_grad_();
      at::Tensor z2 = at::eye(3, dtype).requires_grad_();
      const at::Tensor loss = supcon_loss(z1, z2, at::eye(3, dtype), opts);
      const double expected = (tau / opts.base_temperature) * std::log1p(4 * std::exp(-1 / tau));
      EXPECT_TRUE(std::isfinite(loss.item<double>()));
      EXPECT_NEAR(loss.item<double>(), expected, 1e-6) << "tau " << tau;
      loss.backward();
      EXPECT_TRUE(at::isfinite(z1.grad()).all().item<bool>());
      EXPECT_TRUE(at::isfinite(z2.grad()).all().item<bool>());

      // A hard case at τ = 0.001: random directions, logits up to ±1000.
      std::mt19937 rng(3);
      const at::Tensor r1 = make(random_values(8 * 4, rng), {8, 4}).to(dtype);
      const at::Tensor r2 = make(random_values(8 * 4, rng), {8, 4}).to(dtype);
      const at::Tensor hard = supcon_loss(r1, r2, at::Tensor(), opts);
      EXPECT_TRUE(std::isfinite(hard.item<double>()));
      EXPECT_GE(hard.item<double>(), 0.0);
    }
  }

  // C35: B = 1. The only candidate of each anchor is its other view: p = 1, loss 0.
  {
    at::Tensor z1 = make({0.3, -1.0, 2.0}, {1, 3}).requires_grad_();
    at::Tensor z2 = make({1.0, 1.0, 1.0}, {1, 3}).requires_grad_();
    const at::Tensor loss = supcon_loss(z1, z2, at::ones({1, 1}, at::kDouble));
    EXPECT_EQ(loss.dim(), 0);
    EXPECT_NEAR(loss.item<double>(), 0.0, 1e-12);
    loss.backward();
    EXPECT_TRUE(at::isfinite(z1.grad()).all().item<bool>());
    EXPECT_EQ(z1.grad().sizes(), z1.sizes());
    const at::Tensor per_view =
        supcon_loss_per_view(at::ones({1, 10, 4}), at::ones({1, 10, 4}), at::ones({10, 1, 1}));
    EXPECT_EQ(per_view.sizes().vec(), std::vector<int64_t>{10});
    EXPECT_NEAR(per_view.abs().max().item<double>(), 0.0, 1e-7);
  }

  // C21: an all-zero vector normalises to zero, so its logits are 0: finite loss and gradient.
  {
    at::Tensor z1 = make({0, 0, 1, 0}, {2, 2}).requires_grad_();
    at::Tensor z2 = make({0, 0, 0, 1}, {2, 2}).requires_grad_();
    for (const auto dtype : {at::kDouble, at::kFloat, at::kHalf}) {
      const at::Tensor loss = supcon_loss(z1.to(dtype), z2.to(dtype), at::Tensor());
      EXPECT_TRUE(std::isfinite(loss.item<double>()));
      if (dtype == at::kDouble) {
        loss.backward();
        EXPECT_TRUE(at::isfinite(z1.grad()).all().item<bool>());
        EXPECT_TRUE(at::isfinite(z2.grad()).all().item<bool>());
      }
    }
    // Example 0's anchors see logits 0 to everything: p = 1/3 for the partner. Example 1's
    // anchors: partner logit (e1·e2)/τ = 0 too, others 0 -> also ln 3 each. Loss = (τ/τb)·ln 3.
    EXPECT_NEAR(supcon_loss(z1, z2, at::Tensor()).item<double>(), std::log(3.0), 1e-12);
  }

  // A mask row with no positive weight (diag(S) = 0 for example 0, nothing else) contributes 0,
  // with a finite gradient.
  {
    at::Tensor z1 = make({1, 0, 0, 1}, {2, 2}).requires_grad_();
    at::Tensor z2 = make({0.6, 0.8, 0.8, 0.6}, {2, 2}).requires_grad_();
    const at::Tensor s = make({0, 0, 0, 1}, {2, 2});
    const at::Tensor loss = supcon_loss(z1, z2, s);
    // Only the anchors of example 1 (rows 1 and 3) count; the mean is still over 4 anchors.
    const at::Tensor only_row = supcon_loss(z1, z2, at::eye(2, at::kDouble));
    EXPECT_TRUE(std::isfinite(loss.item<double>()));
    EXPECT_LT(loss.item<double>(), only_row.item<double>());
    loss.backward();
    EXPECT_TRUE(at::isfinite(z1.grad()).all().item<bool>());
    EXPECT_TRUE(at::isfinite(z2.grad()).all().item<bool>());
  }
}

// C30: the same text twice in one batch. B = 3: examples 0 and 1 are the same text (identical
// vectors e1 in both views), example 2 is orthogonal (e2). Per anchor, with ε = e^{−1/τ}:
//  - anchors of examples 0/1 (4 of them) see 3 other copies of e1 (logit 1/τ) and 2 copies of
//    e2 (logit 0): every copy has p = 1/(3 + 2ε).
//    S = I (the duplicate is a negative): the positive is the other view only ->
//      (τ/τ_base)·ln(3 + 2ε) ≈ (τ/τ_base)·ln 3.
//    S_01 = S_10 = 1 (duplicates marked positive): 3 positives of weight 1, each log p =
//      −ln(3 + 2ε) -> the same value (τ/τ_base)·ln(3 + 2ε).
//  - anchors of example 2 (2 of them): (τ/τ_base)·ln(1 + 4ε) ≈ 0 in both cases.
//  Loss = (τ/τ_base)·[4·ln(3 + 2ε) + 2·ln(1 + 4ε)] / 6 ≈ (τ/τ_base)·(2/3)·ln 3.
// The "ln 2 instead of 0" of docs/failure-cases.md C30 is the one-directional InfoNCE (B x B
// logits, view-1 queries against view-2 keys): a duplicate key ties the true key, p = 1/2, loss ln
// 2, and masking makes it 0. In this symmetric 2B form the duplicate shows up in both views (hence
// 3 tied candidates and ln 3), and SPACE-2's SupCon puts the log inside the positive average, so
// its floor with |P| tied positives is ln |P|, not 0: marking the duplicate changes the value at
// this point not at all. What masking changes is the direction: with S = I the loss falls when
// the duplicates move apart (the model is taught to separate the same text), with the duplicate
// marked positive this point is the minimum and moving apart raises the loss.
TEST(SupConLoss, DuplicateTextInBatchC30) {
  ContrastiveOptions opts;
  opts.temperature = 0.01;
  const double eps = std::exp(-1 / opts.temperature);
  const double scale = opts.temperature / opts.base_temperature;
  const double expected = scale * (4 * std::log(3 + 2 * eps) + 2 * std::log(1 + 4 * eps)) / 6;
  EXPECT_NEAR(expected, scale * 2.0 / 3.0 * std::log(3.0), 1e-12);

  const at::Tensor s_identity = at::eye(3, at::kDouble);
  const at::Tensor s_duplicate = make({1, 1, 0, 1, 1, 0, 0, 0, 1}, {3, 3});
  // Example 1 moved off example 0 by angle θ, in the e1/e3 plane (orthogonal to example 2).
  const auto batch = [](double theta) {
    return make({1, 0, 0, std::cos(theta), 0, std::sin(theta), 0, 1, 0}, {3, 3});
  };
  const at::Tensor same = batch(0.0);
  EXPECT_NEAR(supcon_loss(same, same, s_identity, opts).item<double>(), expected, 1e-9);
  EXPECT_NEAR(supcon_loss(same, same, s_duplicate, opts).item<double>(), expected, 1e-9);
  // Double precision, τ = 0.07 too.
  ContrastiveOptions base;
  const double e7 = std::exp(-1 / base.temperature);
  EXPECT_NEAR(supcon_loss(same, same, s_duplicate, base).item<double>(),
              (4 * std::log(3 + 2 * e7) + 2 * std::log(1 + 4 * e7)) / 6, 1e-12);

  const at::Tensor apart = batch(0.3);
  const double identity_same = supcon_loss(same, same, s_identity, opts).item<double>();
  const double identity_apart = supcon_loss(apart, apart, s_identity, opts).item<double>();
  const double dup_same = supcon_loss(same, same, s_duplicate, opts).item<double>();
  const double dup_apart = supcon_loss(apart, apart, s_duplicate, opts).item<double>();
  EXPECT_LT(identity_apart, identity_same);  // S = I pushes the duplicates apart
  EXPECT_GT(dup_apart, dup_same);            // marked duplicates are pulled together
  // Far apart (orthogonal), S = I reaches ≈ 0 as in the C29 worked example.
  const at::Tensor orthogonal = batch(1.5707963267948966);
  EXPECT_NEAR(supcon_loss(orthogonal, orthogonal, s_identity, opts).item<double>(), 0.0, 1e-12);
}

// Analytical gradient (autograd) against central finite differences, float64.
TEST(SupConLoss, GradientMatchesFiniteDifferences) {
  std::mt19937 rng(11);
  const int64_t b = 3, k = 2, p = 4;
  at::Tensor p1 = make(random_values(b * k * p, rng), {3, 2, 4});
  at::Tensor p2 = make(random_values(b * k * p, rng), {3, 2, 4});
  at::Tensor masks = make(random_values(k * b * b, rng), {2, 3, 3}).abs().clamp_max(1.0);
  masks = (masks + masks.transpose(1, 2)) / 2;
  for (int64_t view = 0; view < k; ++view) masks[view].fill_diagonal_(1.0);
  ContrastiveOptions opts;
  opts.temperature = 0.2;

  for (const int64_t shard : {int64_t{0}, int64_t{2}}) {
    opts.shard_size = shard;
    const std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> f =
        [&](const at::Tensor& a, const at::Tensor& c) {
          return multi_view_supcon_loss(a, c, masks, opts);
        };
    at::Tensor a = p1.clone().requires_grad_();
    at::Tensor c = p2.clone().requires_grad_();
    f(a, c).backward();
    const at::Tensor ga = a.grad().clone();
    const at::Tensor gc = c.grad().clone();
    const double h = 1e-6;
    for (int64_t which = 0; which < 2; ++which) {
      const at::Tensor base = which == 0 ? p1 : p2;
      const at::Tensor analytic = (which == 0 ? ga : gc).reshape({-1});
      for (int64_t i = 0; i < base.numel(); ++i) {
        at::Tensor plus = base.clone();
        at::Tensor minus = base.clone();
        plus.view({-1})[i].add_(h);
        minus.view({-1})[i].sub_(h);
        const double fp = which == 0 ? f(plus, p2).item<double>() : f(p1, plus).item<double>();
        const double fm = which == 0 ? f(minus, p2).item<double>() : f(p1, minus).item<double>();
        const double numeric = (fp - fm) / (2 * h);
        EXPECT_NEAR(analytic[i].item<double>(), numeric, 1e-7)
            << "input " << which << " element " << i << " shard " << shard;
      }
    }
  }
  // The mask gets no gradient path back into the features, and a gradient flows into S only if
  // it requires one (it is a constant in SPACE-2).
  EXPECT_FALSE(masks.requires_grad());
}

}  // namespace
}  // namespace dialtree::losses
