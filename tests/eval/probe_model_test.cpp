// eval/probe_model: frozen [CLS] vectors of a tiny bundle (the intent fine-tuning input, order
// kept, train mode restored) and run_probe on a DialoGLUE-shaped folder (both protocols, val,
// the embedding dump, errors).
#include <filesystem>
#include <fstream>

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "model/torch_api.h"
#include <nlohmann/json.hpp>

#include "common/cpu_features.h"
#include "common/error.h"
#include "data/tokenizer_factory.h"
#include "eval/intent_inputs.h"
#include "eval/probe_model.h"
#include "eval/tag_mapping.h"
#include "model/bundle.h"
#include "model/collate.h"
#include "model/encoder.h"
#include "expect_error.h"
#include "test_paths.h"
#include "tiny_intent.h"

namespace dialtree::eval {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing_tiny::kLabels;
using testing_tiny::kTexts;

class ProbeModel : public ::testing::Test {
 protected:
  void SetUp() override {
    testing_tiny::save_tiny_bundle(tmp_.file("tok"), tmp_.file("bundle"), 5);
    bundle_ = model::load_bundle(tmp_.file("bundle"));

    // hwu: train = all 8 texts of each intent, train_10 = the first 5, val the 6th and 7th,
    // test the 8th (and the 1st again).
    data_ = tmp_.path() / "dialoglue";
    fs::create_directories(data_ / "hwu");
    std::ofstream(data_ / "hwu" / "categories.json") << nlohmann::json(kLabels).dump();
    auto csv = [&](const std::string& name, int from, int to) {
      std::ofstream out(data_ / "hwu" / name);
      out << "text,category\n";
      for (int k = 0; k < 3; ++k) {
        for (int i = from; i < to; ++i) out << kTexts[k][i] << "," << kLabels[k] << "\n";
      }
    };
    csv("train.csv", 0, 8);
    csv("train_10.csv", 0, 5);
    csv("val.csv", 5, 7);
    csv("test.csv", 7, 8);
    std::ofstream(data_ / "hwu" / "test.csv", std::ios::app) << kTexts[1][0] << ",weather\n";
  }

  testing::TempDir tmp_;
  model::LoadedBundle bundle_;
  fs::path data_;
};

TEST_F(ProbeModel, EmbedsFrozenClsVectorsOfTheFineTuningInputInInputOrder) {
  const std::vector<std::string> texts = {"my card has not arrived", "hi",
                                          "i need a table for four people tonight please", "ok"};
  model::SpaceModelImpl& net = *bundle_.model;
  net.train();  // as inside a pretraining loop: restored afterwards, dropout off meanwhile
  const ProbeMatrix x = embed_texts(net, *bundle_.tokenizer, texts, 3, 64);
  EXPECT_TRUE(net.is_training());
  ASSERT_EQ(x.rows(), 4);
  ASSERT_EQ(x.cols(), 32);
  net.eval();
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto one = serialize_texts({texts[i]}, *bundle_.tokenizer, net.config(), 64);
    const torch::Tensor want = net.forward_cls(model::collate(one)).contiguous();
    for (int j = 0; j < 32; ++j) {
      EXPECT_NEAR(x(static_cast<Eigen::Index>(i), j), want[0][j].item<double>(), 1e-5)
          << "text " << i;
    }
  }
  // Not normalised.
  EXPECT_GT(std::abs(x.row(0).norm() - 1), 1e-3);
  // bf16 autocast (where the CPU has it): the same vectors up to bf16 rounding, and the caller's
  // autocast state is restored.
  if (cpu_has_native_bf16()) {
    const ProbeMatrix b = embed_texts(net, *bundle_.tokenizer, texts, 3, 64, true);
    EXPECT_LE((b - x).cwiseAbs().maxCoeff(), 0.1 * x.cwiseAbs().maxCoeff());
    EXPECT_GT((b - x).cwiseAbs().maxCoeff(), 0.0);
  }
  EXPECT_FALSE(at::autocast::is_cpu_enabled());
  EXPECT_THROW(embed_texts(net, *bundle_.tokenizer, texts, 0, 64), std::invalid_argument);
}

