// model/hf_interop: the HF BERT rename table, import-hf and export (docs/hf-interop.md).
//
// The tiny checkpoints are written here (deterministic values); the reference numbers of
// ImportHf.ForwardMatchesIndependentReference come from tests/fixtures/hf/make_reference.py, a
// plain-torch BERT forward that reads the checkpoint with its own safetensors parser.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "model/torch_api.h"
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_util.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/tokenizer_factory.h"
#include "model/bundle.h"
#include "model/hf_interop.h"
#include "model/safetensors.h"
#include "test_paths.h"

namespace dialtree::model {
namespace {

namespace fs = std::filesystem;
using dialtree::testing::TempDir;
using ::testing::HasSubstr;

constexpr std::int64_t kH = 8, kF = 16, kLayers = 2, kVocab = 30, kPositions = 16;

/// 30 entries: [PAD], [unused0..13] (ids 1..14), [UNK] 15, [CLS] 16, [SEP] 17, [MASK] 18, words.
std::string tiny_vocab() {
  std::string v = "[PAD]\n";
  for (int k = 0; k < 14; ++k) v += "[unused" + std::to_string(k) + "]\n";
  return v +
         "[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\nhow\nare\nyou\nbook\na\ntable\n##s\n.\n?\n";
}

/// Deterministic values: tensor number k, element i. LayerNorm gains near 1, vectors and
/// matrices smooth but different per tensor.
torch::Tensor fill(std::vector<std::int64_t> shape, int k, bool gain) {
  torch::Tensor t = torch::arange(c10::multiply_integers(shape), torch::kFloat64);
  t = gain ? 1.0 + 0.1 * torch::sin(0.5 * t + k) : 0.3 * torch::sin(0.37 * t + 0.71 * k + 0.2);
  return t.to(torch::kFloat32).view(shape);
}

/// An HF BertForPreTraining checkpoint of the tiny shape, in BertForPreTraining names with
/// weight/bias LayerNorms (the canonical form), plus NSP, pooler, tied decoder and position ids.
NamedTensors tiny_pretraining_tensors() {
  NamedTensors t;
  int k = 0;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape) {
    const bool gain = name.size() > 16 && name.substr(name.size() - 16) == "LayerNorm.weight";
    t.emplace_back(name, fill(std::move(shape), k++, gain));
  };
  add("bert.embeddings.word_embeddings.weight", {kVocab, kH});
  add("bert.embeddings.position_embeddings.weight", {kPositions, kH});
  add("bert.embeddings.token_type_embeddings.weight", {2, kH});
  add("bert.embeddings.LayerNorm.weight", {kH});
  add("bert.embeddings.LayerNorm.bias", {kH});
  for (int n = 0; n < kLayers; ++n) {
    const std::string p = "bert.encoder.layer." + std::to_string(n) + ".";
    for (const char* s : {"query", "key", "value"}) {
      add(p + "attention.self." + s + ".weight", {kH, kH});
      add(p + "attention.self." + s + ".bias", {kH});
    }
    add(p + "attention.output.dense.weight", {kH, kH});
    add(p + "attention.output.dense.bias", {kH});
    add(p + "attention.output.LayerNorm.weight", {kH});
    add(p + "attention.output.LayerNorm.bias", {kH});
    add(p + "intermediate.dense.weight", {kF, kH});
    add(p + "intermediate.dense.bias", {kF});
    add(p + "output.dense.weight", {kH, kF});
    add(p + "output.dense.bias", {kH});
    add(p + "output.LayerNorm.weight", {kH});
    add(p + "output.LayerNorm.bias", {kH});
  }
  add("bert.pooler.dense.weight", {kH, kH});
  add("bert.pooler.dense.bias", {kH});
  add("cls.predictions.transform.dense.weight", {kH, kH});
  add("cls.predictions.transform.dense.bias", {kH});
  add("cls.predictions.transform.LayerNorm.weight", {kH});
  add("cls.predictions.transform.LayerNorm.bias", {kH});
  add("cls.predictions.bias", {kVocab});
  add("cls.seq_relationship.weight", {2, kH});
  add("cls.seq_relationship.bias", {2});
  t.emplace_back("cls.predictions.decoder.weight", t[0].second.clone());  // tied
  t.emplace_back("bert.embeddings.position_ids", torch::arange(kPositions).view({1, -1}));
  return t;
}

/// The naming variants of docs/hf-interop.md "The rename table", applied to canonical names.
enum class Variant { kCanonical, kLegacyTf, kBertModel };

NamedTensors in_variant(const NamedTensors& canonical, Variant v) {
  NamedTensors out;
  for (auto [name, t] : canonical) {
    if (v == Variant::kLegacyTf) {
      for (auto [from, to] :
           {std::pair<std::string, std::string>{"LayerNorm.weight", "LayerNorm.gamma"},
            {"LayerNorm.bias", "LayerNorm.beta"}}) {
        const auto at = name.find(from);
        if (at != std::string::npos) name.replace(at, from.size(), to);
      }
    } else if (v == Variant::kBertModel) {
      if (name.rfind("cls.", 0) == 0) continue;  // BertModel has no pretraining heads
      if (name.rfind("bert.", 0) == 0) name = name.substr(5);
    }
    out.emplace_back(name, t);
  }
  return out;
}

nlohmann::json tiny_hf_config() {
  return {{"architectures", {"BertForPreTraining"}},
          {"attention_probs_dropout_prob", 0.1},
          {"gradient_checkpointing", false},
          {"hidden_act", "gelu"},
          {"hidden_dropout_prob", 0.1},
          {"hidden_size", kH},
          {"initializer_range", 0.02},
          {"intermediate_size", kF},
          {"layer_norm_eps", 1e-12},
          {"max_position_embeddings", kPositions},
          {"model_type", "bert"},
          {"num_attention_heads", 2},
          {"num_hidden_layers", kLayers},
          {"pad_token_id", 0},
          {"position_embedding_type", "absolute"},
          {"transformers_version", "4.6.0.dev0"},
          {"type_vocab_size", 2},
          {"use_cache", true},
          {"vocab_size", kVocab}};
}

/// Writes an HF folder: config.json, model.safetensors, vocab.txt, tokenizer_config.json.
void write_hf_folder(const fs::path& dir, const NamedTensors& tensors,
                     const nlohmann::json& config = tiny_hf_config()) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  std::ofstream(dir / "vocab.txt") << tiny_vocab();
  std::ofstream(dir / "tokenizer_config.json") << R"({"do_lower_case": true})";
  save_safetensors((dir / "model.safetensors").string(), tensors, {{"format", "pt"}});
}

