// docs/build.md P3 regression: LibTorch and SentencePiece in one process. Debian's libsentencepiece
// bundles protobuf-lite 3.14 and crashed at start-up next to LibTorch's protobuf 3.21; dialtree
// links a private rebuild against the system protobuf. This binary loads both libraries, runs a
// tensor op, and trains, loads and uses a SentencePiece model. The only torch TU in tests/.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include "model/torch_api.h"

#include "data/sentencepiece_tokenizer.h"
#include "test_paths.h"

namespace dialtree::data {
namespace {

TEST(TorchAndSentencePiece, ShareOneProcess) {
  // LibTorch: a tiny matmul with a known answer.
  const torch::Tensor a = torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).reshape({2, 2});
  const torch::Tensor b = torch::tensor({5.0f, 6.0f, 7.0f, 8.0f}).reshape({2, 2});
  const torch::Tensor c = torch::matmul(a, b);
  EXPECT_FLOAT_EQ(c[0][0].item<float>(), 19.0f);
  EXPECT_FLOAT_EQ(c[0][1].item<float>(), 22.0f);
  EXPECT_FLOAT_EQ(c[1][0].item<float>(), 43.0f);
  EXPECT_FLOAT_EQ(c[1][1].item<float>(), 50.0f);

  // SentencePiece: train on the first 3000 real corpus lines, reload, encode.
  dialtree::testing::TempDir tmp;
  {
    std::ifstream in(dialtree::testing::shared_data("dialoglue/mlm_all_no_multiwoz.txt"));
    std::ofstream out(tmp.file("c.txt"));
    std::string line;
    for (int i = 0; i < 3000 && std::getline(in, line); ++i) out << line << '\n';
  }
  SentencePieceTrainOptions o;
  o.inputs = {tmp.file("c.txt")};
  o.out_dir = tmp.file("spm");
  o.vocab_size = 300;
  const auto r = train_sentencepiece(o);
  const SentencePieceTokenizer tok(r.model_path);
  EXPECT_EQ(tok.vocab_size(), 300);
  EXPECT_EQ(tok.id_to_token(2), "[CLS]");
  const std::string text = "I am still waiting on my card?";
  const std::vector<std::int32_t> ids = tok.encode(text);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(tok.decode(ids), text);

  // And the ids go into a tensor.
  const torch::Tensor t = torch::tensor(std::vector<std::int64_t>(ids.begin(), ids.end()));
  EXPECT_EQ(t.size(0), static_cast<std::int64_t>(ids.size()));
  EXPECT_EQ(t[0].item<std::int64_t>(), ids[0]);
}

}  // namespace
}  // namespace dialtree::data