// Mean pooling: each text alone (no padding), the plain mean of forward()'s token rows 1..;
// batched with texts of other lengths, padding must not enter the mean.
TEST_F(ProbeModel, MeanPoolingAveragesTheTokenStatesWithoutPaddingOrCls) {
  const std::vector<std::string> texts = {"my card has not arrived", "hi",
                                          "i need a table for four people tonight please"};
  model::SpaceModelImpl& net = *bundle_.model;
  const ProbeMatrix x =
      embed_texts(net, *bundle_.tokenizer, texts, 3, 64, false, ProbePooling::Mean);
  const ProbeMatrix cls = embed_texts(net, *bundle_.tokenizer, texts, 3, 64);
  ASSERT_EQ(x.rows(), 3);
  net.eval();
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto one = serialize_texts({texts[i]}, *bundle_.tokenizer, net.config(), 64);
    const torch::Tensor h = net.forward(model::collate(one));  // [1, L+1, H]
    const torch::Tensor want = h[0].slice(0, 1).mean(0);
    for (int j = 0; j < 32; ++j) {
      EXPECT_NEAR(x(static_cast<Eigen::Index>(i), j), want[j].item<double>(), 1e-5) << "text " << i;
    }
    EXPECT_GT((x.row(static_cast<Eigen::Index>(i)) - cls.row(static_cast<Eigen::Index>(i)))
                  .cwiseAbs()
                  .maxCoeff(),
              1e-3);
  }
  EXPECT_EQ(parse_probe_pooling("mean"), ProbePooling::Mean);
  EXPECT_EQ(probe_pooling_name(ProbePooling::Cls), "cls");
  EXPECT_THROW(parse_probe_pooling("max"), std::invalid_argument);
}

