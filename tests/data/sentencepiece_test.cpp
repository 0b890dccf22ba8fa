// SentencePiece wrapper and trainer on the real DialoGLUE MLM corpus (docs/failure-cases.md C14,
// C15).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "data/sentencepiece_tokenizer.h"
#include "test_paths.h"

namespace dialtree::data {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string corpus() {
  return dialtree::testing::shared_data("dialoglue/mlm_all_no_multiwoz.txt");
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

/// Writes the first `n` lines of the real corpus to `path`.
void write_corpus_head(const std::string& path, std::size_t n) {
  const auto lines = read_lines(corpus());
  std::ofstream out(path, std::ios::binary);
  for (std::size_t i = 0; i < n && i < lines.size(); ++i) out << lines[i] << '\n';
}

/// One 1000-piece unigram model on a 15,000-line sample of the real corpus, trained once per
/// test process.
class SentencePieceReal : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new dialtree::testing::TempDir();
    SentencePieceTrainOptions o;
    o.inputs = {corpus()};
    o.out_dir = dir_->file("bundle");
    o.vocab_size = 1000;
    o.character_coverage = 1.0;  // every character of the sample round-trips
    o.max_sentences = 15000;     // a seeded sample keeps training near one second
    o.num_threads = 2;
    result_ = new SentencePieceTrainResult(train_sentencepiece(o));
    tok_ = new SentencePieceTokenizer(result_->model_path);
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete result_;
    delete dir_;
  }
  static dialtree::testing::TempDir* dir_;
  static SentencePieceTrainResult* result_;
  static SentencePieceTokenizer* tok_;
};
dialtree::testing::TempDir* SentencePieceReal::dir_ = nullptr;
SentencePieceTrainResult* SentencePieceReal::result_ = nullptr;
SentencePieceTokenizer* SentencePieceReal::tok_ = nullptr;

TEST_F(SentencePieceReal, TrainResultCountsTheCorpus) {
  // 76,133 lines, 9 of them blank, none longer than 4192 bytes.
  EXPECT_EQ(result_->lines, 76124u);
  EXPECT_EQ(result_->lines_too_long, 0u);
  EXPECT_EQ(result_->lines_reserved, 0u);
  EXPECT_EQ(result_->lines_used, 15000u);
  EXPECT_EQ(result_->vocab_size, 1000);
  EXPECT_TRUE(std::filesystem::exists(result_->model_path));
  EXPECT_TRUE(std::filesystem::exists(result_->config_path));
  EXPECT_EQ(std::filesystem::path(result_->model_path).filename(), "spm.model");
}

TEST_F(SentencePieceReal, SpecialIdsAreTheExpectedPieces) {
  const auto& tok = *tok_;
  EXPECT_EQ(tok.vocab_size(), 1000);
  const std::vector<std::string> expected = {"[PAD]",   "[UNK]",   "[CLS]",   "[SEP]",  "[MASK]",
                                             "<sos_u>", "<eos_u>", "<sos_r>", "<eos_r>"};
  for (std::int32_t id = 0; id < 9; ++id) {
    EXPECT_EQ(tok.id_to_token(id), expected[static_cast<std::size_t>(id)]) << "id " << id;
    EXPECT_EQ(tok.token_to_id(expected[static_cast<std::size_t>(id)]), id);
  }
  const SpecialTokens s = tok.special();
  EXPECT_EQ(s.pad, 0);
  EXPECT_EQ(s.unk, 1);
  EXPECT_EQ(s.cls, 2);
  EXPECT_EQ(s.sep, 3);
  EXPECT_EQ(s.mask, 4);
  EXPECT_EQ(s.sos_u, 5);
  EXPECT_EQ(s.eos_u, 6);
  EXPECT_EQ(s.sos_r, 7);
  EXPECT_EQ(s.eos_r, 8);
  EXPECT_EQ(tok.type(), "sentencepiece");
  EXPECT_EQ(tok.normalization(), "nmt_nfkc");
  EXPECT_FALSE(tok.lower_case());
  EXPECT_EQ(tok.token_to_id("no-such-piece-anywhere"), -1);
}

