// The dialtree binary end to end: exit statuses (0 / 1 / 2) and "error: ..." on stderr, --out
// safety, options that do not apply, temporary files removed on Ctrl-C / SIGTERM / SIGHUP, and
// where `tokenizer train` prints its summary and warnings. Runs DIALTREE_BINARY_DIR/cli/dialtree,
// so build the `dialtree` target first (scripts/test.sh builds everything).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "process_util.h"
#include "test_paths.h"

namespace dialtree {
namespace {

namespace fs = std::filesystem;
using dialtree::testing::shared_data;
using dialtree::testing::TempDir;
using namespace dialtree::testing::process;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(binary())) << binary() << " is missing: build the dialtree target";
    fs::create_directories(tmp_.path() / "banking");
    fs::copy_file(shared_data("dialoglue/banking/categories.json"),
                  tmp_.path() / "banking/categories.json");
    spit(tmp_.file("banking/train.csv"), "text,category\nwhere is my card?,card_arrival\n");
  }
  std::string dir() const { return tmp_.path().string(); }
  TempDir tmp_;
};

TEST_F(Cli, PrintConfigSettingsTableTakesNoConfig) {
  Result r = run({"print-config", "--settings-table", "finetune"}, dir());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("| key | type | default | range | help |"));
  // An override after the table name is not taken for a config file.
  r = run({"print-config", "--settings-table", "trainer", "lr=1"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--settings-table prints a table and takes no config or "
                               "overrides, got 'lr=1'"));
  r = run({"print-config", "--settings-table", "bogus"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--settings-table"));
  // An empty config name is a config that cannot be read, not a missing argument.
  r = run({"print-config", ""}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, Not(HasSubstr("config is required")));
  r = run({"print-config"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("config is required"));
}

TEST_F(Cli, ExitStatusesAndErrorLines) {
  // Usage errors found by CLI11: 2 (was 105, 106, 109 ...), with "error: ".
  Result r = run({"sts", "convert", "--bogus"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: "));
  r = run({"tokenizer", "train", "--input", "missing.txt", "--out", "tok"}, dir());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err, "error: cannot open training input 'missing.txt': No such file or directory\n");
  r = run({"sts", "convert", "--format", "intent-csv", "--input", "missing.csv", "--out", "o.jsonl",
           "--source", "x", "--categories", "banking/categories.json"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("missing.csv: cannot open file for reading: No such file"));
  // A missing file in the root directory said "cannot name the dataset after the folder".
  r = run({"sts", "convert", "--format", "intent-csv", "--input", "/missing-dialtree.csv", "--out",
           "o.jsonl"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err,
              HasSubstr("/missing-dialtree.csv: cannot open file for reading: No such file"));
  r = run({"sts", "score", "--a", "missing.json", "--b", "missing.json"}, dir());
  EXPECT_EQ(r.status, 2);
  r = run({"tokenizer", "train", "--input", "x", "--out", "t", "--vocab-size", "5"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--vocab-size"));
  // A mistyped or missing command is named, with the commands there are (it was "A subcommand
  // is required" for all three).
  r = run({"frobnicate"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: unknown command 'frobnicate' for 'dialtree' (commands: "));
  EXPECT_THAT(r.err, HasSubstr("train"));  // the LibTorch commands are listed too
  r = run({"eval", "prbe"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'prbe' for 'dialtree eval'"));
  EXPECT_THAT(r.err, HasSubstr("did you mean 'probe'?"));
  r = run({"sts"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: 'dialtree sts' needs a command: convert, score\n"));
  r = run({"sts", "--bogus"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: unknown option '--bogus' for 'dialtree sts', which needs "
                                "a command first: convert, score\n"));
  // An unknown option of a command with required options is named, not "--model is required".
  r = run({"serve", "--bogus"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: unknown option '--bogus' for 'dialtree serve'\n"));
  r = run({"eval", "dialoglue", "--taks", "banking"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: unknown option '--taks' for 'dialtree eval dialoglue'; "
                                "did you mean '--tasks'?\n"));
  r = run({}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: 'dialtree' needs a command: sts, tokenizer"));
  EXPECT_THAT(r.err, HasSubstr("serve"));
  // A bad boolean says what is expected (CLI11: "Could not convert: --normalize = maybe").
  r = run({"embed", "--model", ".", "--normalize", "maybe"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: --normalize: expected true or false, got 'maybe'\n"));
  // A training config whose tokenizer folder is missing names the key and how to make one
  // (with eval_steps it said "a model bundle must carry tokenizer.json": a new user's first run).
  spit(tmp_.file("c.yaml"),
       "output_dir: out\neval_steps: 10\ndata:\n  tokenizer: tok\n  labelled: [a.jsonl]\n");
  r = run({"train", "c.yaml"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("field 'data.tokenizer': the tokenizer directory does not exist"));
  EXPECT_THAT(r.err, HasSubstr("dialtree tokenizer train"));
  // --help and --version stay 0.
  EXPECT_EQ(run({"--help"}, dir()).status, 0);
  EXPECT_EQ(run({"sts", "convert", "--help"}, dir()).status, 0);
  r = run({"--version"}, dir());
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.out.empty());
  // A folder given as a file.
  r = run({"sts", "convert", "--format", "text", "--input", "banking", "--out", "o.jsonl"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: banking: is a directory, not a file\n");
}

TEST_F(Cli, HfImportAndExportAreWiredWithExitStatus2OnBadInput) {
  // model/hf_interop is tested in tests/model; here: the subcommands exist and map errors.
  fs::create_directories(tmp_.path() / "pt");
  spit(tmp_.file("pt/config.json"), "{}");
  spit(tmp_.file("pt/pytorch_model.bin"), "not read");
  Result r = run({"import-hf", "--from", "pt", "--out", "bundle"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "error: pt/pytorch_model.bin: is a PyTorch pickle, which dialtree does not read "
            "(unpickling can run code); convert it to model.safetensors first "
            "(docs/hf-interop.md)\n");
  EXPECT_FALSE(fs::exists(tmp_.path() / "bundle"));
  r = run({"export", "--model", "pt", "--format", "onnx", "--out", "o"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--format"));
  r = run({"export", "--model", "missing", "--out", "o"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--model: no model bundle folder at 'missing'"));
  EXPECT_FALSE(fs::exists(tmp_.path() / "o"));
}

TEST_F(Cli, OutSafety) {
  const std::vector<std::string> conv = {"sts",     "convert",           "--format", "intent-csv",
                                         "--input", "banking/train.csv", "--out"};
  auto with = [&](std::vector<std::string> a, std::vector<std::string> more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  Result r = run(with(conv, {"/dev/full"}), dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("is a character device"));
  struct stat st;
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/full was replaced";

  r = run(with(conv, {"banking/train.csv"}), dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("is the same file as --input"));
  EXPECT_EQ(slurp(tmp_.file("banking/train.csv")),
            "text,category\nwhere is my card?,card_arrival\n");
  r = run(with(conv, {"banking/categories.json"}), dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("is the same file as --categories"));
  r = run(with(conv, {""}), dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("empty"));

  // A symbolic link: its target is written, the link stays.
  spit(tmp_.file("real.jsonl"), "old\n");
  fs::create_symlink("real.jsonl", tmp_.file("link.jsonl"));
  r = run(with(conv, {"link.jsonl"}), dir());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(tmp_.file("link.jsonl")));
  EXPECT_THAT(slurp(tmp_.file("real.jsonl")),
              StartsWith(R"({"format":"sts/1","id":"banking/train/0")"));

  // tokenizer train: --out may not be an input, nor contain one.
  spit(tmp_.file("corpus.txt"), "hello world\n");
  r = run({"tokenizer", "train", "--input", "corpus.txt", "--out", "corpus.txt"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("is the same file as --input"));
  r = run({"tokenizer", "train", "--input", "corpus.txt", "--out", "."}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("lies inside --out"));
  EXPECT_TRUE(fs::exists(tmp_.file("corpus.txt")));
  // Found by a break test (2026-12-03). embed: --output may not be --input either.
  spit(tmp_.file("texts.txt"), "hello\nworld\n");
  fs::create_directories(tmp_.file("some-bundle"));
  r = run({"embed", "--model", "some-bundle", "--input", "texts.txt", "--output", "texts.txt"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--output 'texts.txt' is the same file as --input 'texts.txt'"));
  EXPECT_EQ(slurp(tmp_.file("texts.txt")), "hello\nworld\n");
}

// Integer flags take plain decimal within range: CLI11 alone wraps "-1" to 2^64 - 1 for an
// unsigned flag and saturates past 2^64 (found by a break test, 2026-12-03).
TEST_F(Cli, IntegerFlagsAreDecimalAndInRange) {
  spit(tmp_.file("corpus.txt"), "hello world\n");
  const std::vector<std::string> train = {"tokenizer", "train", "--input",     "corpus.txt",
                                          "--out",     "tok",   "--vocab-size"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = train;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  Result r = run(with({"50", "--max-sentences", "-1"}), dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(
      r.err,
      HasSubstr("--max-sentences: expected a whole number >= 0 written in decimal, got '-1'"));
  r = run(with({"50", "--max-sentences", "18446744073709551617"}), dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("'18446744073709551617' is out of range"));
  r = run(with({"050"}), dir());  // octal to CLI11 (40), not 50
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err,
              HasSubstr("--vocab-size: expected a whole number written in decimal, got '050'"));
  EXPECT_FALSE(fs::exists(tmp_.file("tok")));
  // The environment twin of an unsigned flag goes through the same check.
  fs::create_directories(tmp_.file("a-bundle"));
  ::setenv("DIALTREE_BATCH_SIZE", "-1", 1);
  r = run({"embed", "--model", "a-bundle"}, dir());
  ::unsetenv("DIALTREE_BATCH_SIZE");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("DIALTREE_BATCH_SIZE=-1 (the environment twin of --batch-size)"));
  // An input format is checked by its settings row alone (one list of the formats).
  r = run({"embed", "--model", "a-bundle", "--input-format", "xml"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--input-format: must be text or jsonl, got \"xml\""));
  // A --model that is not a folder is named as such before anything loads.
  r = run({"tokenizer", "encode", "--model", "nowhere", "--text", "hi"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--model: no tokenizer folder at 'nowhere'"));
  r = run({"embed", "--model", "corpus.txt"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("'corpus.txt' is a file, not a model bundle folder"));
}

TEST_F(Cli, SourceAndDomainOptions) {
  // The id does not depend on how --input is spelled.
  Result r = run(
      {"sts", "convert", "--format", "intent-csv", "--input", "train.csv", "--out", "../rel.jsonl"},
      tmp_.file("banking"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = run({"sts", "convert", "--format", "intent-csv", "--input", tmp_.file("banking/train.csv"),
           "--out", "abs.jsonl"},
          dir());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(tmp_.file("rel.jsonl")), slurp(tmp_.file("abs.jsonl")));
  EXPECT_THAT(slurp(tmp_.file("abs.jsonl")),
              HasSubstr(R"("id":"banking/train/0","source":"banking")"));

  r = run({"sts", "convert", "--format", "intent-csv", "--input", "banking/train.csv", "--out",
           "o.jsonl", "--source", ""},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--source must not be empty"));
  r = run({"sts", "convert", "--format", "intent-csv", "--input", "banking/train.csv", "--out",
           "o.jsonl", "--domain", ""},
          dir());
  EXPECT_EQ(r.status, 2);
  r = run({"sts", "convert", "--format", "text", "--input", "banking/train.csv", "--out", "o.jsonl",
           "--domain", "x"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--domain does not apply to --format text"));
  r = run({"sts", "convert", "--help"}, dir());
  EXPECT_THAT(r.out, HasSubstr("text: the file's stem"));
  EXPECT_THAT(r.out, HasSubstr("sgd: \"sgd\""));
}

TEST_F(Cli, ScoreInputs) {
  spit(tmp_.file("rec.json"),
       R"({"format":"sts/1","id":"a/b/0","source":"a","turns":[{"role":"user","text":"x"}]})");
  Result r = run({"sts", "score", "--a", "rec.json", "--b", "rec.json"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("this is an sts/1 dialog record; pass a label tree or one turn"));
  spit(tmp_.file("turn.json"), R"({"role":"user","text":"hi"})");
  r = run({"sts", "score", "--a", "turn.json", "--b", "turn.json"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("has no label"));
  spit(tmp_.file("bad.json"),
       R"({"text":"hi","label":{"d":{"i":{"s":[{"value":"x","span":[0,2]}]}}}})");
  r = run({"sts", "score", "--a", "bad.json", "--b", "bad.json"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("text[0:2] is 'hi' but the value is 'x'"));
  spit(tmp_.file("bool.json"), R"({"d":{"i":{"s":[false]}}})");
  EXPECT_EQ(run({"sts", "score", "--a", "bool.json", "--b", "bool.json"}, dir()).status, 2);
  spit(tmp_.file("ok.json"),
       R"({"text":"hi","label":{"d":{"i":{"s":[{"value":"hi","span":[0,2]}]}}}})");
  r = run({"sts", "score", "--a", "ok.json", "--b", "ok.json"}, dir());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("combined 1"));
  r = run({"sts", "score", "--help"}, dir());
  EXPECT_THAT(r.out, HasSubstr("scores 0 against every tree"));
}

// `eval probe`: usage errors exit 2 before any model is loaded (the probe itself:
// tests/eval/probe_model_test.cpp).
TEST_F(Cli, EvalProbeErrors) {
  fs::create_directories(tmp_.path() / "bundle");
  Result r =
      run({"eval", "probe", "--model", "bundle", "--data", ".", "--tasks", "banking,atis"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown task 'atis' (the probe is for the intent tasks: banking, "
                               "clinc, hwu; and the tagging tasks: restaurant8k, dstc8, top)"));
  r = run({"eval", "probe", "--model", "bundle", "--data", ".", "--protocols", "mteb,bogus"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown probe protocol 'bogus' (valid: dialoglue-few, mteb)"));
  r = run({"eval", "probe", "--model", "bundle", "--data", ".", "--split", "train"}, dir());
  EXPECT_EQ(r.status, 2);
  r = run({"eval", "probe", "--model", "nowhere", "--data", "."}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("no model bundle folder at 'nowhere'"));
  r = run({"eval", "probe", "--model", "bundle", "--data", "."}, dir());  // empty folder
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("bundle"));
  r = run({"eval", "probe", "--model", "bundle", "--data", ".", "--C", "0"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("C must be > 0"));
}

// `eval pseudo-label`: usage errors exit 2 before any model is loaded, and nothing is written
// (the labelling itself: tests/eval/pseudo_label_test.cpp).
TEST_F(Cli, EvalPseudoLabelErrors) {
  fs::create_directories(tmp_.path() / "bundle");
  const std::string data = shared_data("dialoglue");
  Result r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data, "--out-dir", "pl",
                  "--tasks", "hwu,top"},
                 dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown task 'top' (pseudo-labels are for the intent tasks"));
  r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data, "--out-dir", "pl",
           "--per-label", "0"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("per_label must be >= 1, got 0"));
  r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data, "--out-dir", "pl",
           "--tasks", "hwu,hwu"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--tasks: 'hwu' is given twice"));
  r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data, "--out-dir", "pl",
           "--tasks", "hwu"},
          dir());
  EXPECT_EQ(r.status, 2);  // an empty bundle folder: nothing written, the folders made removed
  EXPECT_THAT(r.err, HasSubstr("bundle"));
  EXPECT_FALSE(fs::exists(tmp_.path() / "pl"));
  r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data, "--out-dir",
           "new/deeper/pl/", "--tasks", "hwu"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(fs::exists(tmp_.path() / "new"));  // every folder the command made, and only those
  fs::create_directories(tmp_.path() / "mine");
  std::ofstream(tmp_.path() / "mine" / "notes.txt") << "kept";
  r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data, "--out-dir", "mine/pl",
           "--tasks", "hwu"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(fs::exists(tmp_.path() / "mine" / "pl"));
  EXPECT_TRUE(fs::exists(tmp_.path() / "mine" / "notes.txt"));
  fs::create_directories(tmp_.path() / "empty-before");
  r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data, "--out-dir", "empty-before",
           "--tasks", "hwu"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(fs::is_directory(tmp_.path() / "empty-before"));  // not the command's to remove
  std::ofstream(tmp_.path() / "file2") << "x";
  r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data, "--out-dir", "file2/sub",
           "--tasks", "hwu"},
          dir());
  EXPECT_EQ(r.status, 2);  // before the (empty) bundle is read
  EXPECT_THAT(r.err, HasSubstr("--out-dir: cannot create the folder 'file2/sub'"));
  std::ofstream(tmp_.path() / "file") << "x";
  r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data, "--out-dir", "file"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--out-dir: 'file' exists and is not a folder"));
  r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--out-dir is required"));
  // --teacher TASK=DIR: the pairs are checked before anything is read.
  const std::vector<std::pair<std::string, std::string>> teachers = {
      {"bundle", "--teacher 'bundle': expected TASK=DIR"},
      {"top=bundle", "top is not one of --tasks"},
      {"hwu=nowhere", "nowhere is not a folder"}};
  for (const auto& [value, message] : teachers) {
    r = run({"eval", "pseudo-label", "--model", "bundle", "--data", data, "--out-dir", "pl",
             "--tasks", "hwu", "--teacher", value},
            dir());
    EXPECT_EQ(r.status, 2) << value;
    EXPECT_THAT(r.err, HasSubstr(message)) << value;
  }
  r = run({"eval", "pseudo-label", "--data", data, "--out-dir", "pl", "--tasks", "hwu,banking",
           "--teacher", "hwu=bundle", "--teacher", "hwu=bundle"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--teacher: hwu is given twice"));
  r = run({"eval", "pseudo-label", "--data", data, "--out-dir", "pl", "--tasks", "hwu,banking",
           "--teacher", "hwu=bundle"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--model is required unless every task has a --teacher"));
  r = run({"eval", "pseudo-label", "--data", data, "--out-dir", "pl", "--tasks", "hwu", "--teacher",
           "hwu=bundle"},
          dir());
  EXPECT_EQ(r.status, 2);  // no --model needed; the teacher's (empty) folder is what fails
  EXPECT_THAT(r.err, HasSubstr("bundle"));
  EXPECT_FALSE(fs::exists(tmp_.path() / "pl"));
  // eval dialoglue, failing after its --out folder was made (the bundle folder is empty), leaves
  // no folder behind either.
  r = run({"eval", "dialoglue", "--model", "bundle", "--data-dir", data, "--out", "ev/out",
           "--tasks", "hwu", "--seeds", "1"},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("bundle"));
  EXPECT_FALSE(fs::exists(tmp_.path() / "ev"));
}

// `eval score`: DialoGLUE's answer key scored against itself, the default --gold lookup
// ($DIALTREE_DATA, then ../shared/data/dialoglue relative to the working directory), errors.
TEST_F(Cli, EvalScore) {
  const std::string gold = shared_data("dialoglue/gt_test.json");
  Result r =
      run({"eval", "score", "--task", "banking", "--predictions", gold, "--gold", gold}, dir());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "banking accuracy 100.00 (3080 examples)\n");
  r = run({"eval", "score", "--task", "dstc8_sgd", "--predictions", gold, "--gold", gold}, dir());
  EXPECT_EQ(r.out, "dstc8 slot F1 100.00 (1813 examples)\n");
  // --json: the per-type figures slot F1 averages (dstc8's 12 slot types in its answer key).
  r = run({"eval", "score", "--task", "dstc8", "--predictions", gold, "--gold", gold, "--json"},
          dir());
  const nlohmann::json types = nlohmann::json::parse(r.out).at("slot_types");
  ASSERT_EQ(types.size(), 12u);
  EXPECT_EQ(types[0].at("type"), "area");
  EXPECT_NEAR(types[0].at("f1").get<double>(), 100.0, 1e-2);
  EXPECT_EQ(types[0].at("true_positives"), types[0].at("to_recall"));
  r = run({"eval", "score", "--task", "top", "--predictions", gold, "--gold", gold, "--json"},
          dir());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"task\":\"top\""));
  EXPECT_THAT(r.out, HasSubstr("\"value\":1.0"));
  EXPECT_THAT(r.out, HasSubstr("\"count\":9042"));

  // A few-shot submission (dump_outputs_fewshot.py: a list of runs per task): every run, then
  // mean ± std. Two runs: the answer key itself and a copy with 770 of banking's labels wrong.
  nlohmann::json key = nlohmann::json::parse(std::ifstream(gold));
  nlohmann::json worse = key.at("banking");
  for (std::size_t i = 0; i < 770; ++i)
    worse[i] = worse[i] == "card_arrival" ? "age_limit" : "card_arrival";
  std::ofstream(tmp_.file("few.json"))
      << nlohmann::json({{"banking", {key.at("banking"), worse}}}).dump();
  r = run({"eval", "score", "--task", "banking", "--predictions", "few.json", "--gold", gold}, dir());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "run 1: banking accuracy 100.00 (3080 examples)\n"
            "run 2: banking accuracy 75.00 (3080 examples)\n"
            "banking accuracy 87.50 ± 17.68 over 2 runs (sample std; 3080 examples each)\n");

  // Word-level tags of a tagger outside dialtree: `eval words` writes the test words and gold
  // tags, which score 100 after DialoGLUE's piece spreading; a line with a tag short is refused.
  r = run({"eval", "words", "--task", "restaurant8k", "--split", "test", "--data-dir",
           fs::path(gold).parent_path().string(), "--out", "r8k.jsonl"},
          dir());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "restaurant8k test: 3731 examples -> r8k.jsonl\n");
  r = run({"eval", "score", "--task", "restaurant8k", "--word-tags", "r8k.jsonl", "--data-dir",
           fs::path(gold).parent_path().string(), "--gold", gold},
          dir());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "restaurant8k slot F1 100.00 (3731 examples)\n");
  {
    std::ifstream in(tmp_.file("r8k.jsonl"));
    std::ofstream short_tags(tmp_.file("short.jsonl"));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      nlohmann::json j = nlohmann::json::parse(line);
      if (n == 2) j["tags"].erase(j["tags"].size() - 1);
      short_tags << j.dump() << "\n";
    }
  }
  r = run({"eval", "score", "--task", "restaurant8k", "--word-tags", "short.jsonl", "--data-dir",
           fs::path(gold).parent_path().string(), "--gold", gold},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("short.jsonl: line 2: field 'tags':"));
  // A tag outside the task's vocabulary could never be right: refused, naming line and field.
  {
    std::ifstream in(tmp_.file("r8k.jsonl"));
    std::ofstream bad(tmp_.file("badtag.jsonl"));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      nlohmann::json j = nlohmann::json::parse(line);
      if (n == 3) j["tags"][0] = "b-time";
      bad << j.dump() << "\n";
    }
  }
  r = run({"eval", "score", "--task", "restaurant8k", "--word-tags", "badtag.jsonl", "--data-dir",
           fs::path(gold).parent_path().string(), "--gold", gold},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("badtag.jsonl: line 3: field 'tags[0]': tag 'b-time' is not in"));
  // `eval words` never writes over the data it reads.
  r = run({"eval", "words", "--task", "restaurant8k", "--data-dir",
           fs::path(gold).parent_path().string(), "--out",
           (fs::path(gold).parent_path() / "restaurant8k" / "test.json").string()},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("refusing to overwrite an input"));
  // A few-shot file with a run of the wrong length names the run.
  nlohmann::json short_run = key.at("banking");
  short_run.erase(short_run.size() - 1);
  std::ofstream(tmp_.file("few-short.json"))
      << nlohmann::json({{"banking", {key.at("banking"), short_run}}}).dump();
  r = run({"eval", "score", "--task", "banking", "--predictions", "few-short.json", "--gold", gold},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("few-short.json run 2"));
  r = run({"eval", "score", "--task", "banking", "--word-tags", "r8k.jsonl", "--gold", gold}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--word-tags applies to the tagging tasks"));
  r = run({"eval", "score", "--task", "restaurant8k", "--gold", gold}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("give one of --predictions"));

  // Default gold: $DIALTREE_DATA/gt_test.json (no ../shared beside the temporary folder).
  const char* saved = std::getenv("DIALTREE_DATA");
  const std::string saved_value = saved ? saved : "";
  ::setenv("DIALTREE_DATA", fs::path(gold).parent_path().c_str(), 1);
  r = run({"eval", "score", "--task", "hwu", "--predictions", gold}, dir());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hwu accuracy 100.00 (1076 examples)\n");
  ::setenv("DIALTREE_DATA", (tmp_.path() / "nodata").c_str(), 1);
  r = run({"eval", "score", "--task", "hwu", "--predictions", gold}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("no DialoGLUE answer key"));
  EXPECT_THAT(r.err, HasSubstr("github.com/alexa/dialoglue"));
  if (saved) {
    ::setenv("DIALTREE_DATA", saved_value.c_str(), 1);
  } else {
    ::unsetenv("DIALTREE_DATA");
  }

  spit(tmp_.file("preds.json"), "[\"card_arrival\", 17]");
  r = run({"eval", "score", "--task", "banking", "--predictions", "preds.json", "--gold", gold},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: preds.json: record 1: must be a string, got integer\n");
  spit(tmp_.file("preds.json"), "[\"card_arrival\"]");
  r = run({"eval", "score", "--task", "banking", "--predictions", "preds.json", "--gold", gold},
          dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("has 1 banking predictions but"));
  r = run({"eval", "score", "--task", "multiwoz", "--predictions", "preds.json"}, dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--task multiwoz needs --dataset-config"));
  r = run({"eval", "score", "--task", "banking77", "--predictions", "preds.json"}, dir());
  EXPECT_EQ(r.status, 2);

  // MultiWOZ: TripPy records carry their own gold; turn 1 predicts dontcare for "centre".
  spit(tmp_.file("trippy.json"),
       R"({"class_types": ["none", "dontcare", "copy_value", "true", "false", "inform", "refer"],
           "slots": ["hotel-area"], "label_maps": {"centre": ["center"]}})");
  spit(tmp_.file("pred_res.json"),
       R"([{"guid": ["test", "D.json", "0"], "class_label_id_hotel-area": 2,
            "class_prediction_hotel-area": 2, "slot_groundtruth_hotel-area": "centre",
            "slot_prediction_hotel-area": "center"},
           {"guid": ["test", "D.json", "1"], "class_label_id_hotel-area": 0,
            "class_prediction_hotel-area": 1, "slot_groundtruth_hotel-area": "centre",
            "slot_prediction_hotel-area": "dontcare"}])");
  r = run({"eval", "score", "--task", "multiwoz", "--predictions", "pred_res.json",
           "--dataset-config", "trippy.json"},
          dir());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "multiwoz joint goal accuracy 50.00 (2 turns)\n");
}

/// A DialoGLUE folder under `root` with an hwu task of two intents, one row per split.
void write_two_intent_hwu(const fs::path& root) {
  const fs::path data = root / "hwu";
  fs::create_directories(data);
  spit((data / "categories.json").string(), "[\"a\", \"b\"]");
  for (const char* split : {"train", "train_10", "val", "test"}) {
    spit((data / (std::string(split) + ".csv")).string(), "text,category\nhi there,a\nbye now,b\n");
  }
}

TEST_F(Cli, EvalOutputFoldersResolveDotDotAsTheKernelDoes) {
  // "made/a/../b" created made/a as well, which then kept made/ from being removed when the
  // command failed (a break test, 2026-12-04). A ".." after a missing folder is refused, as
  // every output path is (B9), before anything is made.
  write_two_intent_hwu(tmp_.path() / "data");
  fs::create_directories(tmp_.path() / "bundle");
  Result r = run({"eval", "pseudo-label", "--model", "bundle", "--tasks", "hwu", "--data", "data",
                  "--out-dir", "made/a/../b"},
                 dir());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--out-dir: "));
  EXPECT_THAT(r.err, HasSubstr(".."));
  EXPECT_FALSE(fs::exists(tmp_.file("made")));
  // Through a folder that exists, ".." is fine; the failing load then removes what it made.
  fs::create_directories(tmp_.path() / "there");
  r = run({"eval", "pseudo-label", "--model", "bundle", "--tasks", "hwu", "--data", "data",
           "--out-dir", "there/../made/b"},
          dir());
  EXPECT_EQ(r.status, 2) << r.err;  // the bundle folder is empty
  EXPECT_FALSE(fs::exists(tmp_.file("made")));
  EXPECT_TRUE(fs::exists(tmp_.file("there")));
}

class CliSignals : public Cli, public ::testing::WithParamInterface<int> {};

// An interrupted conversion leaves no temporary file: the input is a FIFO nobody writes to, so
// dialtree waits in open() with its --out temporary file already created.
TEST_P(CliSignals, InterruptedConvertLeavesNoTemporaryFile) {
  ASSERT_EQ(::mkfifo(tmp_.file("in.txt").c_str(), 0600), 0);
  TempDir io;
  const pid_t pid = start(
      {"sts", "convert", "--format", "text", "--input", "in.txt", "--out", "out.jsonl"}, dir(), io);
  bool temp_seen = false;
  for (int i = 0; i < 1000 && !temp_seen; ++i) {
    for (const auto& e : fs::directory_iterator(tmp_.path())) {
      temp_seen = temp_seen || e.path().filename().string().rfind("out.jsonl.tmp.", 0) == 0;
    }
    if (!temp_seen) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(temp_seen) << "dialtree never created its temporary file";
  ::kill(pid, GetParam());
  const Result r = finish(pid, io);
  EXPECT_EQ(r.status, -GetParam()) << r.err;
  for (const auto& e : fs::directory_iterator(tmp_.path())) {
    EXPECT_THAT(e.path().filename().string(), Not(HasSubstr(".tmp."))) << "left behind";
  }
  EXPECT_FALSE(fs::exists(tmp_.file("out.jsonl")));
}

// An interrupted eval command removes the output folders it made while they are empty (they
// stayed on a signal: a README walk-through, 2026-12-04). The model's config.json is a FIFO
// nobody writes to, so the command waits in its load with --out-dir already created.
TEST_P(CliSignals, InterruptedEvalRemovesTheEmptyFoldersItMade) {
  write_two_intent_hwu(tmp_.path() / "data");
  fs::create_directories(tmp_.path() / "bundle");
  ASSERT_EQ(::mkfifo(tmp_.file("bundle/config.json").c_str(), 0600), 0);
  TempDir io;
  const pid_t pid = start({"eval", "pseudo-label", "--model", "bundle", "--tasks", "hwu", "--data",
                           "data", "--out-dir", "made/here"},
                          dir(), io);
  for (int i = 0; i < 1500 && !fs::exists(tmp_.file("made/here")); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(fs::exists(tmp_.file("made/here"))) << "the command never made its folder";
  ::kill(pid, GetParam());
  const Result r = finish(pid, io);
  EXPECT_EQ(r.status, -GetParam()) << r.err;
  EXPECT_FALSE(fs::exists(tmp_.file("made"))) << "an empty folder it made was left behind";
  EXPECT_TRUE(fs::exists(tmp_.file("bundle/config.json")));  // nothing else is touched
}

INSTANTIATE_TEST_SUITE_P(Signals, CliSignals, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(i.param == SIGINT    ? "SIGINT"
                                              : i.param == SIGTERM ? "SIGTERM"
                                                                   : "SIGHUP");
                         });

TEST_F(Cli, TokenizerTrainPrintsOneSummaryAndWarnsOnStderr) {
  {
    std::ifstream in(shared_data("dialoglue/mlm_all_no_multiwoz.txt"));
    std::ofstream out(tmp_.file("c.txt"));
    std::string line;
    for (int i = 0; i < 300 && std::getline(in, line); ++i) out << line << '\n';
    out << std::string(5000, 'x') << '\n';  // one line too long: a warning
  }
  const Result r = run({"tokenizer", "train", "--input", "c.txt", "--out", "tok", "--vocab-size",
                        "150", "--threads", "1"},
                       dir());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("trained 150 pieces on 300 of 301 lines (1 too long"));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_THAT(r.err, HasSubstr("warning: "));
  EXPECT_THAT(r.err, HasSubstr("longer than max_sentence_length"));
  EXPECT_THAT(r.err, Not(HasSubstr("pieces from")));
  EXPECT_TRUE(fs::exists(tmp_.file("tok/tokenizer.json")));

  const Result threads = run(
      {"tokenizer", "train", "--input", "c.txt", "--out", "tok2", "--threads", "100000"}, dir());
  EXPECT_EQ(threads.status, 2);
  EXPECT_THAT(threads.err, HasSubstr("--threads 100000 must be in [1, "));
  EXPECT_FALSE(fs::exists(tmp_.file("tok2")));
}

}  // namespace
}  // namespace dialtree