std::string import_error(const fs::path& from, const fs::path& out, const HfImportOptions& o = {}) {
  try {
    import_hf(from.string(), out.string(), o);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

EncoderInputs reference_inputs() {
  EncoderInputs in;
  in.input_ids = torch::tensor({16, 19, 20, 28, 17, 16, 24, 25, 26, 0}, torch::kInt64).view({2, 5});
  in.role_ids = torch::tensor({0, 0, 0, 0, 0, 0, 1, 1, 1, 0}, torch::kInt64).view({2, 5});
  in.attention_mask = torch::tensor({1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, torch::kInt64).view({2, 5});
  in.position_ids = torch::arange(5).repeat({2, 1});
  in.turn_ids = torch::zeros({2, 5}, torch::kInt64);
  return in;
}

void expect_near(const torch::Tensor& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.numel(), static_cast<std::int64_t>(want.size()));
  const torch::Tensor g = got.to(torch::kFloat64).contiguous();
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(g[i].item<double>(), want[i], tol) << "element " << i;
  }
}

// ---------------------------------------------------------------------------------------------

TEST(HfRenameTable, EveryNamingVariant) {
  struct Case {
    const char* hf;
    HfTensorAction action;
    const char* target;
  };
  const Case cases[] = {
      // bert. prefix kept; BertModel names get it.
      {"bert.encoder.layer.0.attention.self.query.weight", HfTensorAction::kLoad,
       "bert.encoder.layer.0.attention.self.query.weight"},
      {"encoder.layer.11.intermediate.dense.bias", HfTensorAction::kLoad,
       "bert.encoder.layer.11.intermediate.dense.bias"},
      {"embeddings.word_embeddings.weight", HfTensorAction::kLoad,
       "bert.embeddings.word_embeddings.weight"},
      // TF-era gamma / beta, with and without the prefix, in the MLM head too.
      {"bert.embeddings.LayerNorm.gamma", HfTensorAction::kLoad,
       "bert.embeddings.LayerNorm.weight"},
      {"embeddings.LayerNorm.beta", HfTensorAction::kLoad, "bert.embeddings.LayerNorm.bias"},
      {"encoder.layer.3.output.LayerNorm.gamma", HfTensorAction::kLoad,
       "bert.encoder.layer.3.output.LayerNorm.weight"},
      {"cls.predictions.transform.LayerNorm.beta", HfTensorAction::kLoad,
       "cls.predictions.transform.LayerNorm.bias"},
      {"bert.encoder.layer.1.attention.output.LayerNorm.weight", HfTensorAction::kLoad,
       "bert.encoder.layer.1.attention.output.LayerNorm.weight"},
      // Buffers, ties and dropped heads.
      {"bert.embeddings.position_ids", HfTensorAction::kIgnore, "bert.embeddings.position_ids"},
      {"embeddings.position_ids", HfTensorAction::kIgnore, "bert.embeddings.position_ids"},
      {"cls.predictions.decoder.weight", HfTensorAction::kTiedDecoder,
       "bert.embeddings.word_embeddings.weight"},
      {"cls.predictions.decoder.bias", HfTensorAction::kTiedBias, "cls.predictions.bias"},
      {"cls.seq_relationship.weight", HfTensorAction::kDrop, "cls.seq_relationship.weight"},
      {"bert.pooler.dense.weight", HfTensorAction::kDrop, "bert.pooler.dense.weight"},
      {"pooler.dense.bias", HfTensorAction::kDrop, "bert.pooler.dense.bias"},
      {"classifier.weight", HfTensorAction::kDrop, "classifier.weight"},
      // dialtree's own names pass through (export side files).
      {"bert.embeddings.turn_embeddings.weight", HfTensorAction::kLoad,
       "bert.embeddings.turn_embeddings.weight"},
      {"projection.dense.weight", HfTensorAction::kLoad, "projection.dense.weight"},
      {"cls.predictions.bias", HfTensorAction::kLoad, "cls.predictions.bias"},
  };
  for (const Case& c : cases) {
    const HfRename r = rename_hf_tensor(c.hf);
    EXPECT_EQ(r.action, c.action) << c.hf;
    EXPECT_EQ(r.target, c.target) << c.hf;
    const bool explained = r.action == HfTensorAction::kIgnore || r.action == HfTensorAction::kDrop;
    EXPECT_EQ(r.reason.empty(), !explained) << c.hf;
  }
}

TEST(HfRenameTable, AllVariantsOfOneCheckpointMapToTheSameTensors) {
  const NamedTensors canonical = tiny_pretraining_tensors();
  const HfTensorMapping a = map_hf_tensors(canonical, "a");
  const HfTensorMapping b = map_hf_tensors(in_variant(canonical, Variant::kLegacyTf), "b");
  const HfTensorMapping c = map_hf_tensors(in_variant(canonical, Variant::kBertModel), "c");
  // 5 embeddings + 16 per layer + 5 MLM head; pooler, NSP, decoder, position_ids not loaded.
  ASSERT_EQ(a.tensors.size(), 5u + 16u * kLayers + 5u);
  ASSERT_EQ(b.tensors.size(), a.tensors.size());
  ASSERT_EQ(c.tensors.size(), a.tensors.size() - 5u);  // BertModel: no MLM head
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(b.tensors[i].first, a.tensors[i].first);
    EXPECT_TRUE(torch::equal(b.tensors[i].second, a.tensors[i].second)) << a.tensors[i].first;
    if (i < c.tensors.size()) {
      EXPECT_EQ(c.tensors[i].first, a.tensors[i].first);
      EXPECT_TRUE(torch::equal(c.tensors[i].second, a.tensors[i].second));
    }
  }
  // Notes: pooler x2, NSP x2 dropped, decoder tied, position_ids ignored.
  EXPECT_EQ(a.notes.size(), 6u);
  EXPECT_EQ(c.notes.size(), 3u);  // pooler x2, position_ids
}