TEST_F(SentencePieceReal, VocabFileListsEveryPieceWithItsScore) {
  const auto lines = read_lines(result_->vocab_path);
  ASSERT_EQ(lines.size(), 1000u);
  EXPECT_EQ(lines[0], "[PAD]\t0");
  EXPECT_EQ(lines[2], "[CLS]\t0");
  EXPECT_EQ(lines[8], "<eos_r>\t0");
  for (std::size_t id = 0; id < lines.size(); ++id) {
    const auto tab = lines[id].find('\t');
    ASSERT_NE(tab, std::string::npos) << lines[id];
    EXPECT_EQ(lines[id].substr(0, tab), tok_->id_to_token(static_cast<std::int32_t>(id)));
  }
  // The model file is exactly the serialized model the tokenizer holds.
  EXPECT_EQ(read_all(result_->model_path), tok_->serialized_model());
}

TEST_F(SentencePieceReal, RoundTripsRealSentences) {
  const auto lines = read_lines(corpus());
  std::size_t tested = 0, candidates = 0;
  for (std::size_t i = 0; i < lines.size(); i += 97) {
    const std::string& s = lines[i];
    // nmt_nfkc collapses runs of spaces and trims (docs/build.md); keep lines it leaves alone.
    if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.find("  ") != std::string::npos ||
        std::any_of(s.begin(), s.end(), [](char c) { return (c & 0x80) != 0 || c == '\t'; })) {
      continue;
    }
    const auto ids = tok_->encode(s);
    ASSERT_FALSE(ids.empty()) << s;
    ++candidates;
    // A character absent from the training sample is [UNK]; such lines cannot round-trip.
    if (std::count(ids.begin(), ids.end(), 1) > 0) continue;
    EXPECT_EQ(tok_->decode(ids), s);
    const auto pieces = tok_->tokenize(s);
    ASSERT_EQ(pieces.size(), ids.size());
    for (std::size_t k = 0; k < ids.size(); ++k) EXPECT_EQ(tok_->token_to_id(pieces[k]), ids[k]);
    ++tested;
  }
  EXPECT_GT(tested, 700u);
  EXPECT_GE(tested * 100, candidates * 99) << tested << " of " << candidates << " without [UNK]";
}

TEST_F(SentencePieceReal, FirstCorpusSentenceSplitsIntoWordStartPieces) {
  const std::string s = "I am still waiting on my card?";
  const auto pieces = tok_->tokenize(s);
  std::string joined;
  for (const auto& p : pieces) joined += p;
  EXPECT_EQ(joined,
            "\xe2\x96\x81I\xe2\x96\x81"
            "am\xe2\x96\x81still\xe2\x96\x81waiting"
            "\xe2\x96\x81on\xe2\x96\x81my\xe2\x96\x81"
            "card?");
  EXPECT_EQ(pieces.front().rfind("\xe2\x96\x81", 0), 0u);  // "▁I..." starts a word
  EXPECT_EQ(tok_->decode(tok_->encode(s)), s);
}

TEST_F(SentencePieceReal, OffsetsCoverEachPiecesInputBytes) {
  const std::string s = "I am  still waiting, on my card?";
  const auto spans = tok_->encode_with_offsets(s);
  const auto pieces = tok_->tokenize(s);
  ASSERT_EQ(spans.size(), pieces.size());
  std::vector<std::int32_t> ids;
  std::string covered;
  for (std::size_t k = 0; k < spans.size(); ++k) {
    ids.push_back(spans[k].id);
    ASSERT_LE(spans[k].begin, spans[k].end);
    ASSERT_LE(spans[k].end, s.size());
    if (k > 0) {
      EXPECT_GE(spans[k].begin, spans[k - 1].end);  // in order, no overlap
    }
    // A word-start piece "▁x" covers "x" of the input (its space is not part of it).
    std::string bare = pieces[k];
    if (bare.rfind("\xe2\x96\x81", 0) == 0) bare = bare.substr(3);
    EXPECT_EQ(s.substr(spans[k].begin, spans[k].end - spans[k].begin), bare) << k;
  }
  EXPECT_EQ(ids, tok_->encode(s));
  EXPECT_EQ(spans.front().begin, 0u);
  EXPECT_EQ(spans.back().end, s.size());
  EXPECT_THROW(tok_->encode_with_offsets("caf\xC3"), TokenizerError);
}

