// `dialtree serve` and `dialtree embed` as a user runs them: the real binary on a free loopback
// port, environment twins of flags, the same vectors as the offline command (1e-5), flag errors
// with exit status 2, and SIGTERM draining a request in flight before exit 0.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include "model/torch_api.h"

#include "common/malloc_info.h"
#include "process_util.h"
#include "serve/server.h"
#include "test_data.h"
#include "test_paths.h"
#include "tiny_bundle.h"

namespace dialtree::serve {
namespace {

using json = nlohmann::json;
using dialtree::testing::kSanitizerBuild;
using dialtree::testing::TempDir;
using namespace dialtree::testing::process;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using namespace std::chrono_literals;

/// Waits until the server logged its port and /health is 200; returns the port (0 on failure).
int wait_until_ready(const TempDir& io) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  const std::regex listening("listening on http://127\\.0\\.0\\.1:(\\d+)");
  int port = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string err = slurp(io.file("stderr"));
    if (port == 0 && std::regex_search(err, m, listening)) port = std::stoi(m[1]);
    if (port != 0) {
      httplib::Client c("127.0.0.1", port);
      auto h = c.Get("/health");
      if (h && h->status == 200) return port;
    }
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "server not ready; stderr:\n" << slurp(io.file("stderr"));
  return 0;
}

std::vector<std::vector<float>> read_jsonl_vectors(const std::string& text) {
  std::vector<std::vector<float>> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line).get<std::vector<float>>());
  return out;
}

class ServeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(binary())) << binary() << " is missing";
    bundle_ = serve::testing::make_tiny_bundle(tmp_, false);
  }
  TempDir tmp_;
  std::string bundle_;
};

TEST_F(ServeCli, ServerVectorsEqualTheOfflineEmbedCommand) {
  spit(tmp_.file("texts.txt"), "hello\ni lost my card\nwhere is the bank\n");
  const Result offline =
      run({"embed", "--model", bundle_, "--input", tmp_.file("texts.txt")}, tmp_.path().string());
  ASSERT_EQ(offline.status, 0) << offline.err;
  const auto want = read_jsonl_vectors(offline.out);
  ASSERT_EQ(want.size(), 3u);
  ASSERT_EQ(want[0].size(), 32u);

  TempDir io;
  // Two inference workers (docs/serving.md "Inference workers"): the same vectors.
  const pid_t pid = start({"serve", "--model", bundle_, "--port", "0", "--inference-workers", "2"},
                          tmp_.path().string(), io);
  ChildGuard guard(pid);
  const int port = wait_until_ready(io);
  ASSERT_NE(port, 0);
  httplib::Client c("127.0.0.1", port);
  auto res = c.Post("/v1/embeddings",
                    R"({"model":"bundle","input":["hello","i lost my card","where is the bank"]})",
                    "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json o = json::parse(res->body);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto got = o["data"][i]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), 32u);
    for (std::size_t d = 0; d < 32; ++d) EXPECT_NEAR(got[d], want[i][d], 1e-5) << i << "," << d;
  }
  ::kill(pid, SIGTERM);
  guard.release();
  const Result r = finish(pid, io);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("\"max_batch_tokens\":16384"));  // effective config logged
  EXPECT_THAT(r.err, HasSubstr("inference: 2 worker(s)"));
}

TEST_F(ServeCli, EnvironmentTwinsSetFlagsAndSigtermDrainsARequestInFlight) {
  ::setenv("DIALTREE_MAX_CLIENT_BATCH_SIZE", "1", 1);
  ::setenv("DIALTREE_MAX_WAIT_MS", "1500", 1);
  TempDir io;
  const pid_t pid = start({"serve", "--model", bundle_, "--port", "0"}, tmp_.path().string(), io);
  ::unsetenv("DIALTREE_MAX_CLIENT_BATCH_SIZE");
  ::unsetenv("DIALTREE_MAX_WAIT_MS");
  ChildGuard guard(pid);
  const int port = wait_until_ready(io);
  ASSERT_NE(port, 0);
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(20, 0);
  auto two = c.Post("/embed", R"({"inputs":["a","b"]})", "application/json");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->status, 413);
  const json info = json::parse(c.Get("/info")->body);
  EXPECT_EQ(info["max_client_batch_size"], 1);
  // The executable runs on jemalloc (flat RSS under load); this test binary does not. A
  // sanitizer build links no jemalloc: the sanitizer's runtime owns malloc (cli/CMakeLists.txt).
  if (kSanitizerBuild) {
    EXPECT_EQ(info["allocator"].get<std::string>(), "glibc");
  } else {
    // jemalloc's own decay: only `train` and `eval dialoglue` keep freed pages (docs/build.md
    // P13).
    EXPECT_THAT(info["allocator"].get<std::string>(), StartsWith("jemalloc 5."));
    EXPECT_THAT(info["allocator"].get<std::string>(), EndsWith(", dirty_decay_ms 10000"));
  }
  EXPECT_EQ(dialtree::malloc_implementation(), "glibc");
  EXPECT_FALSE(dialtree::release_free_memory());  // nothing to ask glibc

  // A lone request waits 1.5 s in the batcher; SIGTERM arrives meanwhile.
  int status = 0;
  std::thread client([&] {
    httplib::Client c2("127.0.0.1", port);
    c2.set_read_timeout(20, 0);
    auto res = c2.Post("/embed", R"({"inputs":"hello"})", "application/json");
    status = res ? res->status : -1;
  });
  // SIGTERM once the input waits in the batcher (a fixed sleep raced a busy machine).
  {
    httplib::Client probe("127.0.0.1", port);
    const auto queued_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string m;
    while (m.find("dialtree_queue_size 1\n") == std::string::npos &&
           std::chrono::steady_clock::now() < queued_by) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const auto res = probe.Get("/metrics");
      m = res ? res->body : "";
    }
    EXPECT_THAT(m, HasSubstr("dialtree_queue_size 1\n"));
  }
  ::kill(pid, SIGTERM);
  client.join();
  EXPECT_EQ(status, 200);
  guard.release();
  const Result r = finish(pid, io);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("received SIGTERM"));
}