TEST(HfRenameTable, CollisionsAndBrokenTiesAreErrors) {
  auto error_of = [](const NamedTensors& t) -> std::string {
    try {
      map_hf_tensors(t, "ckpt.safetensors");
    } catch (const DataError& e) {
      return e.what();
    }
    return "no error";
  };
  const torch::Tensor v = torch::ones({kH});
  EXPECT_THAT(
      error_of({{"bert.embeddings.LayerNorm.gamma", v}, {"embeddings.LayerNorm.weight", v}}),
      HasSubstr("both map to 'bert.embeddings.LayerNorm.weight'"));

  NamedTensors untied = tiny_pretraining_tensors();
  for (auto& [name, t] : untied) {
    if (name == "cls.predictions.decoder.weight") t = t + 0.25;
  }
  EXPECT_THAT(error_of(untied), HasSubstr("differs from 'bert.embeddings.word_embeddings.weight' "
                                          "(max abs difference 0.250000)"));
  EXPECT_THAT(error_of({{"cls.predictions.decoder.weight", torch::ones({kVocab, kH})}}),
              HasSubstr("the word embeddings it is tied to are not"));
  EXPECT_THAT(error_of({{"cls.predictions.bias", torch::zeros({kVocab})},
                        {"cls.predictions.decoder.bias", torch::ones({kVocab})}}),
              HasSubstr("differs from 'cls.predictions.bias'"));

  // A decoder bias alone stands in for the MLM bias.
  const HfTensorMapping m = map_hf_tensors({{"cls.predictions.decoder.bias", v * 3}}, "x");
  ASSERT_EQ(m.tensors.size(), 1u);
  EXPECT_EQ(m.tensors[0].first, "cls.predictions.bias");
  EXPECT_EQ(m.tensors[0].second[0].item<float>(), 3.0f);
}