TEST_F(SentencePieceReal, ControlSymbolsInUserTextAreNotSpecialIds) {
  const std::string s = "[CLS] hi [SEP] <sos_u> [MASK] <eos_r> [PAD] [UNK]";
  const auto ids = tok_->encode(s);
  ASSERT_FALSE(ids.empty());
  for (std::int32_t id : ids) {
    EXPECT_TRUE(id == 1 || id >= 9) << "special id " << id << " produced from user text";
  }
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 0);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 5), 0);
  // Decoding the control ids themselves yields no text.
  EXPECT_EQ(tok_->decode({2, 5, 6, 7, 8, 3, 0}), "");
}

TEST_F(SentencePieceReal, DecodeRejectsOutOfRangeIds) {
  try {
    tok_->decode({5, 1000});
    FAIL() << "no exception";
  } catch (const TokenizerError& e) {
    EXPECT_THAT(e.what(), HasSubstr("1000"));
  }
  EXPECT_THROW(tok_->decode({-1}), TokenizerError);
  EXPECT_THROW(tok_->id_to_token(1000), TokenizerError);
  EXPECT_THROW(tok_->id_to_token(-3), TokenizerError);
  EXPECT_THROW(tok_->score(1000), TokenizerError);
  EXPECT_EQ(tok_->decode({}), "");
}

// C14: the bad id in row 1 of a batch is a catchable error naming row and id; run on a worker
// thread so a std::terminate (uncaught status / abort) would kill the test binary visibly.
TEST_F(SentencePieceReal, C14DecodeBatchOutOfRangeIsCatchableOnAThread) {
  const std::int32_t vocab = tok_->vocab_size();
  std::string message;
  bool caught = false;
  std::thread worker([&] {
    try {
      tok_->decode_batch({{2, 4}, {1, vocab}});
    } catch (const TokenizerError& e) {
      caught = true;
      message = e.what();
    }
  });
  worker.join();
  ASSERT_TRUE(caught);
  EXPECT_THAT(message, HasSubstr("row 1"));
  EXPECT_THAT(message, HasSubstr(std::to_string(vocab)));
  // The single path rejects the same id.
  EXPECT_THROW(tok_->decode({1, vocab}), TokenizerError);
  // Valid rows still decode.
  const auto hello = tok_->encode("hello there");
  const auto out = tok_->decode_batch({{2, 4}, hello});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], "");
  EXPECT_EQ(out[1], "hello there");
}

TEST_F(SentencePieceReal, InvalidUtf8IsATokenizerError) {
  EXPECT_THROW(tok_->encode("card \xff"), TokenizerError);
  EXPECT_THROW(tok_->encode("\xc3\x28"), TokenizerError);
  EXPECT_THROW(tok_->tokenize("\xed\xa0\x80"), TokenizerError);  // surrogate
  try {
    tok_->encode("ab\xc0\xaf");  // overlong '/'
    FAIL() << "no exception";
  } catch (const TokenizerError& e) {
    EXPECT_THAT(e.what(), HasSubstr("UTF-8"));
    EXPECT_THAT(e.what(), HasSubstr("byte 2"));
  }
}