TEST_F(ProbeModel, EmbedsEachWordsFirstSubWordStateAsTheTaggerReadsIt) {
  const std::vector<TaggingExample> xs = {
      {{"book", "a", "table", "for", "four"}, {"O", "O", "O", "O", "B-people"}, ""},
      {{"hi"}, {"O"}, ""}};
  model::SpaceModelImpl& net = *bundle_.model;
  const WordVectors v = embed_words(net, *bundle_.tokenizer, xs, 1, 64);
  ASSERT_EQ(v.rows.size(), 2u);
  ASSERT_EQ(v.words.rows(), 6);
  EXPECT_EQ(v.rows[0], (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(v.rows[1], (std::vector<std::int64_t>{5}));
  net.eval();
  torch::NoGradGuard no_grad;
  const TaggedInput in =
      encode_words(xs[0].words, *bundle_.tokenizer, single_turn(net.config(), 64));
  const torch::Tensor states = net.forward(model::collate({in.input}));  // [1, L+1, H]
  for (std::size_t w = 0; w < 5; ++w) {
    for (int j = 0; j < 32; ++j) {
      EXPECT_NEAR(v.words(static_cast<Eigen::Index>(w), j),
                  states[0][in.first_row[w]][j].item<double>(), 1e-5)
          << "word " << w;
    }
  }
  for (int j = 0; j < 32; ++j) EXPECT_NEAR(v.cls(0, j), states[0][0][j].item<double>(), 1e-5);
  // A word cut by left truncation has no vector (max_utt_len 2 keeps the last two sub-words).
  const WordVectors cut = embed_words(net, *bundle_.tokenizer, xs, 2, 2);
  EXPECT_EQ(cut.rows[0][0], -1);
  EXPECT_GE(cut.rows[0][4], 0);
}

TEST_F(ProbeModel, RunProbeGivesTheTokenProbeRowOfATaggingTask) {
  const std::string data = testing::shared_data("dialoglue");
  ProbeOptions o;
  o.split = "val";
  o.threads = 1;
  const ProbeReport r =
      run_probe(*bundle_.model, *bundle_.tokenizer, data, {"restaurant8k"}, o);
  EXPECT_TRUE(r.rows.empty());
  ASSERT_EQ(r.tag_rows.size(), 1u);
  const TagProbeRow& row = r.tag_rows[0];
  const TaggingTask task = load_tagging_task(data, "restaurant8k", Setting::Few);
  EXPECT_EQ(row.task, "restaurant8k");
  EXPECT_EQ(row.metric, "slot F1");
  EXPECT_EQ(row.split, "val");
  EXPECT_EQ(row.train_examples, task.train.size());
  EXPECT_EQ(row.eval_examples, task.val.size());
  EXPECT_EQ(row.dim, 32);
  EXPECT_GE(row.score, 0.0);
  EXPECT_LE(row.score, 1.0);
  // The row is the torch-free probe of the same vectors: nothing else enters it.
  const TagMapper mapper(data, task);
  o.bf16 = r.options.bf16;
  const TagProbeRow again = probe_tagging(
      task, embed_words(*bundle_.model, *bundle_.tokenizer, task.train, o.batch_size, 64, o.bf16),
      task.val,
      embed_words(*bundle_.model, *bundle_.tokenizer, task.val, o.batch_size, 64, o.bf16), "val",
      mapper, mapper.gold_submission(task.val), o);
  EXPECT_DOUBLE_EQ(again.score, row.score);
  EXPECT_DOUBLE_EQ(again.tag_accuracy, row.tag_accuracy);
  const std::string table = probe_table(r);
  EXPECT_THAT(table, HasSubstr("| restaurant8k | val | slot F1 |"));
  EXPECT_EQ(r.to_json().at("tag_rows").size(), 1u);
  EXPECT_THAT(testing::error_of<std::invalid_argument>([&] {
                run_probe(*bundle_.model, *bundle_.tokenizer, data, {"atis"}, o);
              }),
              HasSubstr("the tagging tasks restaurant8k, dstc8, top"));
}

TEST_F(ProbeModel, RunProbeScoresBothProtocolsAndDumpsTheVectors) {
  ProbeOptions o;
  o.mteb_draws = 3;
  o.mteb_per_label = 2;
  o.batch_size = 4;
  o.bf16 = false;  // compared with fp32 vectors below
  o.dump_dir = tmp_.file("dump");
  const ProbeReport r = run_probe(*bundle_.model, *bundle_.tokenizer, data_.string(), {"hwu"}, o);
  ASSERT_EQ(r.rows.size(), 2u);
  const ProbeRow& few = r.rows[0];
  EXPECT_EQ(few.task, "hwu");
  EXPECT_EQ(few.protocol, ProbeProtocol::DialoglueFew);
  EXPECT_EQ(few.split, "test");
  EXPECT_EQ(few.train_examples, 15u);
  EXPECT_EQ(few.eval_examples, 4u);
  EXPECT_EQ(few.runs, 1);
  EXPECT_EQ(few.dim, 32);
  EXPECT_EQ(few.lr_accuracy.std, 0.0);
  for (const double v : {few.lr_accuracy.mean, few.lr_standardized_accuracy.mean,
                         few.ncc_accuracy.mean, few.lr_macro_f1.mean}) {
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 1.0);
  }
  EXPECT_GT(few.effective_rank, 1.0);
  EXPECT_LE(few.effective_rank, 3.0);  // 4 rows: at most 3 after centring
  const ProbeRow& mteb = r.rows[1];
  EXPECT_EQ(mteb.protocol, ProbeProtocol::Mteb);
  EXPECT_EQ(mteb.runs, 3);
  EXPECT_EQ(mteb.train_examples, 6u);
  EXPECT_DOUBLE_EQ(mteb.effective_rank, few.effective_rank);  // the same scored vectors

  // The dump: the scored split, train_10, the drawn train rows and the draws.
  const EmbeddingFile test = read_embeddings(tmp_.file("dump/hwu/test"));
  EXPECT_EQ(test.labels, (std::vector<int>{0, 1, 2, 1}));
  EXPECT_EQ(test.label_names, kLabels);
  const ProbeMatrix want =
      embed_texts(*bundle_.model, *bundle_.tokenizer,
                  {kTexts[0][7], kTexts[1][7], kTexts[2][7], kTexts[1][0]}, 2, 64);
  EXPECT_LE((test.x - want).cwiseAbs().maxCoeff(), 1e-5);
  EXPECT_EQ(read_embeddings(tmp_.file("dump/hwu/train_10")).labels.size(), 15u);
  const EmbeddingFile train = read_embeddings(tmp_.file("dump/hwu/train"));
  const auto draws = nlohmann::json::parse(std::ifstream(tmp_.file("dump/hwu/mteb_draws.json")));
  ASSERT_EQ(draws.at("draws").size(), 3u);
  for (const auto& d : draws.at("draws")) {
    EXPECT_EQ(d.size(), 6u);
    for (const auto& i : d) EXPECT_LT(i.get<std::size_t>(), train.labels.size());
  }

  // Model selection on val (bf16 where the CPU has it); the same vectors give the same figures
  // every time.
  o.bf16 = true;
  o.split = "val";
  o.dump_dir.clear();
  o.protocols = {ProbeProtocol::DialoglueFew};
  const ProbeReport v = run_probe(*bundle_.model, *bundle_.tokenizer, data_.string(), {"hwu"}, o);
  ASSERT_EQ(v.rows.size(), 1u);
  EXPECT_EQ(v.options.bf16, cpu_has_native_bf16());
  EXPECT_EQ(v.rows[0].split, "val");
  EXPECT_EQ(v.rows[0].eval_examples, 6u);
  const ProbeReport v2 = run_probe(*bundle_.model, *bundle_.tokenizer, data_.string(), {"hwu"}, o);
  EXPECT_EQ(v2.rows[0].lr_accuracy.mean, v.rows[0].lr_accuracy.mean);
  EXPECT_EQ(v2.rows[0].lr_standardized_accuracy.mean, v.rows[0].lr_standardized_accuracy.mean);
  EXPECT_THAT(probe_table(v), HasSubstr("| hwu | dialoglue-few (val) |"));

  // Errors: before anything is embedded or loaded.
  try {
    run_probe(*bundle_.model, *bundle_.tokenizer, data_.string(), {"hwu", "atis"}, o);
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown task 'atis'"));
  }
  EXPECT_THROW(run_probe(tmp_.file("no-bundle"), data_.string(), {"hwu"}, o), DataError);
  const ProbeReport b = run_probe(tmp_.file("bundle"), data_.string(), {"hwu"}, o);
  EXPECT_EQ(b.model, tmp_.file("bundle"));
  EXPECT_EQ(b.rows[0].lr_accuracy.mean, v.rows[0].lr_accuracy.mean);
  // from_scratch_seed: the same architecture re-initialised (the no-pretraining row), the
  // same for the same seed, another model than the bundle's, recorded in the report.
  o.from_scratch_seed = 7;
  const ProbeReport s1 = run_probe(tmp_.file("bundle"), data_.string(), {"hwu"}, o);
  const ProbeReport s2 = run_probe(tmp_.file("bundle"), data_.string(), {"hwu"}, o);
  EXPECT_EQ(s1.rows[0].effective_rank, s2.rows[0].effective_rank);
  EXPECT_NE(s1.rows[0].effective_rank, b.rows[0].effective_rank);
  EXPECT_EQ(s1.to_json().at("options").at("from_scratch_seed"), 7);
}

}  // namespace
}  // namespace dialtree::eval