TEST(ImportHf, ForwardMatchesIndependentReference) {
  TempDir tmp;
  const fs::path hf = fs::path(tmp.path()) / "hf", out = fs::path(tmp.path()) / "bundle";
  write_hf_folder(hf, in_variant(tiny_pretraining_tensors(), Variant::kLegacyTf));
  if (const char* keep = std::getenv("DIALTREE_KEEP_HF_FIXTURE")) {
    fs::create_directories(keep);
    for (const auto& f : fs::directory_iterator(hf)) {
      fs::copy_file(f.path(), fs::path(keep) / f.path().filename(),
                    fs::copy_options::overwrite_existing);
    }
  }
  const HfImportReport r = import_hf(hf.string(), out.string());
  EXPECT_EQ(r.loaded, 5u + 16u * kLayers + 5u);
  ASSERT_EQ(r.initialised.size(), 3u);  // turn table, projection weight and bias
  EXPECT_THAT(r.initialised[0], HasSubstr("bert.embeddings.turn_embeddings.weight: zeros"));
  EXPECT_THAT(r.initialised[1], HasSubstr("projection.dense.weight: HF BERT init"));
  EXPECT_EQ(r.notes.size(), 6u);

  LoadedBundle b = load_bundle(out.string());
  const EncoderConfig& c = b.model->config();
  EXPECT_EQ(c.vocab_size, kVocab);
  EXPECT_EQ(c.cls_token_id, 16);
  EXPECT_EQ(c.projection_dim, kH);
  EXPECT_EQ(b.tokenizer->special().sos_u, 13);  // [unused12]
  EXPECT_EQ(b.tokenizer->special().eos_r, 8);   // [unused7]
  EXPECT_EQ(b.tokenizer->special().unk, 15);
  EXPECT_EQ(b.info.recipe.at("hf_architectures"), nlohmann::json({"BertForPreTraining"}));
  const NamedTensors params = model_tensors(*b.model);
  for (const auto& [name, t] : params) {
    if (name == "bert.embeddings.turn_embeddings.weight") {
      EXPECT_EQ(t.abs().sum().item<float>(), 0.0f);
    }
    if (name == "projection.dense.weight") {
      EXPECT_NEAR(t.std().item<double>(), 0.02, 0.004);  // HF init, N(0, initializer_range)
    }
  }

  // The plain encoder (no prepended [CLS]) with turn id 0 is BERT: numbers from
  // tests/fixtures/hf/make_reference.py.
  torch::NoGradGuard no_grad;
  const torch::Tensor h = b.model->forward(reference_inputs(), /*prepend_cls=*/false);
  expect_near(
      h[0][0],
      {1.4277843, 1.1203066, 1.1481077, 0.3569874, 0.3897702, -0.7941433, -0.6037021, -1.8870570},
      1e-5);
  expect_near(
      h[1][3],
      {2.1441474, 0.9694593, 0.8219279, -0.3119353, -0.1146124, -1.0403061, -0.3378421, -0.7643968},
      1e-5);
  const torch::Tensor keep = reference_inputs().attention_mask.to(torch::kFloat32).unsqueeze(2);
  EXPECT_NEAR((h * keep).sum().item<double>(), 11.3573915, 1e-4);
  expect_near(b.model->mlm_logits(h[0][1]),
              {-0.0697454, -0.3291814, 0.3601268,  -0.3171006, 0.7366513,  -0.3121149,
               0.9330691,  -0.3745832, 0.8900572,  -0.4994834, 0.6410938,  -0.6154315,
               0.2935147,  -0.6228098, -0.0246443, -0.4509572, -0.2246030, -0.1038442,
               -0.2931463, 0.3307947,  -0.2876152, 0.7151111,  -0.2937564, 0.9215704,
               -0.3700615, 0.8900734,  -0.5091233, 0.6531439,  -0.6372688, 0.3168231},
              1e-5);
}

