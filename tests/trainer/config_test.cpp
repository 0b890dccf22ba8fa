// trainer/config: the strict YAML schema of a pretraining run (docs/failure-cases.md C27, C34,
// C37), the committed recipes, command-line overrides and the resolved-config dump.
#include "trainer/config.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "common/error.h"
#include "test_paths.h"

namespace dialtree::trainer {
namespace {

namespace fs = std::filesystem;

fs::path repo_root() {
  return fs::path(DIALTREE_FIXTURES_DIR).parent_path().parent_path();
}

// The committed recipes ask for threads: 2; a smaller machine gets an override.
std::vector<std::string> machine_overrides() {
  return available_cpus() < 2 ? std::vector<std::string>{"threads=1"} : std::vector<std::string>{};
}

// A valid minimal config whose four lines end at line 4; table rows append from line 5.
const std::string kPrefix =
    "output_dir: runs/t\n"
    "data:\n"
    "  tokenizer: tok\n"
    "  labelled: [a.jsonl]\n";

// One expected DataError: exact field and place, and parts that the message must contain.
struct BadCase {
  std::string name;
  std::string yaml;                    // whole document
  std::vector<std::string> overrides;  // applied after it
  std::string file;                    // expected DataError::file()
  std::string where;                   // expected DataError::where()
  std::string field;                   // expected DataError::field()
  std::vector<std::string> parts;      // substrings of what()
};

// kPrefix plus `appended`; the error is expected at `line` of "bad.yaml".
BadCase in_file(std::string name, const std::string& appended, int line, std::string field,
                std::vector<std::string> parts) {
  return {std::move(name),  kPrefix + appended, {}, "bad.yaml", "line " + std::to_string(line),
          std::move(field), std::move(parts)};
}

// A whole document of "bad.yaml".
BadCase whole(std::string name, std::string yaml, std::string where, std::string field,
              std::vector<std::string> parts) {
  return {std::move(name),  std::move(yaml), {}, "bad.yaml", std::move(where),
          std::move(field), std::move(parts)};
}

// kPrefix with one bad override; the error is expected against that override.
BadCase by_override(std::string name, const std::string& override_text, std::string field,
                    std::vector<std::string> parts) {
  return {std::move(name),
          kPrefix,
          {override_text},
          "<command line>",
          "override '" + override_text + "'",
          std::move(field),
          std::move(parts)};
}

void expect_error(const BadCase& c) {
  SCOPED_TRACE(c.name);
  try {
    parse_config(c.yaml, "bad.yaml", c.overrides);
    ADD_FAILURE() << "no error for: " << c.yaml;
  } catch (const DataError& e) {
    EXPECT_EQ(e.file(), c.file) << e.what();
    EXPECT_EQ(e.where(), c.where) << e.what();
    EXPECT_EQ(e.field(), c.field) << e.what();
    for (const auto& part : c.parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "'" << part << "' not in: " << e.what();
    }
  }
}

TEST(Config, CommittedRecipesLoadAndRoundTrip) {
  const auto small =
      load_config((repo_root() / "configs/pretrain-small.yaml").string(), machine_overrides());
  EXPECT_EQ(small.model.num_hidden_layers, 4);
  EXPECT_EQ(small.model.hidden_size, 256);
  EXPECT_EQ(small.model.num_attention_heads, 4);
  EXPECT_EQ(small.model.intermediate_size, 1024);
  EXPECT_EQ(small.model.vocab_size, 0);
  EXPECT_EQ(small.data.tokenizer, "out/tokenizer");  // as written: relative to the working dir
  EXPECT_EQ(small.data.max_len, 128);
  EXPECT_EQ(small.per_device_train_batch_size, 32);
  EXPECT_EQ(small.unlabelled_batch_size, 32);
  EXPECT_TRUE(small.bf16);
  EXPECT_GT(small.max_steps, 0);
  EXPECT_EQ(small.data.labelled.size(), 7u);
  EXPECT_EQ(small.data.unlabelled, std::vector<std::string>{"out/sts/mlm_all.train.jsonl"});
  for (const auto* list : {&small.data.labelled, &small.data.unlabelled}) {
    for (const auto& path : *list) {  // training splits only: never val, eval or test
      EXPECT_EQ(path.find(".val"), std::string::npos) << path;
      EXPECT_EQ(path.find(".eval"), std::string::npos) << path;
      EXPECT_EQ(path.find(".test"), std::string::npos) << path;
    }
  }

  // The intent stage (docs/training.md): the I view alone, one unsharded batch of 128 on the
  // intent tasks' train_10 splits only, no unlabelled stream, the same architecture as small.
  const auto intent =
      load_config((repo_root() / "configs/pretrain-intent.yaml").string(), machine_overrides());
  EXPECT_EQ(intent.model.projection_views, std::vector<std::string>{"I"});
  EXPECT_EQ(intent.data.contrastive_shard_size, 0);
  EXPECT_EQ(intent.per_device_train_batch_size, 128);
  EXPECT_TRUE(intent.data.unlabelled.empty());
  EXPECT_FALSE(intent.model_name_or_path.empty());
  ASSERT_EQ(intent.data.labelled.size(), 3u);
  for (const auto& path : intent.data.labelled)
    EXPECT_NE(path.find(".train_10."), std::string::npos) << path;
  EXPECT_EQ(intent.model.hidden_size, small.model.hidden_size);
  EXPECT_EQ(intent.model.num_hidden_layers, small.model.num_hidden_layers);
  EXPECT_EQ(intent.model.intermediate_size, small.model.intermediate_size);
  EXPECT_EQ(intent.model.max_position_embeddings, small.model.max_position_embeddings);

  // The language stage (docs/results.md "Language first"): MLM alone on the unlabelled
  // utterances, no labelled stream at all, and small's architecture so that the SPACE-2 stage
  // can continue from its bundle.
  const auto lm =
      load_config((repo_root() / "configs/pretrain-lm.yaml").string(), machine_overrides());
  EXPECT_TRUE(lm.data.labelled.empty());
  EXPECT_EQ(lm.data.unlabelled, small.data.unlabelled);
  EXPECT_EQ(lm.loss.contrastive_weight, 0.0);
  EXPECT_EQ(lm.loss.self_supervised_weight, 0.0);
  EXPECT_EQ(lm.loss.mlm_weight, 1.0);
  // 30 % of the sub-words, chosen on val (docs/results.md "Which language stage teaches the
  // encoder more per CPU-minute?"); the other stages keep BERT's 15 %.
  EXPECT_DOUBLE_EQ(lm.loss.mlm_probability, 0.3);
  EXPECT_DOUBLE_EQ(small.loss.mlm_probability, 0.15);
  EXPECT_EQ(lm.model.hidden_size, small.model.hidden_size);
  EXPECT_EQ(lm.model.num_hidden_layers, small.model.num_hidden_layers);
  EXPECT_EQ(lm.model.intermediate_size, small.model.intermediate_size);
  EXPECT_EQ(lm.model.max_position_embeddings, small.model.max_position_embeddings);
  EXPECT_EQ(lm.model.projection_views, small.model.projection_views);

  const auto base = load_config((repo_root() / "configs/pretrain-base.yaml").string());
  // docs/method.md §5 / §4.4: the paper's run.
  EXPECT_EQ(base.model.num_hidden_layers, 12);
  EXPECT_EQ(base.model.hidden_size, 768);
  EXPECT_EQ(base.model.num_attention_heads, 12);
  EXPECT_EQ(base.model.intermediate_size, 3072);
  EXPECT_EQ(base.model.vocab_size, 30522);
  EXPECT_EQ(base.model.hidden_dropout_prob, 0.2);
  EXPECT_EQ(base.model.attention_probs_dropout_prob, 0.2);
  EXPECT_EQ(base.model.embedding_dropout_prob, 0.2);
  EXPECT_EQ(base.model.ffn_dropout_prob, 0.2);
  EXPECT_EQ(base.model.max_turns, 16);
  EXPECT_EQ(base.model.projection_views, sts::view_name_list());
  EXPECT_EQ(base.model.projection_dim, 768);
  EXPECT_EQ(base.per_device_train_batch_size, 128);
  EXPECT_EQ(base.unlabelled_batch_size, 128);
  EXPECT_EQ(base.learning_rate, 1e-5);
  EXPECT_EQ(base.warmup_ratio, 0.1);
  EXPECT_EQ(base.max_grad_norm, 5.0);
  EXPECT_EQ(base.num_train_epochs, 60);
  EXPECT_EQ(base.max_steps, 0);
  EXPECT_EQ(base.seed, 11);
  EXPECT_EQ(base.adam_epsilon, 1e-6);
  EXPECT_EQ(base.weight_decay, 0.0);
  EXPECT_EQ(base.data.max_len, 256);
  EXPECT_EQ(base.data.max_utt_len, 50);
  EXPECT_EQ(base.data.max_ctx_turn, 16);
  EXPECT_EQ(base.data.contrastive_shard_size, 16);
  EXPECT_EQ(base.loss.temperature, 0.07);
  EXPECT_EQ(base.loss.mlm_weight, 0.1);
  EXPECT_EQ(base.threads, available_cpus());  // absent: every available CPU

  for (const auto* c : {&small, &base}) {
    const std::string dumped = dump_config(*c);
    EXPECT_EQ(parse_config(dumped, "dump.yaml"), *c) << dumped;
    EXPECT_EQ(dump_config(parse_config(dumped, "dump.yaml")), dumped);
  }
}

// docs/training.md: "Every key is commented in configs/pretrain-base.yaml". Every key the schema
// dumps is a line of that file, at its section's indent (`threads` as a comment: absent there
// means every CPU), so a key added to the schema and not to the reference recipe fails here.
TEST(Config, ReferenceRecipeListsEveryKey) {
  std::ifstream in(repo_root() / "configs/pretrain-base.yaml");
  ASSERT_TRUE(in) << "configs/pretrain-base.yaml";
  std::set<std::string> listed;
  const std::regex key_line(R"(^(#? *)([a-z_0-9]+):)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, key_line)) listed.insert(m[1].str() + m[2].str());
  }
  const std::string dumped = dump_config(PretrainConfig{});
  std::istringstream keys(dumped);
  int checked = 0;
  for (std::string line; std::getline(keys, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, key_line) || m[1].str().find('#') != std::string::npos) {
      continue;
    }
    const std::string key = m[1].str() + m[2].str();
    ++checked;
    EXPECT_TRUE(listed.count(key) != 0 || listed.count("# " + key) != 0)
        << "'" << key << "' is not in configs/pretrain-base.yaml";
  }
  EXPECT_GT(checked, 60);  // the whole schema was read
}

TEST(Config, BadInputsAreErrorsNamingFileLineKeyAndType) {
  const std::string cpus = std::to_string(available_cpus());
  // clang-format off
  const std::vector<BadCase> cases = {
      // C37: wrong types are never read with a default.
      in_file("quoted float for int", "num_train_epochs: \"1.0\"\n", 5, "num_train_epochs",
              {"expected an integer", "found the string \"1.0\""}),
      in_file("quoted int for int", "num_train_epochs: '3'\n", 5, "num_train_epochs",
              {"expected an integer", "found the string \"3\""}),
      in_file("float for int", "  max_len: 12.5\n", 5, "data.max_len",
              {"expected an integer, found '12.5'"}),
      in_file("exponent for int", "max_steps: 1e3\n", 5, "max_steps",
              {"expected an integer, found '1e3'"}),
      in_file("octal-looking int", "seed: 010\n", 5, "seed",
              {"expected an integer", "leading zeros"}),
      in_file("64-bit overflow", "max_steps: 99999999999999999999\n", 5, "max_steps",
              {"too large for a 64-bit integer"}),
      in_file("32-bit overflow", "threads: 3000000000\n", 5, "threads",
              {"too large for a 32-bit integer"}),
      in_file("words for bool", "bf16: yes please\n", 5, "bf16",
              {"expected a boolean (true or false), found 'yes please'"}),
      in_file("yaml 1.1 bool", "bf16: yes\n", 5, "bf16",
              {"expected a boolean (true or false), found 'yes'"}),
      in_file("int for bool", "bf16: 1\n", 5, "bf16", {"expected a boolean"}),
      in_file("quoted float", "learning_rate: \"1e-4\"\n", 5, "learning_rate",
              {"expected a number, found the string \"1e-4\""}),
      in_file("word for float", "learning_rate: fast\n", 5, "learning_rate",
              {"expected a number, found 'fast'"}),
      in_file("infinite float", "learning_rate: .inf\n", 5, "learning_rate", {"finite"}),
      in_file("list for float", "warmup_ratio: [0.1]\n", 5, "warmup_ratio",
              {"expected a number, found a list"}),
      in_file("null for string", "  trigger_role:\n", 5, "data.trigger_role",
              {"expected a string, found an empty value (null)"}),
      in_file("mapping for string", "  trigger_role: {a: 1}\n", 5, "data.trigger_role",
              {"expected a string, found a mapping"}),
      // Found by a break test (2026-12-03): a string key took true and 5 as the text "true", "5".
      in_file("bool for string", "resume_from_checkpoint: true\n", 5, "resume_from_checkpoint",
              {"expected a string, found a boolean 'true'", "quote it to mean the text: 'true'"}),
      in_file("int for string", "model_name_or_path: 5\n", 5, "model_name_or_path",
              {"expected a string, found an integer '5'"}),
      in_file("float for string", "  trigger_role: 0.5\n", 5, "data.trigger_role",
              {"expected a string, found a number '0.5'"}),
      in_file("int in a string list", "  unlabelled: [u.jsonl, 7]\n", 5, "data.unlabelled[1]",
              {"expected a string, found an integer '7'"}),
      in_file("scalar for list", "  unlabelled: u.jsonl\n", 5, "data.unlabelled",
              {"expected a list of strings, found 'u.jsonl'"}),
      in_file("null for list", "  unlabelled:\n", 5, "data.unlabelled",
              {"expected a list of strings", "write [] for an empty list"}),
      in_file("nested list item", "  unlabelled: [u.jsonl, [v.jsonl]]\n", 5, "data.unlabelled[1]",
              {"expected a string, found a list"}),
      in_file("scalar for section", "model: 5\n", 5, "model",
              {"expected a mapping of 'model' keys, found '5'"}),
      whole("scalar document", "just text\n", "line 1", "",
            {"must be a mapping of keys to values"}),
      // Unknown keys: the full path, and the closest valid key when one is close.
      in_file("typo", "learning_rat: 1.0e-4\n", 5, "learning_rat",
              {"unknown key 'learning_rat' — did you mean 'learning_rate'?"}),
      in_file("typo in section", "model:\n  hiden_size: 64\n", 6, "model.hiden_size",
              {"unknown key 'model.hiden_size' — did you mean 'model.hidden_size'?"}),
      in_file("key in the wrong section", "temperature: 0.1\n", 5, "temperature",
              {"unknown key 'temperature' — did you mean 'loss.temperature'?"}),
      in_file("section key at top", "max_len: 64\n", 5, "max_len",
              {"did you mean 'data.max_len'?"}),
      in_file("other tools' name", "epochs: 3\n", 5, "epochs",
              {"unknown key 'epochs' — did you mean 'num_train_epochs'?"}),
      in_file("alias", "lr: 0.1\n", 5, "lr", {"did you mean 'learning_rate'?"}),
      in_file("case", "Seed: 3\n", 5, "Seed", {"did you mean 'seed'?"}),
      in_file("nothing close", "zqxv: 1\n", 5, "zqxv",
              {"unknown key 'zqxv'; valid keys at the top level: output_dir, max_steps", "loss"}),
      in_file("nothing close in section", "loss:\n  zqxv: 1\n", 6, "loss.zqxv",
              {"valid keys in 'loss:': temperature, base_temperature"}),
      in_file("duplicate key", "seed: 1\nseed: 2\n", 6, "seed", {"duplicate key 'seed'"}),
      // Ranges (C27 for threads), with the allowed range in the message.
      in_file("zero threads", "threads: 0\n", 5, "threads",
              {"must be in [1, " + cpus + "]", "got 0"}),
      in_file("huge threads", "threads: 100000\n", 5, "threads",
              {"must be in [1, " + cpus + "]", "got 100000"}),
      in_file("zero temperature", "loss:\n  temperature: 0\n", 6, "loss.temperature",
              {"must be > 0.0, got 0.0"}),
      in_file("warmup above 1", "warmup_ratio: 1.5\n", 5, "warmup_ratio",
              {"must be in [0.0, 1.0], got 1.5"}),
      in_file("negative warmup", "warmup_ratio: -0.1\n", 5, "warmup_ratio",
              {"must be in [0.0, 1.0], got -0.1"}),
      in_file("negative max_steps", "max_steps: -1\n", 5, "max_steps", {"must be >= 0", "got -1"}),
      in_file("dropout 1", "model:\n  hidden_dropout_prob: 1\n", 6, "model.hidden_dropout_prob",
              {"must be in [0.0, 1.0)"}),
      in_file("beta2 1", "adam_beta2: 1.0\n", 5, "adam_beta2", {"must be in [0.0, 1.0), got 1.0"}),
      in_file("zero batch", "per_device_train_batch_size: 0\n", 5, "per_device_train_batch_size",
              {"must be in [1, "}),
      // Ranges declared in the schema's rows, with their notes, open ends and section prefixes.
      in_file("sequence below its markers", "  max_len: 2\n", 5, "data.max_len",
              {"must be in [3, 1048576] (at least one sub-word and two role markers), got 2"}),
      in_file("mlm probability 1", "loss:\n  mlm_probability: 1\n", 6, "loss.mlm_probability",
              {"must be in (0.0, 1.0), got 1.0"}),
      in_file("straggler ratio 1", "ddp_straggler_ratio: 1\n", 5, "ddp_straggler_ratio",
              {"must be > 1.0, got 1.0"}),
      in_file("zero ddp timeout", "ddp_timeout: 0\n", 5, "ddp_timeout",
              {"must be >= 1 (seconds), got 0"}),
      in_file("unknown device", "device: gpu\n", 5, "device",
              {"\"gpu\" is not a device: use auto, cpu, cuda or cuda:N"}),
      in_file("device ordinal with a leading zero", "device: cuda:01\n", 5, "device",
              {"\"cuda:01\" is not a device"}),
      in_file("unknown scheduler", "lr_scheduler_type: cosine\n", 5, "lr_scheduler_type",
              {"must be one of 'linear', got 'cosine'"}),
      in_file("unknown score mode", "loss:\n  score_mode: mean\n", 6, "loss.score_mode",
              {"must be one of 'per_view', 'combined'"}),
      in_file("unknown language objective", "loss:\n  language_objective: electra\n", 6,
              "loss.language_objective", {"must be one of 'mlm', 'rtd', got 'electra'"}),
      in_file("generator of no depth", "loss:\n  generator_size: 0\n", 6, "loss.generator_size",
              {"must be in (0.0, 1.0], got 0.0"}),
      in_file("rtd without a language weight",
              "loss: {language_objective: rtd, mlm_weight: 0}\n", 5, "loss.mlm_weight",
              {"loss.language_objective rtd needs loss.mlm_weight > 0"}),
      in_file("encoder MLM weight without rtd", "loss: {encoder_mlm_weight: 1}\n", 5,
              "loss.encoder_mlm_weight",
              {"loss.encoder_mlm_weight applies to loss.language_objective rtd only"}),
      in_file("negative encoder MLM weight",
              "loss: {language_objective: rtd, encoder_mlm_weight: -1}\n", 5,
              "loss.encoder_mlm_weight", {"must be >= 0"}),
      in_file("unknown role", "  trigger_role: agent\n", 5, "data.trigger_role",
              {"'user', 'system', 'user_system'"}),
      in_file("unknown view", "model:\n  projection_views: [D, X]\n", 6, "model.projection_views",
              {"must be one of 'D'", "got 'X'"}),
      in_file("repeated view", "model:\n  projection_views: [D, I, D]\n", 6,
              "model.projection_views", {"'D' is listed twice"}),
      in_file("no views", "model:\n  projection_views: []\n", 6, "model.projection_views",
              {"at least one view"}),
      in_file("repeated input", "  unlabelled: [u.jsonl, u.jsonl]\n", 5, "data.unlabelled",
              {"'u.jsonl' is listed twice"}),
      // Cross-field rules: blamed on the key the user set, naming both.
      in_file("heads do not divide", "model:\n  num_attention_heads: 5\n", 6,
              "model.num_attention_heads",
              {"model.hidden_size (768) must be divisible by model.num_attention_heads (5)"}),
      in_file("turn table too small", "  max_ctx_turn: 20\n", 5, "data.max_ctx_turn",
              {"model.max_turns (16) must be at least data.max_ctx_turn (20)"}),
      in_file("positions too few", "model:\n  max_position_embeddings: 40\n", 6,
              "model.max_position_embeddings", {"at least data.max_utt_len + 2 (52)"}),
      in_file("utterance longer than sequence", "  max_len: 40\n", 5, "data.max_len",
              {"data.max_utt_len (50) plus its two role markers must fit"}),
      in_file("shard does not divide", "  contrastive_shard_size: 5\n", 5,
              "data.contrastive_shard_size",
              {"data.contrastive_shard_size (5) must divide per_device_train_batch_size (128)"}),
      in_file("shard of one", "  contrastive_shard_size: 1\n", 5, "data.contrastive_shard_size",
              {"must be in [2, ", "(or 0 = the whole batch), got 1"}),
      // Batches that share values (docs/training.md): a view name, and groups inside a shard.
      in_file("unknown grouping view", "  group_by_view: value\n", 5, "data.group_by_view",
              {"must be \"\" (random batches) or one of the views D, I, S, V,", "got 'value'"}),
      in_file("group splits a shard", "  group_by_view: V\n  group_size: 3\n", 6,
              "data.group_size",
              {"data.group_size (3) must divide data.contrastive_shard_size (16)"}),
      in_file("group of one", "  group_size: 1\n", 5, "data.group_size",
              {"must be in [2, ", "switched off by data.group_by_view \"\"", "got 1"}),
      in_file("group splits a batch",
              "  contrastive_shard_size: 0\n  group_by_view: SV\n  group_size: 3\n", 7,
              "data.group_size",
              {"data.group_size (3) must divide per_device_train_batch_size (128)",
               "split between batches"}),
      whole("grouping without labels",
            "output_dir: o\ndata:\n  tokenizer: t\n  labelled: []\n  unlabelled: [u.txt]\n"
            "  group_by_view: V\n",
            "line 6", "data.group_by_view", {"data.labelled is empty"}),
      whole("token term without labels",
            "output_dir: o\ndata:\n  tokenizer: t\n  labelled: []\n  unlabelled: [u.txt]\n"
            "loss: {token_contrastive_weight: 0.5}\n",
            "line 4", "data.labelled", {"loss.token_contrastive_weight > 0 needs labelled data"}),
      in_file("negative token term weight", "loss: {token_contrastive_weight: -1}\n", 5,
              "loss.token_contrastive_weight", {"must be >= 0"}),
      whole("no inputs", "output_dir: o\ndata:\n  tokenizer: t\n  labelled: []\n", "line 4",
            "data.labelled", {"both empty"}),
      in_file("no loss", "loss: {contrastive_weight: 0, mlm_weight: 0}\n", 5, "loss.mlm_weight",
              {"every loss term has weight 0"}),
      whole("missing output_dir", "data: {tokenizer: t, labelled: [a]}\n", "", "output_dir",
            {"field 'output_dir': is required: the run directory"}),
      whole("missing tokenizer", "output_dir: o\ndata: {labelled: [a]}\n", "", "data.tokenizer",
            {"is required: the tokenizer directory"}),
      whole("empty tokenizer", "output_dir: o\ndata:\n  tokenizer: ''\n  labelled: [a]\n", "line 3",
            "data.tokenizer", {"is required"}),
      // YAML itself.
      in_file("syntax error", "  unlabelled: [u.jsonl\nseed: 3\n", 6, "",
              {"YAML syntax error", "column"}),
      whole("bad indentation", "output_dir: o\n  seed: 3\n", "line 2", "", {"YAML syntax error"}),
      in_file("two documents", "---\nseed: 3\n", 6, "", {"expected one YAML document, found 2"}),
      // A document that begins with ',' made yaml-cpp 0.7's LoadAll loop forever (fuzzing,
      // docs/failure-cases.md F1).
      // Invalid UTF-8 in a string could not survive dump_config (fuzzing, failure-cases F2).
      whole("invalid UTF-8 string", "output_dir: o\ndata:\n  tokenizer: t\xe5\x07\n  labelled: [a]\n",
            "line 3", "data.tokenizer", {"expected a UTF-8 string", "invalid UTF-8 at byte 2"}),
      whole("invalid UTF-8 list item", "output_dir: o\ndata:\n  tokenizer: t\n  labelled: [a, \xc5\xc5]\n",
            "line 4", "data.labelled[1]", {"invalid UTF-8 at byte 1"}),
      whole("leading comma", ",", "line 1", "", {"',' cannot begin a YAML node outside [ ] or { }"}),
      whole("comma after an anchor", "&x , a", "line 1", "", {"column 4: ',' cannot begin"}),
      whole("comma document", "seed: 3\n---\n,", "line 3", "",
            {"expected one YAML document, found 2 or more"}),
      // Overrides: the same rules, reported against the override.
      by_override("override typo", "model.hiden_size=3", "model.hiden_size",
                  {"did you mean 'model.hidden_size'?"}),
      by_override("override unknown section", "train.learning_rat=1", "train.learning_rat",
                  {"unknown key 'train.learning_rat' — did you mean 'learning_rate'?"}),
      by_override("override too deep", "model.hidden_size.x=1", "model.hidden_size.x",
                  {"unknown key"}),
      by_override("override type", "data.max_len=12.5", "data.max_len",
                  {"expected an integer, found '12.5'"}),
      by_override("override quoted", "seed=\"5\"", "seed", {"expected an integer"}),
      by_override("override list type", "data.labelled=a.jsonl", "data.labelled",
                  {"expected a list of strings"}),
      by_override("override without =", "seed", "", {"key.sub=value"}),
      by_override("override bad yaml", "data.labelled=[a", "data.labelled", {"not valid YAML"}),
      by_override("override breaks a rule", "model.num_attention_heads=5",
                  "model.num_attention_heads", {"must be divisible"}),
      by_override("override range", "threads=0", "threads", {"must be in [1, " + cpus + "]"}),
      // Both keys of the rule are lines of the file; the override that broke it is named.
      {"override breaks a rule set in the file",
       kPrefix + "model:\n  hidden_size: 256\n  num_attention_heads: 4\n",
       {"model.hidden_size=7"}, "<command line>", "override 'model.hidden_size=7'",
       "model.hidden_size", {"must be divisible"}},
  };
  // clang-format on
  for (const auto& c : cases) expect_error(c);

  // Files: missing, a directory, and errors inside a real file name it and the line.
  const std::string missing = "/nonexistent/cfg.yaml";
  try {
    load_config(missing);
    ADD_FAILURE() << "no error for a missing file";
  } catch (const DataError& e) {
    EXPECT_EQ(e.file(), missing);
    EXPECT_NE(std::string(e.what()).find("cannot read the config: No such file"), std::string::npos)
        << e.what();
  }
  testing::TempDir dir;
  EXPECT_THROW(load_config(dir.path().string()), DataError);
  const std::string file = dir.file("broken.yaml");
  std::ofstream(file) << kPrefix << "seed: [1\n";
  try {
    load_config(file);
    ADD_FAILURE() << "no error for a syntax error";
  } catch (const DataError& e) {
    EXPECT_EQ(e.file(), file);
    EXPECT_EQ(e.where(), "line 6") << e.what();
    EXPECT_NE(std::string(e.what()).find("YAML syntax error"), std::string::npos) << e.what();
  }
}

TEST(Config, OverridesDefaultsAndResolution) {
  // Defaults apply only to absent keys: a minimal config is the struct's defaults.
  const auto minimal = parse_config(kPrefix, "min.yaml");
  PretrainConfig expected;
  expected.output_dir = "runs/t";
  expected.data.tokenizer = "tok";
  expected.data.labelled = {"a.jsonl"};
  EXPECT_EQ(minimal, expected);
  EXPECT_EQ(minimal.threads, available_cpus());
  EXPECT_EQ(minimal.learning_rate, 1e-5);
  EXPECT_EQ(minimal.adam_epsilon, 1e-6);
  EXPECT_EQ(minimal.loss.temperature, 0.07);
  EXPECT_EQ(minimal.data.contrastive_shard_size, 16);

  // data_seed follows seed only when absent (C34: it never comes from anything else).
  EXPECT_EQ(parse_config(kPrefix + "seed: 5\n", "s.yaml").data_seed, 5);
  EXPECT_EQ(parse_config(kPrefix + "seed: 5\ndata_seed: 7\n", "s.yaml").data_seed, 7);
  EXPECT_EQ(parse_config(kPrefix, "s.yaml", {"seed=9"}).data_seed, 9);
  // The embedding and FFN dropouts follow hidden_dropout_prob only when absent.
  const auto drop =
      parse_config(kPrefix + "model: {hidden_dropout_prob: 0.3, ffn_dropout_prob: 0}\n", "d.yaml");
  EXPECT_EQ(drop.model.embedding_dropout_prob, 0.3);
  EXPECT_EQ(drop.model.ffn_dropout_prob, 0.0);

  // An empty data.group_by_view, from the command line or a blank YAML value, is off.
  EXPECT_EQ(parse_config(kPrefix + "  group_by_view: SV\n", "g.yaml", {"data.group_by_view="})
                .data.group_by_view,
            "");
  EXPECT_EQ(parse_config(kPrefix + "  group_by_view:\n", "g.yaml").data.group_by_view, "");
  // Null sections keep the defaults; null resume_from_checkpoint means none.
  const auto nulls = parse_config(kPrefix + "model:\nloss:\nresume_from_checkpoint:\n", "n.yaml");
  EXPECT_EQ(nulls, expected);
  // Present values equal to a default are still read, and YAML forms of numbers are accepted.
  const auto forms = parse_config(kPrefix +
                                      "learning_rate: 1\nweight_decay: .5\nadam_epsilon: 1e-8\n"
                                      "max_grad_norm: +2.\nbf16: True\nloss: {temperature: 0.07}\n",
                                  "f.yaml");
  EXPECT_EQ(forms.learning_rate, 1.0);
  EXPECT_EQ(forms.weight_decay, 0.5);
  EXPECT_EQ(forms.adam_epsilon, 1e-8);
  EXPECT_EQ(forms.max_grad_norm, 2.0);
  EXPECT_TRUE(forms.bf16);

  // Overrides: nested keys, list values, whole sections, later ones win, applied before
  // validation (a bad file value can be fixed on the command line).
  const auto o = parse_config(
      kPrefix + "threads: 0\n", "o.yaml",
      {"threads=1", "data.max_len=64", " learning_rate = 3e-4", "data.labelled=[x.jsonl, y.jsonl]",
       "data.unlabelled=[]", "model={hidden_size: 128, num_attention_heads: 2}", "seed=1", "seed=2",
       "resume_from_checkpoint=", "output_dir=runs/o v"});
  EXPECT_EQ(o.threads, 1);
  EXPECT_EQ(o.data.max_len, 64);
  EXPECT_EQ(o.learning_rate, 3e-4);
  EXPECT_EQ(o.data.labelled, (std::vector<std::string>{"x.jsonl", "y.jsonl"}));
  EXPECT_TRUE(o.data.unlabelled.empty());
  EXPECT_EQ(o.model.hidden_size, 128);
  EXPECT_EQ(o.model.num_attention_heads, 2);
  EXPECT_EQ(o.model.num_hidden_layers, 12);  // the rest of the section keeps its defaults
  EXPECT_EQ(o.seed, 2);
  EXPECT_EQ(o.resume_from_checkpoint, "");
  EXPECT_EQ(o.output_dir, "runs/o v");

  // Round trip through the dump, including strings that need quotes and awkward doubles.
  PretrainConfig odd = expected;
  odd.output_dir = "true";
  odd.resume_from_checkpoint = "";
  odd.data.tokenizer = "0123";
  odd.data.labelled = {"a: b.jsonl", "# c.jsonl", "-d.jsonl", "null", "yes", "1e5", "é ü.jsonl"};
  odd.learning_rate = 1.0 / 3.0;
  odd.weight_decay = 1e300;
  odd.adam_epsilon = 5e-324;
  odd.warmup_ratio = 0.0;
  odd.max_grad_norm = 100000.0;
  odd.model.projection_views = {"DISV", "I"};
  odd.threads = 1;
  odd.data_seed = 123456789012345;
  const std::string dumped = dump_config(odd);
  EXPECT_EQ(parse_config(dumped, "odd.yaml"), odd) << dumped;
  EXPECT_NE(dumped.find("learning_rate: 0.3333333333333333"), std::string::npos) << dumped;
  EXPECT_NE(dumped.find("adam_epsilon: 5.0e-324"), std::string::npos) << dumped;
  EXPECT_NE(dumped.find("max_grad_norm: 100000.0"), std::string::npos) << dumped;
  EXPECT_NE(dumped.find("projection_views: [DISV, I]"), std::string::npos) << dumped;
  EXPECT_EQ(parse_config(dump_config(expected), "e.yaml"), expected);
  EXPECT_NE(dump_config(expected).find("adam_epsilon: 1.0e-6"), std::string::npos);
  // Every key appears exactly once in the dump.
  const YAML::Node node = YAML::Load(dumped);
  for (const auto& key : config_keys()) {
    const auto dot = key.find('.');
    const YAML::Node v =
        dot == std::string::npos ? node[key] : node[key.substr(0, dot)][key.substr(dot + 1)];
    EXPECT_TRUE(v.IsDefined()) << key;
  }
  EXPECT_EQ(config_keys().size(), 80u);

  // Paths stay as written (relative to the working directory), and inputs are checked on demand.
  testing::TempDir dir;
  const std::string cfg = dir.file("cfg.yaml");
  std::ofstream(cfg) << "output_dir: out\ndata:\n  tokenizer: " << dir.file("tok")
                     << "\n  labelled: [" << dir.file("a.jsonl") << ", rel/b.jsonl]\n";
  const auto rel = load_config(cfg);
  EXPECT_EQ(rel.data.labelled[1], "rel/b.jsonl");
  try {
    check_inputs_exist(rel);
    ADD_FAILURE() << "missing tokenizer not reported";
  } catch (const DataError& e) {
    EXPECT_EQ(e.field(), "data.tokenizer");
  }
  fs::create_directory(dir.file("tok"));
  std::ofstream(dir.file("a.jsonl")) << "{}\n";
  try {
    check_inputs_exist(rel);
    ADD_FAILURE() << "missing input not reported";
  } catch (const DataError& e) {
    EXPECT_EQ(e.field(), "data.labelled[1]");
    EXPECT_EQ(e.file(), "rel/b.jsonl");
  }
  auto fixed = rel;
  fixed.data.labelled.pop_back();
  EXPECT_NO_THROW(check_inputs_exist(fixed));
}

}  // namespace
}  // namespace dialtree::trainer