// docs/build.md P15: SentencePiece merges a run of unknown characters into one [UNK] piece. The
// unpatched 0.1.97 copied the piece at every character, quadratic in the run (a 2 MB request body
// of one such run cost the server about a minute of CPU); the patched build appends in place.
// 400,000 unknown characters (1.2 MB) must come back as one [UNK] covering all of them, within
// 2 s for the two encodings (patched: 0.11 s; unpatched: 50 s on a 2-core Xeon beside a training).
TEST_F(SentencePieceReal, P15LongRunOfUnknownCharactersIsOneUnkInLinearTime) {
  const std::string cjk = "\xE4\xBD\xA0";  // U+4F60, absent from the English corpus
  ASSERT_EQ(tok_->encode(cjk).back(), tok_->special().unk);
  std::string run;
  for (int i = 0; i < 400000; ++i) run += cjk;
  const std::string text = "my card " + run + " please";
  const auto start = std::chrono::steady_clock::now();
  const auto spans = tok_->encode_with_offsets(text);
  const auto ids = tok_->encode(text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0) << "encoding a run of 400,000 unknown characters twice";
  std::vector<std::int32_t> span_ids;
  for (const auto& s : spans) span_ids.push_back(s.id);
  EXPECT_EQ(span_ids, ids);
  EXPECT_EQ(ids, tok_->encode("my card " + cjk + " please")) << "the whole run is one [UNK]";
  const auto unk = std::find_if(spans.begin(), spans.end(),
                                [&](const TokenSpan& s) { return s.id == tok_->special().unk; });
  ASSERT_NE(unk, spans.end());
  EXPECT_EQ(unk->begin, 8u);
  EXPECT_EQ(unk->end, 8u + run.size());
}

TEST_F(SentencePieceReal, EncodeIsThreadSafe) {
  const auto lines = read_lines(corpus());
  std::vector<std::vector<std::int32_t>> a(500), b(500);
  auto run = [&](std::vector<std::vector<std::int32_t>>& out) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = tok_->encode(lines[i * 37]);
  };
  std::thread t1(run, std::ref(a)), t2(run, std::ref(b));
  t1.join();
  t2.join();
  EXPECT_EQ(a, b);
}

TEST(SentencePieceLoad, MissingOrBrokenModelIsATokenizerError) {
  dialtree::testing::TempDir dir;
  try {
    SentencePieceTokenizer tok(dir.file("nope.model"));
    FAIL() << "no exception";
  } catch (const TokenizerError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nope.model"));
  }
  write_text(dir.file("bad.model"), "this is not a protobuf");
  EXPECT_THROW(SentencePieceTokenizer tok(dir.file("bad.model")), TokenizerError);
}

// C15: every line longer than max_sentence_length -> a clear error before training.
TEST(SentencePieceTrain, C15AllLinesTooLong) {
  dialtree::testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 3; ++i) {
    std::string line;
    while (line.size() < 5000) line += "the card has not arrived yet ";
    line.resize(5000);
    text += line + "\n";
  }
  write_text(dir.file("long.txt"), text);
  SentencePieceTrainOptions o;
  o.inputs = {dir.file("long.txt")};
  o.out_dir = dir.file("out");
  o.vocab_size = 100;
  try {
    train_sentencepiece(o);
    FAIL() << "no exception";
  } catch (const TokenizerError& e) {
    EXPECT_THAT(e.what(), HasSubstr("max_sentence_length"));
    EXPECT_THAT(e.what(), HasSubstr("3 of 3 lines exceed max_sentence_length=4192"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("out/spm.model")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("out/tokenizer.json")));
}

TEST(SentencePieceTrain, SomeLinesTooLongAreSkippedAndCounted) {
  dialtree::testing::TempDir dir;
  write_corpus_head(dir.file("c.txt"), 3000);
  {
    std::ofstream out(dir.file("c.txt"), std::ios::app | std::ios::binary);
    out << std::string(5000, 'x') << "\n\n   \n" << std::string(4193, 'y') << "\n";
  }
  SentencePieceTrainOptions o;
  o.inputs = {dir.file("c.txt")};
  o.out_dir = dir.file("out");
  o.vocab_size = 300;
  const auto r = train_sentencepiece(o);
  // The first 3000 corpus lines hold 6 blank ones; blank lines are not counted.
  EXPECT_EQ(r.lines, 2996u);
  EXPECT_EQ(r.lines_too_long, 2u);
  EXPECT_EQ(r.lines_used, 2994u);
  EXPECT_EQ(r.vocab_size, 300);
}

TEST(SentencePieceTrain, NoLinesIsAnError) {
  dialtree::testing::TempDir dir;
  // Whitespace, control characters and U+3000 only: SentencePiece's normaliser would empty
  // every line, and its unigram trainer then aborts the process instead of returning an error.
  write_text(dir.file("empty.txt"), "\n  \n\n\x01\x02\t\n\xe3\x80\x80\r\n");
  SentencePieceTrainOptions o;
  o.inputs = {dir.file("empty.txt")};
  o.out_dir = dir.file("out");
  try {
    train_sentencepiece(o);
    FAIL() << "no exception";
  } catch (const TokenizerError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no non-blank lines"));
  }
}