TEST(ImportHf, BertModelSaveNeedsAllowMissingForTheMlmHead) {
  TempDir tmp;
  const fs::path hf = fs::path(tmp.path()) / "st", out = fs::path(tmp.path()) / "bundle";
  write_hf_folder(hf, in_variant(tiny_pretraining_tensors(), Variant::kBertModel));
  EXPECT_THAT(import_error(hf, out),
              HasSubstr("model.safetensors: 5 tensor(s) missing: cls.predictions.bias, "
                        "cls.predictions.transform.dense.weight, "
                        "cls.predictions.transform.dense.bias, "
                        "cls.predictions.transform.LayerNorm.weight, "
                        "cls.predictions.transform.LayerNorm.bias (pass --allow-missing"));
  EXPECT_FALSE(fs::exists(out));
  HfImportOptions o;
  o.allow_missing = true;
  const HfImportReport r = import_hf(hf.string(), out.string(), o);
  EXPECT_EQ(r.initialised.size(), 8u);  // turn, projection x2, MLM head x5
  EXPECT_THAT(r.initialised,
              ::testing::Contains(HasSubstr("cls.predictions.bias: HF BERT init (missing")));
  // The encoder is the same as the BertForPreTraining import's: compare with a fresh import.
  const fs::path hf2 = fs::path(tmp.path()) / "pt", out2 = fs::path(tmp.path()) / "bundle2";
  write_hf_folder(hf2, tiny_pretraining_tensors());
  import_hf(hf2.string(), out2.string());
  torch::NoGradGuard no_grad;
  const torch::Tensor a = load_bundle(out.string()).model->forward(reference_inputs());
  const torch::Tensor b = load_bundle(out2.string()).model->forward(reference_inputs());
  EXPECT_TRUE(torch::equal(a, b));
}