TEST_F(ServeCli, BadFlagsAndBadInputLinesExitWithStatus2) {
  const std::string cwd = tmp_.path().string();
  Result r = run({"serve", "--model", bundle_, "--max-request-bytes", "0"}, cwd);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--max-request-bytes"));
  r = run({"serve", "--model", bundle_, "--num-threads", "100000"}, cwd);  // C27
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--num-threads"));
  // A bad value from an environment twin names the variable, not only the flag.
  ::setenv("DIALTREE_PORT", "abc", 1);
  r = run({"serve", "--model", bundle_}, cwd);
  ::unsetenv("DIALTREE_PORT");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("DIALTREE_PORT=abc (the environment twin of --port)"));
  r = run({"serve", "--model", bundle_, "--max-input-length", "20000"}, cwd);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--max-batch-tokens"));
  // An empty API key would serve without authentication (docs/failure-cases.md B11).
  r = run({"serve", "--model", bundle_, "--api-key", "", "--port", "0"}, cwd);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--api-key is set but empty"));
  EXPECT_THAT(r.err, Not(HasSubstr("listening")));
  ::setenv("DIALTREE_API_KEY", "", 1);
  r = run({"serve", "--model", bundle_, "--port", "0"}, cwd);
  ::unsetenv("DIALTREE_API_KEY");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("DIALTREE_API_KEY is set but empty"));
  // No bundle folder: bad usage, said before the port is bound.
  r = run({"serve", "--model", tmp_.file("missing"), "--port", "0"}, cwd);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("no model bundle folder at '" + tmp_.file("missing") + "'"));
  EXPECT_THAT(r.err, Not(HasSubstr("listening")));
  // A folder with a config.json but no weights fails in the background load: status 1.
  std::filesystem::create_directories(tmp_.file("config-only"));
  std::filesystem::copy_file(std::filesystem::path(bundle_) / "config.json",
                             tmp_.file("config-only") + "/config.json");
  r = run({"serve", "--model", tmp_.file("config-only"), "--port", "0"}, cwd);
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot load model"));

  // embed ran a --max-batch-tokens smaller than --max-input-length anyway (B14); serve refuses.
  spit(tmp_.file("one.txt"), "hello\n");
  r = run({"embed", "--model", bundle_, "--input", tmp_.file("one.txt"), "--max-batch-tokens", "1"},
          cwd);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--max-input-length: 256 exceeds --max-batch-tokens 1: one input "
                               "must fit one batch"));

  spit(tmp_.file("bad.txt"), "hello\n\nworld\n");
  r = run({"embed", "--model", bundle_, "--input", tmp_.file("bad.txt")}, cwd);
  EXPECT_EQ(r.status, 2);
  // The field is named once (a break test found "field 'text': text: ...", 2026-12-03).
  EXPECT_THAT(r.err, HasSubstr("line 2: field 'text': an empty string (give some text)"));
  spit(tmp_.file("bad.jsonl"), "\"hello\"\n{\"turns\":[{\"role\":\"bot\",\"text\":\"x\"}]}\n");
  r = run(
      {"embed", "--model", bundle_, "--input", tmp_.file("bad.jsonl"), "--input-format", "jsonl"},
      cwd);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("line 2: field 'input.turns[0].role': role must be"));
}