TEST(SentencePieceTrain, BadInputsAndOptionsAreTokenizerErrors) {
  dialtree::testing::TempDir dir;
  write_corpus_head(dir.file("c.txt"), 50);
  SentencePieceTrainOptions o;
  o.inputs = {dir.file("c.txt")};
  o.out_dir = dir.file("out");
  o.vocab_size = 100;

  auto missing = o;
  missing.inputs = {dir.file("c.txt"), dir.file("missing.txt")};
  try {
    train_sentencepiece(missing);
    FAIL() << "no exception";
  } catch (const TokenizerError& e) {
    EXPECT_THAT(e.what(), HasSubstr("missing.txt"));
  }

  auto type = o;
  type.model_type = "word";
  EXPECT_THROW(train_sentencepiece(type), TokenizerError);
  auto norm = o;
  norm.normalization = "nfd";
  EXPECT_THROW(train_sentencepiece(norm), TokenizerError);

  {
    std::ofstream out(dir.file("bad.txt"), std::ios::binary);
    out << "fine line\nbroken \xff line\n";
  }
  auto bad = o;
  bad.inputs = {dir.file("bad.txt")};
  try {
    train_sentencepiece(bad);
    FAIL() << "no exception";
  } catch (const TokenizerError& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.txt"));
    EXPECT_THAT(e.what(), HasSubstr("line 2"));
  }
}