TEST(ImportHf, BadFoldersAreClearErrors) {
  TempDir tmp;
  const fs::path root(tmp.path()), out = root / "bundle";

  const fs::path pickle = root / "pickle";
  fs::create_directories(pickle);
  std::ofstream(pickle / "config.json") << tiny_hf_config().dump();
  std::ofstream(pickle / "pytorch_model.bin") << "not read";
  EXPECT_THAT(import_error(pickle, out),
              HasSubstr("pytorch_model.bin: is a PyTorch pickle, which dialtree does not read"));
  EXPECT_THAT(import_error(pickle, out), HasSubstr("convert it to model.safetensors"));

  NamedTensors extra = tiny_pretraining_tensors();
  extra.emplace_back("bert.encoder.layer.0.attention.self.rotary", torch::ones({2}));
  extra.emplace_back("lm_head.weight", torch::ones({2}));
  write_hf_folder(root / "extra", extra);
  EXPECT_THAT(import_error(root / "extra", out),
              HasSubstr("2 unexpected tensor(s), not BERT and not dialtree: "
                        "bert.encoder.layer.0.attention.self.rotary (from "));
  EXPECT_THAT(import_error(root / "extra", out), HasSubstr("lm_head.weight (from "));

  NamedTensors missing = tiny_pretraining_tensors();
  missing.erase(missing.begin() + 7);  // layer 0 query bias... whichever: named in the message
  const std::string gone = tiny_pretraining_tensors()[7].first;
  write_hf_folder(root / "missing", missing);
  EXPECT_THAT(import_error(root / "missing", out), HasSubstr("1 tensor(s) missing: " + gone));

  nlohmann::json cfg = tiny_hf_config();
  cfg["rope_theta"] = 10000;
  write_hf_folder(root / "cfg", tiny_pretraining_tensors(), cfg);
  EXPECT_THAT(import_error(root / "cfg", out), HasSubstr("rope_theta"));
  EXPECT_THAT(import_error(root / "cfg", out), HasSubstr("unknown HF config key"));

  cfg = tiny_hf_config();
  cfg["model_type"] = "convbert";
  write_hf_folder(root / "convbert", tiny_pretraining_tensors(), cfg);
  EXPECT_THAT(import_error(root / "convbert", out),
              HasSubstr("only BERT checkpoints (\"bert\") can be imported"));

  NamedTensors wrong_shape = tiny_pretraining_tensors();
  wrong_shape[1].second = torch::zeros({kPositions + 1, kH});
  write_hf_folder(root / "shape", wrong_shape);
  EXPECT_THAT(import_error(root / "shape", out),
              HasSubstr("tensor 'bert.embeddings.position_embeddings.weight': has shape [17, 8] "
                        "but the model expects [16, 8]"));

  // An uncased vocabulary declared cased (docs/failure-cases.md C17): the HF file is named, not a
  // temp copy.
  write_hf_folder(root / "cased", tiny_pretraining_tensors());
  std::ofstream(root / "cased" / "tokenizer_config.json") << R"({"do_lower_case": false})";
  EXPECT_THAT(import_error(root / "cased", out),
              HasSubstr((root / "cased" / "tokenizer_config.json").string() + ": field"));

  cfg = tiny_hf_config();
  cfg["vocab_size"] = kVocab - 1;
  write_hf_folder(root / "small", tiny_pretraining_tensors(), cfg);
  EXPECT_THAT(import_error(root / "small", out),
              HasSubstr("vocab.txt: has 30 entries but " + (root / "small/config.json").string() +
                        " has vocab_size 29"));

  EXPECT_THROW(import_hf((root / "shape").string(), (root / "shape").string()),
               std::invalid_argument);
  EXPECT_FALSE(fs::exists(out));
}

/// A small trained-looking bundle: random weights in every tensor (turn table included), an
/// intent head with label names, a WordPiece tokenizer with its own role-marker aliases.
fs::path make_bundle(const fs::path& root) {
  EncoderConfig c;
  c.vocab_size = kVocab;
  c.hidden_size = kH;
  c.num_hidden_layers = kLayers;
  c.num_attention_heads = 2;
  c.intermediate_size = kF;
  c.max_position_embeddings = kPositions;
  c.cls_token_id = 16;
  c.max_turns = 4;
  c.embedding_dropout_prob = 0.2;
  c.projection_views = {"D", "I", "DI"};
  c.projection_dim = 4;
  c.num_labels = 3;
  torch::manual_seed(7);
  SpaceModel m(c);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : m->parameters()) p.normal_(0.0, 0.5);
  }
  const fs::path vocab = root / "vocab-src.txt", tok = root / "tok", bundle = root / "bundle";
  std::ofstream(vocab) << tiny_vocab();
  data::WordPieceOptions o;
  o.special = {0, 15, 16, 17, 18, 1, 2, 3, 4};  // role markers on [unused0..3]
  data::save_wordpiece_tokenizer_config(tok.string(), vocab.string(), o);
  BundleInfo info;
  info.intent_labels = {"book", "cancel", "greet"};
  info.recipe = {{"learning_rate", 3e-5}};
  save_bundle(bundle.string(), *m, tok.string(), info);
  return bundle;
}

