// model/kernels.h: the threaded dropout and batched matrix product the encoder uses.
#include <stdexcept>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include "model/torch_api.h"

#include "model/kernels.h"

namespace dialtree::model {
namespace {

TEST(Dropout, DropsAboutPAndScalesTheRestByOneOverOneMinusP) {
  torch::manual_seed(1);
  const torch::Tensor x = torch::ones({1000, 1000});
  const torch::Tensor y = dropout_threads(x, 0.1, true);
  const double zero_fraction = y.eq(0).to(torch::kDouble).mean().item<double>();
  // Binomial(1e6, 0.1): standard deviation 3e-4; 5 sigma.
  EXPECT_NEAR(zero_fraction, 0.1, 1.5e-3);
  const torch::Tensor kept = y.masked_select(y.ne(0));
  EXPECT_TRUE(torch::allclose(kept, torch::full_like(kept, 1.0 / 0.9)));
  // Unbiased: E[y] = x.
  EXPECT_NEAR(y.mean().item<double>(), 1.0, 3e-3);
  // Rows are not copies of each other (the counter runs over the whole tensor).
  EXPECT_FALSE(torch::equal(y[0], y[1]));
}

TEST(Dropout, FollowsTorchsGeneratorAndIsIdentityWhenOff) {
  const torch::Tensor x = torch::randn({64, 33});
  torch::manual_seed(7);
  const torch::Tensor a = dropout_threads(x, 0.3, true);
  const torch::Tensor b = dropout_threads(x, 0.3, true);
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(dropout_threads(x, 0.3, true), a));  // same seed, same mask
  EXPECT_FALSE(torch::equal(a, b));                             // the generator advanced
  EXPECT_TRUE(torch::equal(dropout_threads(x, 0.3, false), x));
  EXPECT_TRUE(torch::equal(dropout_threads(x, 0.0, true), x));
  EXPECT_THROW(dropout_threads(x, 1.0, true), std::invalid_argument);
  EXPECT_THROW(dropout_threads(x, -0.1, true), std::invalid_argument);
  // The mask does not depend on the thread count.
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  torch::manual_seed(7);
  const torch::Tensor one_thread = dropout_threads(x, 0.3, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one_thread, a));
}

TEST(Dropout, GradientIsTheSameMaskAndBf16Works) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({8, 16}, torch::requires_grad());
  const torch::Tensor y = dropout_threads(x, 0.5, true);
  y.sum().backward();
  // d(sum y)/dx = mask: 0 where dropped, 2 where kept.
  EXPECT_TRUE(torch::equal(x.grad(), y.ne(0).to(torch::kFloat) * 2.0));
  const torch::Tensor h = torch::ones({4, 4}, torch::kBFloat16);
  const torch::Tensor hy = dropout_threads(h, 0.5, true);
  EXPECT_EQ(hy.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(hy.eq(0).logical_or(hy.eq(2)).all().item<bool>());
  // Non-contiguous input keeps its logical shape.
  const torch::Tensor t = torch::ones({6, 5}).t();
  EXPECT_EQ(dropout_threads(t, 0.2, true).sizes(), t.sizes());
}

TEST(BmmThreads, EqualsBmmForwardAndBackwardWithTransposedViews) {
  torch::manual_seed(5);
  const torch::Tensor a = torch::randn({6, 5, 7});
  const torch::Tensor b = torch::randn({6, 9, 7});  // used transposed: [6, 7, 9]
  const torch::Tensor a1 = a.clone().requires_grad_(), b1 = b.clone().requires_grad_();
  const torch::Tensor a2 = a.clone().requires_grad_(), b2 = b.clone().requires_grad_();
  const torch::Tensor g = torch::randn({6, 5, 9});
  const torch::Tensor ours = bmm_threads(a1, b1.transpose(1, 2));
  const torch::Tensor ref = torch::bmm(a2, b2.transpose(1, 2));
  EXPECT_TRUE(torch::allclose(ours, ref, 1e-5, 1e-5));
  (ours * g).sum().backward();
  (ref * g).sum().backward();
  EXPECT_TRUE(torch::allclose(a1.grad(), a2.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(b1.grad(), b2.grad(), 1e-5, 1e-5));
  // Other dtypes take torch::matmul.
  const torch::Tensor ad = torch::randn({3, 4, 2}, torch::kDouble),
                      bd = torch::randn({3, 2, 5}, torch::kDouble);
  EXPECT_TRUE(torch::allclose(bmm_threads(ad, bd), torch::bmm(ad, bd)));
  EXPECT_THROW(bmm_threads(torch::randn({2, 3, 4}), torch::randn({2, 5, 6})),
               std::invalid_argument);
  EXPECT_THROW(bmm_threads(torch::randn({3, 4}), torch::randn({4, 3})), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::model