TEST(SentencePieceTrain, SentencePieceStatusErrorBecomesTokenizerError) {
  // 50 short lines cannot support 5000 pieces: SentencePiece reports a status error, which must
  // arrive as a TokenizerError carrying its message, with nothing written.
  dialtree::testing::TempDir dir;
  write_corpus_head(dir.file("c.txt"), 50);
  SentencePieceTrainOptions o;
  o.inputs = {dir.file("c.txt")};
  o.out_dir = dir.file("out");
  o.vocab_size = 5000;
  try {
    train_sentencepiece(o);
    FAIL() << "no exception";
  } catch (const TokenizerError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Vocabulary size too high"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("out/spm.model")));
}

TEST(SentencePieceTrain, DeterministicAndSampled) {
  dialtree::testing::TempDir dir;
  write_corpus_head(dir.file("c.txt"), 4000);
  SentencePieceTrainOptions o;
  o.inputs = {dir.file("c.txt")};
  o.vocab_size = 300;
  o.max_sentences = 2500;
  o.seed = 7;
  o.out_dir = dir.file("a");
  const auto a = train_sentencepiece(o);
  o.out_dir = dir.file("b");
  const auto b = train_sentencepiece(o);
  EXPECT_EQ(a.lines, 3992u);  // 8 of the first 4000 corpus lines are blank
  EXPECT_EQ(a.lines_used, 2500u);
  EXPECT_EQ(read_all(a.model_path), read_all(b.model_path));
  o.seed = 8;
  o.out_dir = dir.file("c");
  const auto c = train_sentencepiece(o);
  EXPECT_EQ(c.lines_used, 2500u);
  EXPECT_NE(read_all(a.model_path), read_all(c.model_path));
}

// Byte fallback: characters the corpus never had (an emoji, a CJK word) become byte pieces, not
// [UNK], and decode() gives the text back; without it they are [UNK]. Tabs and newlines are
// spaces after nmt_nfkc either way (the documented newline policy).
TEST(SentencePieceTrain, ByteFallbackKeepsCharactersOutsideTheVocabulary) {
  dialtree::testing::TempDir dir;
  write_corpus_head(dir.file("c.txt"), 3000);
  SentencePieceTrainOptions o;
  o.inputs = {dir.file("c.txt")};
  o.vocab_size = 600;
  o.out_dir = dir.file("plain");
  const SentencePieceTokenizer plain(train_sentencepiece(o).model_path);
  o.byte_fallback = true;
  o.out_dir = dir.file("bytes");
  const SentencePieceTokenizer bytes(train_sentencepiece(o).model_path);
  EXPECT_EQ(bytes.vocab_size(), 600);
  EXPECT_EQ(bytes.token_to_id("<0xF0>"), bytes.token_to_id("<0x00>") + 0xF0);

  const std::string text = "book a table \xF0\x9F\x98\x80 \xE4\xBD\xA0\xE5\xA5\xBD";
  const std::vector<std::int32_t> unk = plain.encode(text);
  EXPECT_NE(std::find(unk.begin(), unk.end(), plain.special().unk), unk.end());
  const std::vector<std::int32_t> ids = bytes.encode(text);
  EXPECT_EQ(std::find(ids.begin(), ids.end(), bytes.special().unk), ids.end());
  // The emoji is its four UTF-8 bytes.
  const std::vector<std::int32_t> emoji = {bytes.token_to_id("<0xF0>"), bytes.token_to_id("<0x9F>"),
                                           bytes.token_to_id("<0x98>"),
                                           bytes.token_to_id("<0x80>")};
  EXPECT_NE(std::search(ids.begin(), ids.end(), emoji.begin(), emoji.end()), ids.end());
  EXPECT_EQ(bytes.decode(ids), text);

  EXPECT_EQ(bytes.encode("book\ta\ntable"), bytes.encode("book a table"));
}

// With identity normalisation and byte fallback a newline or tab is its own byte piece: its
// offsets cover that character, never an empty span after it; only the whitespace a "▁" stands
// for is left out of a word's span.
TEST(SentencePieceTrain, ByteWhitespacePiecesCoverTheirOwnCharacter) {
  dialtree::testing::TempDir dir;
  write_corpus_head(dir.file("c.txt"), 3000);
  SentencePieceTrainOptions o;
  o.inputs = {dir.file("c.txt")};
  o.vocab_size = 600;
  o.byte_fallback = true;
  o.normalization = "identity";
  o.out_dir = dir.file("identity");
  const SentencePieceTokenizer tok(train_sentencepiece(o).model_path);
  const std::int32_t newline = tok.token_to_id("<0x0A>"), tab = tok.token_to_id("<0x09>");
  for (const std::string text : {"a\nb", "\nfoo", "book\ta table"}) {
    SCOPED_TRACE(text);
    std::vector<bool> covered(text.size(), false);
    for (const TokenSpan& span : tok.encode_with_offsets(text)) {
      ASSERT_LE(span.begin, span.end);
      for (std::size_t b = span.begin; b < span.end; ++b) covered[b] = true;
      if (span.id == newline || span.id == tab) {
        EXPECT_EQ(span.end, span.begin + 1);
        EXPECT_TRUE(text[span.begin] == '\n' || text[span.begin] == '\t');
      }
    }
    // Every byte but the spaces that "▁" stands for belongs to a token.
    for (std::size_t b = 0; b < text.size(); ++b) {
      if (text[b] != ' ') EXPECT_TRUE(covered[b]) << "byte " << b;
    }
  }
}

TEST(SentencePieceTrain, BpeAndCaseFoldingModels) {
  dialtree::testing::TempDir dir;
  write_corpus_head(dir.file("c.txt"), 3000);
  SentencePieceTrainOptions o;
  o.inputs = {dir.file("c.txt")};
  o.vocab_size = 400;
  o.model_type = "bpe";
  o.normalization = "nmt_nfkc_cf";
  o.out_dir = dir.file("bpe");
  const auto r = train_sentencepiece(o);
  SentencePieceTokenizer tok(r.model_path);
  EXPECT_EQ(tok.vocab_size(), 400);
  EXPECT_EQ(tok.id_to_token(2), "[CLS]");
  EXPECT_EQ(tok.id_to_token(8), "<eos_r>");
  EXPECT_EQ(tok.normalization(), "nmt_nfkc_cf");
  EXPECT_TRUE(tok.lower_case());
  EXPECT_EQ(tok.encode("May I Cancel My Card"), tok.encode("may i cancel my card"));
  EXPECT_EQ(tok.decode(tok.encode("May I Cancel My Card")), "may i cancel my card");
}

}  // namespace
}  // namespace dialtree::data