void expect_same_bundle(const fs::path& a_dir, const fs::path& b_dir) {
  const LoadedBundle a = load_bundle(a_dir.string()), b = load_bundle(b_dir.string());
  EXPECT_EQ(encoder_config_to_json(a.model->config()), encoder_config_to_json(b.model->config()));
  EXPECT_EQ(a.info.intent_labels, b.info.intent_labels);
  EXPECT_EQ(a.info.recipe, b.info.recipe);
  EXPECT_EQ(data::tokenizer_config_to_json(data::read_tokenizer_config(a_dir.string())),
            data::tokenizer_config_to_json(data::read_tokenizer_config(b_dir.string())));
  const NamedTensors ta = model_tensors(*a.model), tb = model_tensors(*b.model);
  ASSERT_EQ(ta.size(), tb.size());
  for (std::size_t i = 0; i < ta.size(); ++i) {
    EXPECT_EQ(ta[i].first, tb[i].first);
    EXPECT_TRUE(torch::equal(ta[i].second, tb[i].second)) << ta[i].first;
  }
}

std::vector<std::string> names_in(const fs::path& file) {
  std::vector<std::string> out;
  for (const auto& [name, t] : load_safetensors(file.string()).tensors) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ExportHf, HfFormatRoundTripIsExact) {
  TempDir tmp;
  const fs::path root(tmp.path()), bundle = make_bundle(root), hf = root / "hf";
  const HfExportReport r = export_hf(bundle.string(), hf.string(), HfExportFormat::kHf);
  EXPECT_EQ(r.exported.size(), 5u + 16u * kLayers + 5u);
  EXPECT_EQ(r.side,
            (std::vector<std::string>{"bert.embeddings.turn_embeddings.weight",
                                      "projection.dense.weight", "projection.dense.bias",
                                      "intent_classifier.weight", "intent_classifier.bias"}));
  EXPECT_EQ(names_in(hf / kHfExtraWeightsFile),
            (std::vector<std::string>{"bert.embeddings.turn_embeddings.weight",
                                      "intent_classifier.bias", "intent_classifier.weight",
                                      "projection.dense.bias", "projection.dense.weight"}));
  const std::vector<std::string> main = names_in(hf / "model.safetensors");
  EXPECT_EQ(main.front(), "bert.embeddings.LayerNorm.bias");
  EXPECT_EQ(main.back(), "cls.predictions.transform.dense.weight");
  EXPECT_FALSE(fs::exists(hf / "tokenizer.json"));  // transformers' fast-tokenizer file name

  const json config = json_parse_file((hf / "config.json").string());
  EXPECT_EQ(config.at("architectures"), json({"BertForPreTraining"}));
  EXPECT_EQ(config.at("hidden_size"), kH);
  EXPECT_EQ(config.at("vocab_size"), kVocab);
  EXPECT_FALSE(config.contains("max_turns"));
  const json tc = json_parse_file((hf / "tokenizer_config.json").string());
  EXPECT_EQ(tc.at("tokenizer_class"), "BertTokenizer");
  EXPECT_EQ(tc.at("do_lower_case"), true);
  EXPECT_EQ(tc.at("cls_token"), "[CLS]");
  const json sm = json_parse_file((hf / "special_tokens_map.json").string());
  EXPECT_EQ(sm.at("additional_special_tokens"),
            json({"[unused0]", "[unused1]", "[unused2]", "[unused3]"}));

  const fs::path back = root / "back";
  const HfImportReport ir = import_hf(hf.string(), back.string());
  EXPECT_TRUE(ir.initialised.empty());
  expect_same_bundle(bundle, back);
}

