// trainer/distributed: the torchrun environment variables and their errors, and the collectives
// of a real 2-rank Gloo group over 127.0.0.1 (two threads of this process, each one rank):
// bucketed gradient averaging, sums, the autograd-correct all-gather, and timeouts.
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "model/torch_api.h"

#include "common/error.h"
#include "trainer/distributed.h"
#include "trainer/launcher.h"

namespace dialtree::trainer {
namespace {

using ::testing::HasSubstr;

std::function<const char*(const char*)> env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::string env_error(const std::map<std::string, std::string>& vars) {
  try {
    rendezvous_from_env(env_of(vars));
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

TEST(RendezvousFromEnv, AbsentVariablesMeanASingleProcess) {
  EXPECT_FALSE(rendezvous_from_env(env_of({})).has_value());
  EXPECT_FALSE(rendezvous_from_env(env_of({{"MASTER_PORT", "29500"}})).has_value());
}

TEST(RendezvousFromEnv, ReadsTheTorchrunVariables) {
  const auto rz = rendezvous_from_env(env_of(
      {{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29501"}}));
  ASSERT_TRUE(rz.has_value());
  EXPECT_EQ(rz->rank, 1);
  EXPECT_EQ(rz->world_size, 4);
  EXPECT_EQ(rz->master_addr, "10.0.0.7");
  EXPECT_EQ(rz->master_port, 29501);
}

TEST(RendezvousFromEnv, BadValuesAreErrorsNamingTheVariable) {
  const std::map<std::string, std::string> ok = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  auto with = [&](const std::string& key, const std::string& value) {
    auto v = ok;
    v[key] = value;
    return v;
  };
  EXPECT_THAT(env_error(with("RANK", "2")), HasSubstr("RANK (2) must be < WORLD_SIZE (2)"));
  EXPECT_THAT(env_error(with("RANK", "-1")), HasSubstr("RANK"));
  EXPECT_THAT(env_error(with("WORLD_SIZE", "0")), HasSubstr("WORLD_SIZE"));
  EXPECT_THAT(env_error(with("WORLD_SIZE", "two")), HasSubstr("'two' is not a process count"));
  EXPECT_THAT(env_error(with("MASTER_PORT", "http")), HasSubstr("MASTER_PORT"));
  EXPECT_THAT(env_error(with("MASTER_PORT", "http")), HasSubstr("not a port number"));
  EXPECT_THAT(env_error(with("MASTER_PORT", "65536")), HasSubstr("[1, 65535]"));
  EXPECT_THAT(env_error(with("MASTER_PORT", "0")), HasSubstr("MASTER_PORT"));
  EXPECT_THAT(env_error(with("MASTER_ADDR", "")), HasSubstr("MASTER_ADDR"));
  auto missing = ok;
  missing.erase("MASTER_ADDR");
  EXPECT_THAT(env_error(missing), HasSubstr("MASTER_ADDR"));
  EXPECT_THAT(env_error(missing), HasSubstr("is not set"));
}

TEST(FreeLoopbackPort, IsAUsablePort) {
  const int port = free_loopback_port();
  EXPECT_GT(port, 0);
  EXPECT_LE(port, 65535);
}

// Runs body(group) on ranks 0 and 1 of a fresh group, one thread each; failures inside are
// reported by GoogleTest (EXPECT_* is thread-safe).
void on_two_ranks(const std::function<void(DataParallelGroup&)>& body,
                  std::int64_t bucket_cap_bytes = 25 << 20) {
  const int port = free_loopback_port();
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      DistributedOptions o;
      o.timeout = std::chrono::seconds(60);
      o.bucket_cap_bytes = bucket_cap_bytes;
      DataParallelGroup g(Rendezvous{rank, 2, "127.0.0.1", port}, o);
      EXPECT_EQ(g.rank(), rank);
      EXPECT_EQ(g.world_size(), 2);
      body(g);
    });
  }
  for (auto& t : ranks) t.join();
}

TEST(DataParallelGroup, AveragesGradientsInSeveralBuckets) {
  // Three parameters of 6, 4 and 30 floats with a 48-byte cap: two buckets, {p0, p1} (24 + 16
  // bytes) and {p2} (120 bytes, over the cap, alone). Rank r's gradient is (r + 1) * (index + 1),
  // so the mean over ranks is 1.5 * (index + 1). p1 has no gradient on either rank: it becomes 0.
  on_two_ranks(
      [](DataParallelGroup& g) {
        std::vector<torch::Tensor> params = {torch::zeros({2, 3}, torch::requires_grad()),
                                             torch::zeros({4}, torch::requires_grad()),
                                             torch::zeros({5, 6}, torch::requires_grad())};
        const double scale = g.rank() + 1;
        for (std::size_t i : {0u, 2u}) {
          params[i].mutable_grad() =
              torch::arange(1, params[i].numel() + 1, torch::kFloat32).view_as(params[i]) * scale;
        }
        g.average_gradients(params);
        for (std::size_t i : {0u, 2u}) {
          const auto want =
              torch::arange(1, params[i].numel() + 1, torch::kFloat32).view_as(params[i]) * 1.5;
          EXPECT_TRUE(torch::equal(params[i].grad(), want)) << "parameter " << i;
        }
        ASSERT_TRUE(params[1].grad().defined());
        EXPECT_EQ(params[1].grad().abs().sum().item<float>(), 0.0f);
        EXPECT_THROW(g.average_gradients({torch::zeros({2}, torch::kFloat64).requires_grad_()}),
                     std::invalid_argument);
      },
      48);
}

TEST(DataParallelGroup, SumsAndBroadcasts) {
  on_two_ranks([](DataParallelGroup& g) {
    const auto s = g.sum({1.0 + g.rank(), 0.25});
    ASSERT_EQ(s.size(), 2u);
    EXPECT_DOUBLE_EQ(s[0], 3.0);
    EXPECT_DOUBLE_EQ(s[1], 0.5);
    torch::Tensor t = torch::full({3}, static_cast<float>(10 + g.rank()));
    g.broadcast_from_rank0({t});
    EXPECT_TRUE(torch::equal(t, torch::full({3}, 10.0f)));
    g.barrier();
  });
}

// A loss whose value depends on every row of the gathered batch, non-linearly.
torch::Tensor global_loss(const torch::Tensor& rows) {
  return torch::logsumexp(torch::mm(rows, rows.t()), 1).pow(2).mean();
}

TEST(DataParallelGroup, AllGatherRowsGivesTheGlobalGradient) {
  // Rank 0 holds rows 0-1, rank 1 rows 2-4 of a [5, 3] batch (unequal sizes are padded for the
  // transfer). Each rank's gathered loss equals the one-process loss of the whole batch, and the
  // gradient reaching each rank's rows is the one-process gradient of those rows.
  torch::manual_seed(5);
  const torch::Tensor full = torch::randn({5, 3}, torch::kFloat64);
  torch::Tensor ref_in = full.clone().requires_grad_();
  const torch::Tensor ref_loss = global_loss(ref_in);
  ref_loss.backward();
  const std::vector<std::int64_t> rows = {2, 3};
  on_two_ranks([&](DataParallelGroup& g) {
    const std::int64_t begin = g.rank() == 0 ? 0 : 2;
    torch::Tensor local = full.slice(0, begin, begin + rows[g.rank()]).clone().requires_grad_();
    const torch::Tensor gathered = g.all_gather_rows(local, rows);
    ASSERT_EQ(gathered.size(0), 5);
    EXPECT_TRUE(torch::equal(gathered.detach(), full));
    const torch::Tensor loss = global_loss(gathered);
    EXPECT_NEAR(loss.item<double>(), ref_loss.item<double>(), 1e-12);
    loss.backward();
    EXPECT_TRUE(torch::allclose(local.grad(), ref_in.grad().slice(0, begin, begin + rows[g.rank()]),
                                1e-12, 1e-12));
    EXPECT_THROW(g.all_gather_rows(local, {2}), std::invalid_argument);
    EXPECT_THROW(g.all_gather_rows(local, {4, 4}), std::invalid_argument);  // neither rank's rows
  });
}

TEST(DataParallelGroup, RendezvousWithAMissingRankTimesOut) {
  // World size 2 but only rank 0 comes: the constructor must give up after ddp_timeout.
  DistributedOptions o;
  o.timeout = std::chrono::seconds(2);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    DataParallelGroup g(Rendezvous{0, 2, "127.0.0.1", free_loopback_port()}, o);
    ADD_FAILURE() << "rendezvous did not fail";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rendezvous of rank 0 of 2"));
    EXPECT_THAT(e.what(), HasSubstr("127.0.0.1:"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

TEST(DataParallelGroup, RejectsUnsupportedOptions) {
  DistributedOptions o;
  o.backend = "nccl";
  EXPECT_THROW(DataParallelGroup(Rendezvous{0, 1, "127.0.0.1", 1}, o), DataError);
  o.backend = "gloo";
  o.bucket_cap_bytes = 0;
  EXPECT_THROW(DataParallelGroup(Rendezvous{0, 1, "127.0.0.1", 1}, o), DataError);
}

}  // namespace
}  // namespace dialtree::trainer
