// model/: the safetensors reader/writer and model bundles (docs/training.md "Model bundle").
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "model/torch_api.h"
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_util.h"
#include "data/tokenizer_factory.h"
#include "data/wordpiece.h"
#include "model/bundle.h"
#include "model/collate.h"
#include "model/safetensors.h"
#include "test_paths.h"

namespace dialtree::model {
namespace {

namespace fs = std::filesystem;
using dialtree::testing::TempDir;
using ::testing::HasSubstr;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// 8-byte little-endian length + header (no padding added) + data.
std::string build_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string float_bytes(std::vector<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

/// The DataError message load_safetensors() throws for `path`, or "no error".
std::string load_error(const std::string& path) {
  try {
    load_safetensors(path);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Safetensors, ExactBytesOfATinyFileAndRoundTripOfDtypes) {
  TempDir tmp;
  // One 2x2 F32 tensor: 57 header bytes padded with 7 spaces to 64.
  const std::string path = tmp.file("w.safetensors");
  save_safetensors(path, {{"w", torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({2, 2})}});
  const std::string header = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  const std::string expected =
      std::string("\x40\0\0\0\0\0\0\0", 8) + header + "       " + float_bytes({1, 2, 3, 4});
  EXPECT_EQ(read_bytes(path), expected);

  // A hand-built file (unpadded header, metadata, two tensors listed out of data order) parses.
  const std::string hand = tmp.file("hand.safetensors");
  write_bytes(hand, build_file(R"({"b":{"dtype":"I64","shape":[1],"data_offsets":[8,16]},)"
                               R"("__metadata__":{"format":"pt"},)"
                               R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                               float_bytes({0.5f, -2.0f}) + std::string("\x07\0\0\0\0\0\0\0", 8)));
  const SafetensorsContents c = load_safetensors(hand);
  ASSERT_EQ(c.tensors.size(), 2u);
  EXPECT_EQ(c.tensors[0].first, "a");
  EXPECT_TRUE(torch::equal(c.tensors[0].second, torch::tensor({0.5f, -2.0f})));
  EXPECT_EQ(c.tensors[1].first, "b");
  EXPECT_EQ(c.tensors[1].second.scalar_type(), torch::kInt64);
  EXPECT_EQ(c.tensors[1].second.item<std::int64_t>(), 7);
  EXPECT_EQ(c.metadata.at("format"), "pt");

  // Round trip of several dtypes, a scalar, an empty tensor, a non-contiguous view.
  torch::manual_seed(0);
  const NamedTensors in = {{"bf16", torch::randn({3, 5}).to(torch::kBFloat16)},
                           {"f32", torch::randn({4, 3}).t()},
                           {"i64", torch::arange(-3, 4, torch::kInt64)},
                           {"f16", torch::randn({7}).to(torch::kFloat16)},
                           {"scalar", torch::tensor(3.5, torch::kFloat64)},
                           {"empty", torch::zeros({0, 4})},
                           {"u8", torch::tensor({1, 255}, torch::kUInt8)},
                           {"flag", torch::tensor({true, false, true})}};
  const std::string rt = tmp.file("rt.safetensors");
  save_safetensors(rt, in, {{"format", "pt"}, {"note", "x"}});
  const SafetensorsContents back = load_safetensors(rt);
  ASSERT_EQ(back.tensors.size(), in.size());
  EXPECT_EQ(back.metadata.size(), 2u);
  for (const auto& entry : in) {
    const std::string& name = entry.first;  // not a binding: the lambda below captures it
    const torch::Tensor& t = entry.second;
    const auto it = std::find_if(back.tensors.begin(), back.tensors.end(),
                                 [&](const auto& p) { return p.first == name; });
    ASSERT_NE(it, back.tensors.end()) << name;
    EXPECT_EQ(it->second.scalar_type(), t.scalar_type()) << name;
    EXPECT_EQ(it->second.sizes(), t.sizes()) << name;
    EXPECT_TRUE(torch::equal(it->second, t)) << name;
  }
  // Header length is a multiple of 8, and data is ordered largest element first (aligned).
  const std::string bytes = read_bytes(rt);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  const auto h = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(h["scalar"]["shape"], nlohmann::json::array());
  EXPECT_EQ(h["scalar"]["dtype"], "F64");
  EXPECT_EQ(h["i64"]["data_offsets"][0], 0);  // 8-byte elements first
  for (const auto& item : h.items()) {
    if (item.key() == "__metadata__") continue;
    const std::uint64_t begin = item.value()["data_offsets"][0];
    const std::string dt = item.value()["dtype"];
    const std::uint64_t size = dt == "F64" || dt == "I64"    ? 8
                               : dt == "F32"                 ? 4
                               : dt == "BF16" || dt == "F16" ? 2
                                                             : 1;
    EXPECT_EQ(begin % size, 0u) << item.key();
  }

  EXPECT_THROW(
      save_safetensors(tmp.file("x"), {{"a", torch::zeros({1})}, {"a", torch::zeros({1})}}),
      std::invalid_argument);
  EXPECT_THROW(save_safetensors(tmp.file("x"), {{"c", torch::zeros({1}, torch::kComplexFloat)}}),
               std::invalid_argument);
  EXPECT_FALSE(fs::exists(tmp.file("x")));
}

TEST(Safetensors, CorruptFilesRaiseErrorsNamingFileAndTensor) {
  TempDir tmp;
  const std::string good = tmp.file("good.safetensors");
  save_safetensors(good, {{"a", torch::ones({2, 2})}, {"b", torch::ones({3})}});
  const std::string bytes = read_bytes(good);

  auto case_file = [&](const std::string& name, const std::string& content) {
    const std::string p = tmp.file(name);
    write_bytes(p, content);
    return p;
  };
  // Truncated data section.
  std::string p = case_file("truncated.safetensors", bytes.substr(0, bytes.size() - 4));
  EXPECT_THAT(load_error(p), AllOf(HasSubstr(p), HasSubstr("tensor 'b'"), HasSubstr("truncated")));
  // Shorter than the length prefix; header length beyond the file.
  p = case_file("short.safetensors", "abc");
  EXPECT_THAT(load_error(p), AllOf(HasSubstr(p), HasSubstr("too short")));
  std::string big = bytes;
  big[5] = 1;  // length prefix now ~2^40
  p = case_file("biglen.safetensors", big);
  EXPECT_THAT(load_error(p), AllOf(HasSubstr(p), HasSubstr("exceeds the file size")));
  // Overlapping offsets.
  p = case_file("overlap.safetensors",
                build_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                           std::string(12, '\0')));
  EXPECT_THAT(load_error(p), AllOf(HasSubstr(p), HasSubstr("tensor 'y'"), HasSubstr("overlap")));
  // Unknown dtype.
  p = case_file("dtype.safetensors",
                build_file(R"({"x":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})",
                           std::string(2, '\0')));
  EXPECT_THAT(load_error(p), AllOf(HasSubstr(p), HasSubstr("tensor 'x'"), HasSubstr("F8_E4M3")));
  // Size does not match the shape; a gap; trailing bytes; bad JSON; negative shape; not an object.
  p = case_file("size.safetensors",
                build_file(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                           std::string(8, '\0')));
  EXPECT_THAT(load_error(p), AllOf(HasSubstr("tensor 'x'"), HasSubstr("needs 12")));
  p = case_file("gap.safetensors",
                build_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                           std::string(8, '\0')));
  EXPECT_THAT(load_error(p), AllOf(HasSubstr("tensor 'x'"), HasSubstr("gap")));
  p = case_file("trailing.safetensors", bytes + "xxxx");
  EXPECT_THAT(load_error(p), AllOf(HasSubstr(p), HasSubstr("data section")));
  p = case_file("json.safetensors", build_file("{\"x\": ", ""));
  EXPECT_THAT(load_error(p), AllOf(HasSubstr(p), HasSubstr("JSON")));
  p = case_file("neg.safetensors",
                build_file(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                           std::string(4, '\0')));
  EXPECT_THAT(load_error(p), AllOf(HasSubstr("tensor 'x'"), HasSubstr("shape")));
  p = case_file("array.safetensors", build_file("[1, 2]", ""));
  EXPECT_THAT(load_error(p), HasSubstr("object"));
  EXPECT_THAT(load_error(tmp.file("missing.safetensors")), HasSubstr("missing.safetensors"));
}

EncoderConfig bundle_config() {
  EncoderConfig c;
  c.vocab_size = 40;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 64;
  c.max_position_embeddings = 16;
  c.max_turns = 4;
  c.cls_token_id = 2;
  c.projection_views = {"I", "IS", "DISV"};
  c.projection_dim = 16;
  c.num_labels = 3;
  c.num_tags = 2;
  return c;
}

/// A WordPiece tokenizer folder: [PAD] [UNK] [CLS] [SEP] [MASK], role markers on [unusedK].
std::string make_tokenizer(const TempDir& tmp) {
  const std::string vocab = tmp.file("vocab-src.txt");
  std::ofstream(vocab) << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n[unused0]\n[unused1]\n[unused2]\n"
                          "[unused3]\nhello\nworld\n##s\n";
  data::WordPieceOptions o;
  o.special = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  const std::string dir = tmp.file("tok");
  data::save_wordpiece_tokenizer_config(dir, vocab, o);
  return dir;
}

data::SerializedExample ex(std::vector<std::int32_t> ids) {
  data::SerializedExample e;
  e.input_ids = ids;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    e.position_ids.push_back(static_cast<std::int32_t>(i));
    e.role_ids.push_back(1);
    e.turn_ids.push_back(1);
  }
  return e;
}

TEST(Bundle, RoundTripGivesBitwiseIdenticalOutputsAndLoadsItsOwnTokenizer) {
  TempDir tmp;
  const std::string tok_dir = make_tokenizer(tmp);
  torch::manual_seed(5);
  SpaceModel model(bundle_config());
  {
    torch::NoGradGuard g;
    for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.1);
  }
  model->eval();
  BundleInfo info;
  info.intent_labels = {"book", "cancel", "greet"};
  info.tag_labels = {"O", "B-time"};
  info.recipe = {{"max_steps", 10}, {"learning_rate", 1e-4}};
  const std::string dir = tmp.file("runs/x/final");
  save_bundle(dir, *model, tok_dir, info);
  for (const char* f :
       {"config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "dialtree.json"}) {
    EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
  }
  // Nothing else (no temporary folders) beside the bundle.
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.file("runs/x")), fs::directory_iterator{}), 1);
  const json dj = json_parse_file(dir + "/dialtree.json");
  EXPECT_EQ(dj["format"], "dialtree-bundle/1");
  EXPECT_EQ(dj["label_maps"]["intent_classifier"][2], "greet");
  const json cj = json_parse_file(dir + "/config.json");
  EXPECT_EQ(cj["hidden_size"], 32);
  EXPECT_EQ(cj["projection_views"], json({"I", "IS", "DISV"}));
  // The weights file is plain safetensors with the HF names; the tied decoder is not stored.
  const SafetensorsContents st = load_safetensors(dir + "/model.safetensors");
  EXPECT_EQ(st.metadata.at("format"), "pt");
  EXPECT_EQ(st.tensors.size(), model->parameters().size());
  for (const auto& [name, t] : st.tensors) EXPECT_EQ(name.find("decoder"), std::string::npos);

  LoadedBundle loaded = load_bundle(dir);
  EXPECT_FALSE(loaded.model->is_training());
  EXPECT_EQ(loaded.info.intent_labels, info.intent_labels);
  EXPECT_EQ(loaded.info.tag_labels, info.tag_labels);
  EXPECT_EQ(loaded.info.recipe, info.recipe);
  ASSERT_TRUE(loaded.tokenizer);
  EXPECT_EQ(loaded.tokenizer->type(), "wordpiece");
  EXPECT_EQ(loaded.tokenizer->special().cls, 2);
  EXPECT_EQ(encoder_config_to_json(loaded.model->config()),
            encoder_config_to_json(model->config()));

  torch::NoGradGuard g;
  const EncoderInputs in = collate({ex({9, 10, 11, 3}), ex({10})});
  const torch::Tensor a = model->forward(in), b = loaded.model->forward(in);
  EXPECT_TRUE(torch::equal(a, b));
  const torch::Tensor cls_a = SpaceModelImpl::cls_vector(a), cls_b = SpaceModelImpl::cls_vector(b);
  EXPECT_TRUE(torch::equal(model->project(cls_a), loaded.model->project(cls_b)));
  EXPECT_TRUE(torch::equal(model->mlm_logits(a), loaded.model->mlm_logits(b)));
  EXPECT_TRUE(torch::equal(model->intent_logits(cls_a), loaded.model->intent_logits(cls_b)));
  EXPECT_TRUE(torch::equal(model->tag_logits(a), loaded.model->tag_logits(b)));
  // Tied decoder stays tied after loading: the MLM decoder is the word table itself.
  EXPECT_TRUE(loaded.model->encoder()->word_embeddings().is_same(
      loaded.model->named_parameters()["bert.embeddings.word_embeddings.weight"]));

  // Saving again over an existing bundle replaces it.
  info.intent_labels = {"x", "y", "z"};
  save_bundle(dir, *model, tok_dir, info);
  EXPECT_EQ(load_bundle(dir).info.intent_labels, info.intent_labels);
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.file("runs/x")), fs::directory_iterator{}), 1);
}

