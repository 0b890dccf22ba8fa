// ELECTRA's replaced-token detection, discriminator side (losses/replaced_token.h): the
// corrupted input and the per-token BCE against hand-computed values.
#include <cmath>
#include <stdexcept>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "losses/replaced_token.h"

namespace dialtree::losses {
namespace {

at::Tensor ids(std::initializer_list<std::int64_t> v, std::int64_t rows) {
  return at::tensor(std::vector<std::int64_t>(v), at::kLong).reshape({rows, -1});
}

// Row 0: original [5 6 7 8], targets at 1 and 3 (masked to 3 = [MASK]).
// Row 1: original [9 10], target at 1 (the collator's random replacement 11 in the masked
// input), two padding positions (id 0). Samples in row-major target order: 6 (equals the
// original: not replaced), 4, 12.
TEST(ReplacedToken, CorruptTargetsRestoresOriginalsAndPlacesTheSamples) {
  const at::Tensor masked = ids({5, 3, 7, 3, 9, 11, 0, 0}, 2);
  const at::Tensor labels = ids({-100, 6, -100, 8, -100, 10, -100, -100}, 2);
  const at::Tensor mask = ids({1, 1, 1, 1, 1, 1, 0, 0}, 2);
  const CorruptedInput c = corrupt_targets(masked, labels, ids({6, 4, 12}, 1).reshape({3}), mask);
  EXPECT_TRUE(c.input_ids.equal(ids({5, 6, 7, 4, 9, 12, 0, 0}, 2)));
  const at::Tensor want =
      at::tensor(std::vector<std::int64_t>{0, 0, 0, 1, 0, 1, 0, 0}, at::kLong).reshape({2, 4});
  EXPECT_TRUE(c.replaced.to(at::kLong).equal(want));
  EXPECT_EQ(c.replaced.scalar_type(), at::kBool);
  // The inputs are not changed in place.
  EXPECT_TRUE(masked.equal(ids({5, 3, 7, 3, 9, 11, 0, 0}, 2)));
}

TEST(ReplacedToken, CorruptTargetsRejectsAWrongNumberOfSamplesAndBadShapes) {
  const at::Tensor masked = ids({5, 3, 7, 3}, 1);
  const at::Tensor labels = ids({-100, 6, -100, 8}, 1);
  const at::Tensor mask = ids({1, 1, 1, 1}, 1);
  EXPECT_THROW(corrupt_targets(masked, labels, ids({6}, 1).reshape({1}), mask),
               std::invalid_argument);
  EXPECT_THROW(corrupt_targets(masked, labels.reshape({4}), ids({6, 4}, 1).reshape({2}), mask),
               std::invalid_argument);
  EXPECT_THROW(corrupt_targets(masked.to(at::kInt), labels, ids({6, 4}, 1).reshape({2}), mask),
               std::invalid_argument);
}

// logits (0, ln 3, −ln 3), replaced (1, 1, 0):
//   −log σ(0) = ln 2; −log σ(ln 3) = −log(3/4) = ln(4/3); −log(1 − σ(−ln 3)) = ln(4/3).
//   Mean = (ln 2 + 2 ln(4/3)) / 3 = 0.4228; d/dx = (σ(x) − y) / 3 = (−1/6, −1/12, 1/12).
TEST(ReplacedToken, BinaryCrossEntropyIsTheHandComputedMeanWithItsGradient) {
  const at::Tensor logits =
      at::tensor({0.0, std::log(3.0), -std::log(3.0)}, at::kFloat).set_requires_grad(true);
  const at::Tensor replaced = at::tensor({1.0, 1.0, 0.0}, at::kFloat).to(at::kBool);
  const at::Tensor loss = replaced_token_loss(logits, replaced);
  EXPECT_NEAR(loss.item<double>(), (std::log(2.0) + 2 * std::log(4.0 / 3.0)) / 3, 1e-6);
  loss.backward();
  const at::Tensor g = logits.grad();
  EXPECT_NEAR(g[0].item<double>(), -1.0 / 6, 1e-6);
  EXPECT_NEAR(g[1].item<double>(), -1.0 / 12, 1e-6);
  EXPECT_NEAR(g[2].item<double>(), 1.0 / 12, 1e-6);
  // bf16 logits are scored in float32.
  EXPECT_NEAR(replaced_token_loss(at::zeros({2}, at::kBFloat16), at::ones({2})).item<double>(),
              std::log(2.0), 1e-6);
}

TEST(ReplacedToken, NoTokenGivesZeroWithAZeroGradientAndShapesAreChecked) {
  const at::Tensor logits = at::zeros({0}, at::kFloat).set_requires_grad(true);
  const at::Tensor loss = replaced_token_loss(logits, at::zeros({0}, at::kBool));
  EXPECT_EQ(loss.item<double>(), 0.0);
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  EXPECT_THROW(replaced_token_loss(at::zeros({3}), at::zeros({2})), std::invalid_argument);
  EXPECT_THROW(replaced_token_loss(at::zeros({3}, at::kLong), at::zeros({3})),
               std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::losses