TEST_F(ServeCli, ADeviceThatIsNotThereStopsServeAndEmbedWithStatus2) {
  // docs/gpu.md: a bad spelling, from the flag or its environment twin, and a GPU that this
  // machine or this LibTorch does not have, stop the command before a port is bound.
  const std::string cwd = tmp_.path().string();
  Result r = run({"serve", "--model", bundle_, "--port", "0", "--device", "gpu"}, cwd);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--device: \"gpu\" is not a device: use auto, cpu, cuda"));
  ::setenv("DIALTREE_DEVICE", "cuda:99", 1);
  r = run({"serve", "--model", bundle_, "--port", "0"}, cwd);
  ::unsetenv("DIALTREE_DEVICE");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("\"cuda:99\""));
  EXPECT_THAT(r.err, Not(HasSubstr("listening")));
  spit(tmp_.file("one.txt"), "hello\n");
  r = run({"embed", "--model", bundle_, "--input", tmp_.file("one.txt"), "--device", "cuda:99"},
          cwd);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("\"cuda:99\""));
  // eval dialoglue: --device / DIALTREE_DEVICE come before the key=value overrides, so a typed
  // device=... wins and is checked, and a bad flag value is blamed on the flag (at parse time, as
  // every --device).
  const std::string data = dialtree::testing::shared_data("dialoglue");
  const std::vector<std::string> eval = {"eval",       "dialoglue", "--model", bundle_,
                                         "--tasks",    "banking",   "--out",   tmp_.file("ev"),
                                         "--data-dir", data};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = eval;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  r = run(with({"--device", "gpu"}), cwd);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--device: \"gpu\" is not a device"));
  // The same value from the environment is blamed on the variable, in a group's command too.
  ::setenv("DIALTREE_DEVICE", "gpu", 1);
  r = run(with({}), cwd);
  ::unsetenv("DIALTREE_DEVICE");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("DIALTREE_DEVICE=gpu (the environment twin of --device)"));
  ::setenv("DIALTREE_DEVICE", "cpu", 1);
  r = run(with({"device=gpu"}), cwd);
  ::unsetenv("DIALTREE_DEVICE");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("override 'device=gpu'"));
  r = run(with({"--device", "cpu", "device=cuda:99"}), cwd);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("\"cuda:99\""));
  // cpu always works, and gives the same vector as the default (auto = cpu without a GPU).
  r = run({"embed", "--model", bundle_, "--input", tmp_.file("one.txt"), "--device", "cpu"}, cwd);
  EXPECT_EQ(r.status, 0) << r.err;
  const Result automatic = run({"embed", "--model", bundle_, "--input", tmp_.file("one.txt")}, cwd);
  EXPECT_EQ(automatic.status, 0) << automatic.err;
  if (!torch::cuda::is_available()) {
    EXPECT_EQ(r.out, automatic.out);
  }
  EXPECT_THAT(r.out, HasSubstr("["));
}

// embed declares its flags as serve does: every one has its DIALTREE_* twin, and the flag wins.
TEST_F(ServeCli, EmbedFlagsHaveEnvironmentTwinsAndTheFlagWins) {
  const std::string cwd = tmp_.path().string();
  spit(tmp_.file("two.txt"), "hello\ni lost my card\n");
  ::setenv("DIALTREE_DIMENSIONS", "4", 1);
  ::setenv("DIALTREE_INPUT", tmp_.file("two.txt").c_str(), 1);
  Result r = run({"embed", "--model", bundle_}, cwd);
  auto vectors = read_jsonl_vectors(r.out);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(vectors.size(), 2u);
  EXPECT_EQ(vectors[0].size(), 4u);
  r = run({"embed", "--model", bundle_, "--dimensions", "8"}, cwd);
  ::unsetenv("DIALTREE_DIMENSIONS");
  ::unsetenv("DIALTREE_INPUT");
  ASSERT_EQ(r.status, 0) << r.err;
  vectors = read_jsonl_vectors(r.out);
  ASSERT_EQ(vectors.size(), 2u);
  EXPECT_EQ(vectors[0].size(), 8u);
  // A bad value in the environment is refused like the flag's, naming the variable.
  ::setenv("DIALTREE_INPUT_FORMAT", "csv", 1);
  r = run({"embed", "--model", bundle_, "--input", tmp_.file("two.txt")}, cwd);
  ::unsetenv("DIALTREE_INPUT_FORMAT");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("DIALTREE_INPUT_FORMAT=csv"));
  // Ranges are declared in the same list: --dimensions 0 gave empty vectors and -3 an error about
  // the hidden size; a count of 0 from the environment is refused like the flag's.
  const std::vector<std::string> embed_two = {"embed", "--model", bundle_, "--input",
                                              tmp_.file("two.txt")};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = embed_two;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  r = run(with({"--dimensions", "0"}), cwd);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--dimensions: must be >= 1, got 0"));
  EXPECT_EQ(r.out, "");
  r = run(with({"--dimensions", "-3"}), cwd);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--dimensions: must be >= 1, got -3"));
  ::setenv("DIALTREE_BATCH_SIZE", "0", 1);
  r = run(embed_two, cwd);
  ::unsetenv("DIALTREE_BATCH_SIZE");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--batch-size: must be >= 1, got 0"));
  r = run(with({"--max-input-length", "2"}), cwd);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--max-input-length: must be >= 3 (one token and two role "
                               "markers), got 2"));
}

}  // namespace
}  // namespace dialtree::serve
