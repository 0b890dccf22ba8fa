// model/device.h: device spellings resolved on this machine, batches moved, autocast per device
// type. The CUDA cases run only where LibTorch sees a GPU (scripts/gpu-check.sh); elsewhere they
// are skipped and the CPU build's refusals are checked instead.
#include "model/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include "model/torch_api.h"

#include "common/cpu_features.h"
#include "common/error.h"
#include "model/encoder.h"
#include "serve/tiny_bundle.h"

namespace dialtree::model {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string error_of(const std::string& spec) {
  try {
    resolve_device(spec, "--device");
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(Device, CpuAndAutoResolveOnEveryMachine) {
  EXPECT_EQ(resolve_device("cpu", "--device"), torch::Device(torch::kCPU));
  const torch::Device automatic = resolve_device("auto", "--device");
  if (torch::cuda::is_available()) {
    EXPECT_EQ(automatic, torch::Device(torch::kCUDA, 0));
  } else {
    EXPECT_EQ(automatic, torch::Device(torch::kCPU));
  }
}

TEST(Device, BadSpellingsAndAbsentGpusAreDataErrorsNamingTheOrigin) {
  EXPECT_THAT(error_of("gpu"), AllOf(HasSubstr("--device"),
                                     HasSubstr("\"gpu\" is not a device: use auto, cpu, cuda")));
  if (torch::cuda::is_available()) {
    const auto n = static_cast<int>(torch::cuda::device_count());
    EXPECT_THAT(error_of("cuda:" + std::to_string(n)),
                AllOf(HasSubstr("--device"), HasSubstr("LibTorch sees " + std::to_string(n))));
  } else {
    for (const char* spec : {"cuda", "cuda:0", "cuda:3"}) {
      EXPECT_THAT(error_of(spec),
                  AllOf(HasSubstr("--device"), HasSubstr(spec), HasSubstr("use cpu or auto")))
          << spec;
    }
  }
}

TEST(Device, MovingToTheDeviceTheyAreOnKeepsTheSameTensors) {
  EncoderInputs in{torch::ones({2, 3}, torch::kInt64), torch::ones({2, 3}, torch::kInt64),
                   torch::zeros({2, 3}, torch::kInt64), torch::zeros({2, 3}, torch::kInt64),
                   torch::ones({2, 3}, torch::kInt64)};
  const EncoderInputs same = to_device(in, torch::Device(torch::kCPU), /*non_blocking=*/true);
  EXPECT_TRUE(same.input_ids.is_same(in.input_ids));
  EXPECT_TRUE(same.turn_ids.is_same(in.turn_ids));
  CollatedBatch b{in, torch::Tensor()};
  EXPECT_FALSE(to_device(b, torch::Device(torch::kCPU)).mlm_labels.defined());
  const torch::nn::Linear lin(2, 2);
  EXPECT_EQ(module_device(*lin), torch::Device(torch::kCPU));
}

TEST(Device, AutocastScopesNestAndRestoreTheCallersState) {
  ASSERT_FALSE(autocast_enabled(torch::kCPU));
  {
    AutocastScope on(true, torch::kCPU);
    EXPECT_TRUE(autocast_enabled(torch::kCPU));
    EXPECT_FALSE(autocast_enabled(torch::kCUDA));  // per device type
    {
      AutocastOff fp32(torch::kCPU);
      EXPECT_FALSE(autocast_enabled(torch::kCPU));
      {
        AutocastScope again(true, torch::kCPU);  // inside: on, and back off afterwards
        EXPECT_TRUE(autocast_enabled(torch::kCPU));
      }
      EXPECT_FALSE(autocast_enabled(torch::kCPU));
    }
    EXPECT_TRUE(autocast_enabled(torch::kCPU));
    AutocastScope nothing(false, torch::kCPU);  // a no-op
    EXPECT_TRUE(autocast_enabled(torch::kCPU));
  }
  EXPECT_FALSE(autocast_enabled(torch::kCPU));
}

TEST(Device, EffectiveBf16IsTheRequestOnCudaAndTheCpusAnswerOnTheCpu) {
  EXPECT_TRUE(effective_bf16(torch::Device(torch::kCUDA, 0), true));
  EXPECT_FALSE(effective_bf16(torch::Device(torch::kCUDA, 0), false));
  EXPECT_FALSE(effective_bf16(torch::Device(torch::kCPU), false));
  EXPECT_EQ(effective_bf16(torch::Device(torch::kCPU), true), dialtree::effective_bf16(true));
}

TEST(Cuda, EncoderForwardMatchesTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU visible to LibTorch";
  torch::manual_seed(3);
  SpaceModel cpu(serve::testing::tiny_config(/*with_intent=*/true));
  SpaceModel gpu(serve::testing::tiny_config(/*with_intent=*/true));
  {
    torch::NoGradGuard no_grad;
    const auto a = cpu->parameters();
    const auto b = gpu->parameters();
    for (std::size_t i = 0; i < a.size(); ++i) b[i].copy_(a[i]);
  }
  cpu->eval();
  gpu->eval();
  const torch::Device cuda = resolve_device("cuda", "test");
  gpu->to(cuda);
  EncoderInputs in{torch::randint(5, 20, {4, 9}, torch::kInt64), torch::ones({4, 9}, torch::kInt64),
                   torch::arange(9).repeat({4, 1}), torch::zeros({4, 9}, torch::kInt64),
                   torch::ones({4, 9}, torch::kInt64)};
  in.attention_mask.index_put_({1, torch::indexing::Slice(5)}, 0);  // one padded row
  const torch::Tensor want = cpu->forward_cls(in);
  const torch::Tensor got = gpu->forward_cls(to_device(in, cuda, true)).to(torch::kCPU);
  EXPECT_LT((got - want).abs().max().item<double>(), 1e-4);
  EXPECT_GT(want.abs().max().item<double>(), 1e-2);
}

}  // namespace
}  // namespace dialtree::model