TEST(ExportHf, SentenceTransformersFolderAndRoundTrip) {
  TempDir tmp;
  const fs::path root(tmp.path()), bundle = make_bundle(root), st = root / "st";
  const HfExportReport r =
      export_hf(bundle.string(), st.string(), HfExportFormat::kSentenceTransformers);
  EXPECT_EQ(r.exported.size(), 5u + 16u * kLayers);
  EXPECT_EQ(r.side.size(), 10u);  // + MLM head x5
  const std::vector<std::string> main = names_in(st / "model.safetensors");
  EXPECT_EQ(main.front(), "embeddings.LayerNorm.bias");  // BertModel names
  EXPECT_EQ(main.back(), "encoder.layer.1.output.dense.weight");

  const json modules = json_parse_file((st / "modules.json").string());
  ASSERT_EQ(modules.size(), 2u);
  EXPECT_EQ(modules[0].at("type"), "sentence_transformers.models.Transformer");
  EXPECT_EQ(modules[1].at("path"), "1_Pooling");
  const json pool = json_parse_file((st / "1_Pooling" / "config.json").string());
  EXPECT_EQ(pool.at("word_embedding_dimension"), kH);
  EXPECT_EQ(pool.at("pooling_mode_cls_token"), true);
  EXPECT_EQ(pool.at("pooling_mode_mean_tokens"), false);
  const json sb = json_parse_file((st / "sentence_bert_config.json").string());
  EXPECT_EQ(sb.at("max_seq_length"), kPositions);
  EXPECT_EQ(json_parse_file((st / "config.json").string()).at("architectures"),
            json({"BertModel"}));
  EXPECT_TRUE(fs::exists(st / "config_sentence_transformers.json"));

  const fs::path back = root / "back";
  import_hf(st.string(), back.string());
  expect_same_bundle(bundle, back);
}

TEST(ExportHf, EditedConfigIsCaughtOnReimport) {
  TempDir tmp;
  const fs::path root(tmp.path()), bundle = make_bundle(root), hf = root / "hf";
  export_hf(bundle.string(), hf.string(), HfExportFormat::kHf);
  json config = json_parse_file((hf / "config.json").string());
  config["layer_norm_eps"] = 1e-5;
  std::ofstream(hf / "config.json") << config.dump();
  EXPECT_THAT(import_error(hf, root / "back"), HasSubstr("field 'layer_norm_eps'"));
  EXPECT_THROW(export_hf(bundle.string(), bundle.string(), HfExportFormat::kHf),
               std::invalid_argument);
}

TEST(ExportHf, SentencePieceBundleExportsWeightsOnlyWhenAsked) {
  TempDir tmp;
  const fs::path root(tmp.path());
  {
    std::ofstream corpus(root / "corpus.txt");
    const char* words[] = {"book",    "a",      "table", "for",  "two", "at",
                           "seven",   "please", "my",    "card", "has", "not",
                           "arrived", "yet",    "where", "is",   "it"};
    for (int i = 0; i < 400; ++i) {
      for (int w = 0; w < 6; ++w) corpus << words[(i * 7 + w * 5) % 17] << (w < 5 ? " " : "\n");
    }
  }
  data::SentencePieceTrainOptions o;
  o.inputs = {(root / "corpus.txt").string()};
  o.out_dir = (root / "tok").string();
  o.vocab_size = 40;
  data::train_sentencepiece(o);
  EncoderConfig c;
  c.vocab_size = 40;
  c.hidden_size = kH;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.intermediate_size = kF;
  c.max_position_embeddings = kPositions;
  c.cls_token_id = data::sentencepiece_special_tokens().cls;
  SpaceModel m(c);
  save_bundle((root / "bundle").string(), *m, o.out_dir);

  try {
    export_hf((root / "bundle").string(), (root / "hf").string(), HfExportFormat::kHf);
    FAIL() << "no exception";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("tokenizer.json: field 'type': is \"sentencepiece\": "
                          "transformers' BertTokenizer reads only a WordPiece vocab.txt"));
    EXPECT_THAT(e.what(), HasSubstr("pass --weights-only"));
  }
  EXPECT_FALSE(fs::exists(root / "hf"));
  const HfExportReport r = export_hf((root / "bundle").string(), (root / "hf").string(),
                                     HfExportFormat::kHf, /*weights_only=*/true);
  EXPECT_EQ(r.files, (std::vector<std::string>{"model.safetensors", kHfExtraWeightsFile,
                                               "config.json", kHfSideConfigFile}));
  EXPECT_FALSE(fs::exists(root / "hf" / "tokenizer.json"));
  EXPECT_FALSE(fs::exists(root / "hf" / "spm.model"));
  EXPECT_THAT(import_error(root / "hf", root / "back"),
              HasSubstr("vocab.txt: missing: only WordPiece (BERT) tokenizers are imported"));
}

}  // namespace
}  // namespace dialtree::model