TEST(Bundle, BadInputsAndMismatchedFilesRaiseClearErrors) {
  TempDir tmp;
  const std::string tok_dir = make_tokenizer(tmp);
  SpaceModel model(bundle_config());
  BundleInfo info;
  info.intent_labels = {"a", "b"};  // 3 expected
  info.tag_labels = {"O", "B"};
  const std::string dir = tmp.file("b");
  EXPECT_THROW(save_bundle(dir, *model, tok_dir, info), std::invalid_argument);
  info.intent_labels = {"a", "b", "a"};
  EXPECT_THROW(save_bundle(dir, *model, tok_dir, info), std::invalid_argument);
  EXPECT_FALSE(fs::exists(dir));

  // A tokenizer whose [CLS] id differs from cls_token_id is refused, and nothing is written.
  EncoderConfig other = bundle_config();
  other.cls_token_id = 3;
  info.intent_labels = {"a", "b", "c"};
  try {
    save_bundle(dir, *SpaceModel(other), tok_dir, info);
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("tokenizer.json"), HasSubstr("cls")));
  }
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator{}), 2);

  save_bundle(dir, *model, tok_dir, info);
  // load_model_tensors is strict: missing, unknown, wrong shape.
  NamedTensors t = model_tensors(*model);
  SpaceModel fresh(bundle_config());
  NamedTensors missing(t.begin() + 1, t.end());
  EXPECT_THAT([&] { load_model_tensors(*fresh, missing, "m"); },
              ::testing::ThrowsMessage<DataError>(HasSubstr(t.front().first)));
  NamedTensors extra = t;
  extra.emplace_back("bert.pooler.dense.weight", torch::zeros({32, 32}));
  EXPECT_THAT([&] { load_model_tensors(*fresh, extra, "m"); },
              ::testing::ThrowsMessage<DataError>(HasSubstr("bert.pooler.dense.weight")));
  NamedTensors shape = t;
  shape[0].second = torch::zeros({2});
  EXPECT_THAT([&] { load_model_tensors(*fresh, shape, "m"); },
              ::testing::ThrowsMessage<DataError>(HasSubstr("shape")));
  // NaN or infinite weights are refused, named (docs/failure-cases.md B10): they gave `embed`
  // null vectors and a server answering 200.
  NamedTensors nan = t;
  nan[2].second = nan[2].second.clone();
  nan[2].second.view(-1).index_put_({0}, std::numeric_limits<float>::quiet_NaN());
  nan[2].second.view(-1).index_put_({1}, std::numeric_limits<float>::infinity());
  EXPECT_THAT([&] { load_model_tensors(*fresh, nan, "m"); },
              ::testing::ThrowsMessage<DataError>(
                  AllOf(HasSubstr(nan[2].first), HasSubstr("holds 2 NaN or infinite value(s) of " +
                                                           std::to_string(nan[2].second.numel())))));
  // bf16 weights load into fp32 parameters.
  NamedTensors half = t;
  for (auto& [n, v] : half) v = v.to(torch::kBFloat16);
  load_model_tensors(*fresh, half, "m");

  // A config.json that no longer matches the weights names the weights file and the tensor.
  json cj = json_parse_file(dir + "/config.json");
  cj["intermediate_size"] = 48;
  std::ofstream(dir + "/config.json") << cj.dump();
  try {
    load_bundle(dir);
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("model.safetensors"), HasSubstr("intermediate.dense")));
  }
  cj["intermediate_size"] = 64;
  cj["unknown_key"] = 1;
  std::ofstream(dir + "/config.json") << cj.dump();
  EXPECT_THAT([&] { load_bundle(dir); }, ::testing::ThrowsMessage<DataError>(AllOf(
                                             HasSubstr("config.json"), HasSubstr("unknown_key"))));
  cj.erase("unknown_key");
  std::ofstream(dir + "/config.json") << cj.dump();
  // dialtree.json: wrong format version; label count mismatch.
  json dj = json_parse_file(dir + "/dialtree.json");
  dj["format"] = "dialtree-bundle/9";
  std::ofstream(dir + "/dialtree.json") << dj.dump();
  EXPECT_THAT([&] { load_bundle(dir); }, ::testing::ThrowsMessage<DataError>(AllOf(
                                             HasSubstr("dialtree.json"), HasSubstr("format"))));
  dj["format"] = "dialtree-bundle/1";
  dj["label_maps"]["token_classifier"] = {"O"};
  std::ofstream(dir + "/dialtree.json") << dj.dump();
  EXPECT_THAT([&] { load_bundle(dir); },
              ::testing::ThrowsMessage<DataError>(HasSubstr("label_maps.token_classifier")));
  // Missing tokenizer file.
  dj["label_maps"]["token_classifier"] = {"O", "B"};
  std::ofstream(dir + "/dialtree.json") << dj.dump();
  EXPECT_NO_THROW(load_bundle(dir));
  fs::remove(dir + "/tokenizer.json");
  EXPECT_THAT([&] { load_bundle(dir); },
              ::testing::ThrowsMessage<DataError>(HasSubstr("tokenizer.json")));
}

}  // namespace
}  // namespace dialtree::model
