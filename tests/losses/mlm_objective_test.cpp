// MLM token-mean loss (docs/method.md §4.2) and the per-step objective (docs/method.md §4.3)
// against hand-computed values.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "losses/mlm.h"
#include "losses/objective.h"

namespace dialtree::losses {
namespace {

// logits [B=1, L=3, V=3], labels [-100, 2, 0]:
//   position 0 is ignored (its logits are extreme on purpose and must not matter);
//   position 1: logits (0, 0, 0) -> p(2) = 1/3 -> NLL ln 3;
//   position 2: logits (ln 2, 0, 0) -> p(0) = 2/(2+1+1) = 1/2 -> NLL ln 2.
//   Token mean = (ln 3 + ln 2) / 2 = ln 6 / 2 = 0.8958797.
//   d loss / d logits at position 1 = (softmax − onehot) / 2 = (1/6, 1/6, −1/3);
//   at position 2 = ((1/2, 1/4, 1/4) − (1, 0, 0)) / 2 = (−1/4, 1/8, 1/8); position 0: 0.
TEST(MlmLoss, HandComputedTokenMeanZeroTargetsAndErrors) {
  at::Tensor logits =
      at::tensor(std::vector<double>{100, -100, 5, 0, 0, 0, std::log(2.0), 0, 0}, at::kDouble)
          .reshape({1, 3, 3})
          .requires_grad_();
  const at::Tensor labels = at::tensor(std::vector<int64_t>{-100, 2, 0}).reshape({1, 3});
  const MlmLossParts parts = mlm_loss_parts(logits, labels);
  EXPECT_NEAR(parts.loss.item<double>(), std::log(6.0) / 2, 1e-12);
  EXPECT_NEAR(parts.nll_sum.item<double>(), std::log(6.0), 1e-12);
  EXPECT_EQ(parts.num_targets.item<int64_t>(), 2);
  EXPECT_EQ(parts.loss.dim(), 0);
  parts.loss.backward();
  const std::vector<double> expected_grad{0, 0, 0, 1.0 / 6, 1.0 / 6, -1.0 / 3, -0.25, 0.125, 0.125};
  const at::Tensor grad = logits.grad().reshape({-1});
  for (int64_t i = 0; i < 9; ++i) EXPECT_NEAR(grad[i].item<double>(), expected_grad[i], 1e-12);

  // [N, V] form, int32 labels, float32 and half logits.
  const at::Tensor flat = logits.detach().reshape({3, 3});
  EXPECT_NEAR(mlm_loss(flat, labels.reshape({3}).to(at::kInt)).item<double>(), std::log(6.0) / 2,
              1e-12);
  EXPECT_NEAR(mlm_loss(flat.to(at::kFloat), labels.reshape({3})).item<double>(), std::log(6.0) / 2,
              1e-6);
  const at::Tensor half = mlm_loss(flat.to(at::kHalf), labels.reshape({3}));
  EXPECT_EQ(half.scalar_type(), at::kFloat);
  EXPECT_NEAR(half.item<double>(), std::log(6.0) / 2, 1e-3);
  // Another ignore index.
  EXPECT_NEAR(
      mlm_loss(flat, at::tensor(std::vector<int64_t>{7, 2, 0}).to(at::kLong), 7).item<double>(),
      std::log(6.0) / 2, 1e-12);

  // Zero targets: loss exactly 0, gradient all zeros (no NaN).
  {
    at::Tensor z = at::randn({2, 4, 5}, at::kFloat).requires_grad_();
    const MlmLossParts none = mlm_loss_parts(z, at::full({2, 4}, -100, at::kLong));
    EXPECT_EQ(none.loss.item<double>(), 0.0);
    EXPECT_EQ(none.num_targets.item<int64_t>(), 0);
    none.loss.backward();
    ASSERT_TRUE(z.grad().defined());
    EXPECT_EQ(z.grad().abs().max().item<double>(), 0.0);
    // An empty batch as well.
    EXPECT_EQ(mlm_loss(at::zeros({0, 5}), at::zeros({0}, at::kLong)).item<double>(), 0.0);
  }

  // Errors: shape mismatch, bad dtypes, out-of-range labels.
  EXPECT_THROW(mlm_loss(flat, labels), std::invalid_argument);  // [3,3] vs [1,3]
  EXPECT_THROW(mlm_loss(flat, labels.reshape({3}).narrow(0, 0, 2)), std::invalid_argument);
  EXPECT_THROW(mlm_loss(flat.to(at::kLong), labels.reshape({3})), std::invalid_argument);
  EXPECT_THROW(mlm_loss(flat, labels.reshape({3}).to(at::kFloat)), std::invalid_argument);
  EXPECT_THROW(mlm_loss(flat, at::tensor(std::vector<int64_t>{3, 0, 0})), std::invalid_argument);
  EXPECT_THROW(mlm_loss(flat, at::tensor(std::vector<int64_t>{-1, 0, 0})), std::invalid_argument);
}

// L = [1·L_sup + 0.1·MLM_l] + [1·L_self + 0.1·MLM_u] with L_sup = 2, MLM_l = 3, L_self = 5,
// MLM_u = 7: labelled = 2.3, unlabelled = 5.7, total = 8.
TEST(Objective, CombinesPartsWithWeights) {
  at::Tensor sup = at::tensor(2.0, at::kDouble).requires_grad_();
  at::Tensor mlm_l = at::tensor(3.0, at::kDouble).requires_grad_();
  at::Tensor self = at::tensor(5.0, at::kDouble).requires_grad_();
  at::Tensor mlm_u = at::tensor(std::vector<double>{7.0}, at::kDouble).requires_grad_();  // [1]
  const Objective o = combine_objective({sup, mlm_l, self, mlm_u, at::Tensor()});
  EXPECT_NEAR(o.labelled, 2.3, 1e-12);
  EXPECT_NEAR(o.unlabelled, 5.7, 1e-12);
  EXPECT_NEAR(o.total_value, 8.0, 1e-12);
  EXPECT_EQ(o.sup, 2.0);
  EXPECT_EQ(o.mlm_labelled, 3.0);
  EXPECT_EQ(o.self, 5.0);
  EXPECT_EQ(o.mlm_unlabelled, 7.0);
  EXPECT_EQ(o.total.dim(), 0);
  EXPECT_NEAR(o.total.item<double>(), 8.0, 1e-12);
  o.total.backward();
  EXPECT_NEAR(sup.grad().item<double>(), 1.0, 1e-12);
  EXPECT_NEAR(mlm_l.grad().item<double>(), 0.1, 1e-12);
  EXPECT_NEAR(self.grad().item<double>(), 1.0, 1e-12);
  EXPECT_NEAR(mlm_u.grad().item<double>(), 0.1, 1e-12);

  // Custom weights: 0.5·2 + 0.2·3 + 2·5 + 0.2·7 = 1 + 0.6 + 10 + 1.4 = 13.
  ObjectiveWeights w;
  w.contrastive_weight = 0.5;
  w.mlm_weight = 0.2;
  w.self_weight = 2.0;
  const Objective custom = combine_objective({sup, mlm_l, self, mlm_u, at::Tensor()}, w);
  EXPECT_NEAR(custom.labelled, 1.6, 1e-12);
  EXPECT_NEAR(custom.unlabelled, 11.4, 1e-12);
  EXPECT_NEAR(custom.total.item<double>(), 13.0, 1e-12);

  // Absent parts contribute 0: labelled-only and unlabelled-only steps.
  const Objective labelled_only =
      combine_objective({sup, mlm_l, at::Tensor(), at::Tensor(), at::Tensor()});
  EXPECT_NEAR(labelled_only.total.item<double>(), 2.3, 1e-12);
  EXPECT_EQ(labelled_only.unlabelled, 0.0);
  EXPECT_EQ(labelled_only.self, 0.0);
  const Objective self_only =
      combine_objective({at::Tensor(), at::Tensor(), self, at::Tensor(), at::Tensor()});
  EXPECT_NEAR(self_only.total.item<double>(), 5.0, 1e-12);
  EXPECT_NEAR(self_only.total_value, 5.0, 1e-12);

  // The token-level tree term joins the labelled half with its own weight: L_token = 4, weight
  // 0.5 -> labelled = 2.3 + 2 = 4.3, total 10; absent (undefined) it adds nothing.
  at::Tensor token = at::tensor(4.0, at::kDouble).requires_grad_();
  ObjectiveWeights tw;
  tw.token_contrastive_weight = 0.5;
  const Objective with_token = combine_objective({sup, mlm_l, self, mlm_u, token}, tw);
  EXPECT_NEAR(with_token.labelled, 4.3, 1e-12);
  EXPECT_NEAR(with_token.total.item<double>(), 10.0, 1e-12);
  EXPECT_EQ(with_token.token_contrastive, 4.0);
  with_token.total.backward();
  EXPECT_NEAR(token.grad().item<double>(), 0.5, 1e-12);
  const Objective token_only =
      combine_objective({at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), token}, tw);
  EXPECT_NEAR(token_only.total_value, 2.0, 1e-12);
  tw.token_contrastive_weight = -1;
  EXPECT_THROW(combine_objective({sup, mlm_l, self, mlm_u, token}, tw), std::invalid_argument);

  // Errors.
  EXPECT_THROW(combine_objective({}), std::invalid_argument);
  EXPECT_THROW(combine_objective({at::ones({2}), mlm_l, self, mlm_u, at::Tensor()}),
               std::invalid_argument);
  EXPECT_THROW(combine_objective({at::ones({}, at::kLong), mlm_l, self, mlm_u, at::Tensor()}),
               std::invalid_argument);
  w.mlm_weight = -0.1;
  EXPECT_THROW(combine_objective({sup, mlm_l, self, mlm_u, at::Tensor()}, w),
               std::invalid_argument);
  w.mlm_weight = std::numeric_limits<double>::infinity();
  EXPECT_THROW(combine_objective({sup, mlm_l, self, mlm_u, at::Tensor()}, w),
               std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::losses
