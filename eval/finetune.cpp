#include "eval/finetune.h"

#include "common/clock.h"
#include "common/malloc_info.h"
#include "eval/finetune_step.h"
#include "eval/intent_inputs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include <torch/nn/functional/loss.h>

#include "model/torch_api.h"

#include "common/batching.h"
#include "data/masking.h"
#include "data/serialize.h"
#include "eval/eval_config.h"
#include "eval/probe.h"
#include "eval/probe_model.h"
#include "model/bundle.h"
#include "model/collate.h"
#include "model/device.h"
#include "model/encoder.h"
#include "trainer/step.h"

namespace dialtree::eval {
namespace {

using Clock = std::chrono::steady_clock;

void check_options(const FinetuneOptions& o) {
  if (const auto problem = finetune_options_problem(o)) {
    throw std::invalid_argument("fine-tuning: " + problem->first + " " + problem->second);
  }
}

/// The fine-tuning model: the bundle's architecture with an intent head of `num_labels`
/// classes, every other weight copied from the bundle (unless from_scratch).
model::SpaceModel build_model(const model::LoadedBundle& base, std::int64_t num_labels,
                              std::int64_t num_tags, const FinetuneOptions& o) {
  model::EncoderConfig cfg = base.model->config();
  cfg.num_labels = num_labels;
  cfg.num_tags = num_tags;
  if (o.dropout >= 0) {
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = o.dropout;
    cfg.embedding_dropout_prob = cfg.ffn_dropout_prob = o.dropout;
  }
  model::SpaceModel net(cfg);
  if (!o.from_scratch) {
    std::unordered_map<std::string, torch::Tensor> from;
    for (const auto& [name, t] : model::model_tensors(*base.model)) from.emplace(name, t);
    torch::NoGradGuard no_grad;
    for (auto& [name, p] : model::model_tensors(*net)) {
      // The new heads keep their initialisation.
      if (model::is_task_head_tensor(name)) continue;
      const auto it = from.find(name);
      if (it != from.end() && it->second.sizes() == p.sizes()) p.copy_(it->second);
    }
  }
  return net;
}

std::vector<data::SerializedExample> pick(const std::vector<data::SerializedExample>& all,
                                          const std::vector<std::size_t>& idx) {
  std::vector<data::SerializedExample> out;
  out.reserve(idx.size());
  for (std::size_t i : idx) out.push_back(all[i]);
  return out;
}

/// Runs `run(indices, inputs)` under eval mode and inference mode on every batch of `xs` that
/// plan_batches chooses (longest first, `batch_size` each; results do not depend on the
/// grouping because padding is masked). `indices` are the batch's positions in `xs`.
void for_each_eval_batch(
    model::SpaceModel& net, const std::vector<data::SerializedExample>& xs, int batch_size,
    const std::function<void(const std::vector<std::size_t>&, const model::EncoderInputs&)>& run) {
  std::vector<std::size_t> lengths;
  lengths.reserve(xs.size());
  for (const auto& x : xs) lengths.push_back(x.input_ids.size());
  net->eval();
  torch::InferenceMode guard;
  const torch::Device device = model::module_device(*net);
  for (const auto& part : plan_batches(lengths, {static_cast<std::size_t>(batch_size), 0})) {
    run(part, model::to_device(model::collate(pick(xs, part)), device));
  }
}

/// Arg-max along the last axis as int64 values, contiguous, copied to the CPU.
std::vector<std::int64_t> argmax_ids(const torch::Tensor& logits) {
  const torch::Tensor a =
      logits.to(torch::kFloat32).argmax(-1).to(torch::kCPU, torch::kInt64).contiguous();
  return {a.data_ptr<std::int64_t>(), a.data_ptr<std::int64_t>() + a.numel()};
}

/// Intent class of every example, in input order.
std::vector<int> predict_intents(model::SpaceModel& net,
                                 const std::vector<data::SerializedExample>& xs, int batch_size,
                                 bool bf16) {
  std::vector<int> out(xs.size(), -1);
  for_each_eval_batch(net, xs, batch_size,
                      [&](const std::vector<std::size_t>& part, const model::EncoderInputs& in) {
                        const auto ids = predict_intent_batch(net, in, bf16);
                        for (std::size_t k = 0; k < part.size(); ++k) {
                          out[part[k]] = static_cast<int>(ids[k]);
                        }
                      });
  return out;
}

/// The shared fine-tuning loop: AdamW with linear warm-up and decay over
/// num_train_epochs x ceil(n / batch) steps, seeded batch order, clipping, a val score after
/// every epoch; the best epoch's weights (earliest on ties) are restored at the end.
struct LoopResult {
  int best_epoch = 0;
  double best_score = -1;
  double seconds = 0, step_seconds = 0;
  std::vector<EpochInfo> curve;  ///< one per epoch run
};

LoopResult train_and_select(
    model::SpaceModel& net, std::size_t n_train, const FinetuneOptions& o, std::uint64_t seed,
    const std::function<torch::Tensor(const std::vector<std::size_t>&)>& batch_loss,
    const std::function<double()>& validate,
    const std::function<void(const EpochInfo&)>& on_epoch) {
  const auto bs = static_cast<std::size_t>(o.per_device_train_batch_size);
  const auto steps_per_epoch = static_cast<std::int64_t>((n_train + bs - 1) / bs);
  const std::int64_t total = steps_per_epoch * o.num_train_epochs;
  const auto warmup =
      static_cast<std::int64_t>(std::ceil(o.warmup_ratio * static_cast<double>(total)));
  auto opt = trainer::make_adamw(net, o.learning_rate, o.weight_decay, 0.9, 0.999, o.adam_epsilon);
  LoopResult r;
  std::vector<torch::Tensor> best;
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> order(n_train);
  std::iota(order.begin(), order.end(), 0);
  std::int64_t step = 0;
  const auto start = Clock::now();
  int since_best = 0;  // epochs since the val metric last improved (early stopping)
  for (int epoch = 1; epoch <= o.num_train_epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    net->train();
    double loss_sum = 0;
    const auto t_epoch = Clock::now();
    for (std::size_t b = 0; b < order.size(); b += bs) {
      const std::vector<std::size_t> batch(
          order.begin() + static_cast<std::ptrdiff_t>(b),
          order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), b + bs)));
      trainer::set_lr(*opt, o.learning_rate * trainer::lr_factor(step, warmup, total));
      opt->zero_grad();
      const torch::Tensor loss = batch_loss(batch);
      loss.backward();
      if (o.max_grad_norm > 0)
        torch::nn::utils::clip_grad_norm_(net->parameters(), o.max_grad_norm);
      opt->step();
      ++step;
      loss_sum += loss.item<double>();
      // Each packed batch has its own tensor sizes, so pages kept by jemalloc (the launcher's
      // MALLOC_CONF for `eval dialoglue`) fragment unless handed back now and then: every 50
      // steps keeps a fine-tuning's resident set flat (docs/build.md P13).
      if (step % kReleaseFreeMemoryEverySteps == 0) release_free_memory();
    }
    const double train_s = seconds_since(t_epoch);
    r.step_seconds += train_s;
    const double score = validate();
    if (score > r.best_score) {
      r.best_score = score;
      r.best_epoch = epoch;
      since_best = 0;
      best.clear();
      for (const auto& p : net->parameters()) best.push_back(p.detach().clone());
    } else if (step > warmup) {
      ++since_best;  // epochs that end inside the warm-up do not count (docs/evaluation.md)
    }
    const EpochInfo info{epoch,
                         o.num_train_epochs,
                         loss_sum / static_cast<double>(steps_per_epoch),
                         score,
                         static_cast<double>(n_train) / train_s,
                         o.learning_rate * trainer::lr_factor(step - 1, warmup, total)};
    r.curve.push_back(info);
    if (on_epoch) on_epoch(info);
    if (o.early_stopping_patience > 0 && since_best >= o.early_stopping_patience) break;
  }
  r.seconds = seconds_since(start);
  torch::NoGradGuard no_grad;
  auto params = net->parameters();
  for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(best[i]);
  return r;
}

/// The loop's figures every run result carries (IntentRunResult, TaggingRunResult).
template <class Result>
void fill_run_stats(Result& r, const LoopResult& loop, std::size_t n_train) {
  r.best_epoch = loop.best_epoch;
  r.epochs_run = static_cast<int>(loop.curve.size());
  r.curve = loop.curve;
  r.train_seconds = loop.seconds;
  r.train_examples_per_second = static_cast<double>(n_train) * r.epochs_run / loop.step_seconds;
}

double accuracy(const std::vector<int>& predicted, const std::vector<int>& gold) {
  std::size_t right = 0;
  for (std::size_t i = 0; i < gold.size(); ++i) right += predicted[i] == gold[i] ? 1 : 0;
  return gold.empty() ? 0.0 : static_cast<double>(right) / static_cast<double>(gold.size());
}

int find_index(const std::vector<std::string>& names, const std::string& x) {
  const auto it = std::find(names.begin(), names.end(), x);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

}  // namespace

torch::Tensor symmetric_kl(const torch::Tensor& logits_p, const torch::Tensor& logits_q) {
  if (logits_p.sizes() != logits_q.sizes() || logits_p.dim() != 2)
    throw std::invalid_argument("symmetric_kl: logits must both be [B, C] of the same shape");
  const torch::Tensor logp = logits_p.log_softmax(-1), logq = logits_q.log_softmax(-1);
  // ½[KL(p‖q) + KL(q‖p)] = ½ Σ_c (p - q)(log p - log q).
  return 0.5 * ((logp.exp() - logq.exp()) * (logp - logq)).sum(-1).mean();
}

data::SerializeOptions single_turn(const model::EncoderConfig& cfg, int max_utt_len) {
  data::SerializeOptions so;
  so.max_utt_len = static_cast<std::size_t>(
      std::min<std::int64_t>(max_utt_len, cfg.max_position_embeddings - 2));
  so.max_len = so.max_utt_len + 2;
  so.max_ctx_turn = 1;
  return so;
}

std::vector<data::SerializedExample> serialize_texts(const std::vector<std::string>& texts,
                                                     const data::Tokenizer& tok,
                                                     const model::EncoderConfig& cfg,
                                                     int max_utt_len) {
  const data::SerializeOptions so = single_turn(cfg, max_utt_len);
  std::vector<data::SerializedExample> out;
  out.reserve(texts.size());
  for (const auto& text : texts) {
    out.push_back(
        data::serialize_context({data::Utterance{"user", tok.encode(text)}}, tok.special(), so));
  }
  return out;
}

torch::Tensor intent_batch_loss(model::SpaceModel& net, const model::EncoderInputs& inputs,
                                const torch::Tensor& labels, bool bf16,
                                const IntentLossTerms& terms) {
  if (terms.mlm_weight > 0 && terms.masked == nullptr)
    throw std::invalid_argument("intent_batch_loss: mlm_weight > 0 needs the masked batch");
  const bool rdrop = terms.rdrop_weight > 0;
  torch::Tensor logits, mlm;
  {
    model::AutocastScope autocast(bf16, inputs.input_ids.device().type());
    const torch::Tensor hidden = net->forward(rdrop ? trainer::doubled(inputs) : inputs, true);
    logits = net->intent_logits(model::SpaceModelImpl::cls_vector(hidden)).to(torch::kFloat32);
    if (terms.mlm_weight > 0) mlm = trainer::masked_lm_loss(net, *terms.masked).to(torch::kFloat32);
  }
  namespace F = torch::nn::functional;
  torch::Tensor loss;
  if (rdrop) {
    const std::int64_t b = labels.size(0);
    loss = F::cross_entropy(logits, torch::cat({labels, labels}, 0));
    loss =
        loss + terms.rdrop_weight * symmetric_kl(logits.slice(0, 0, b), logits.slice(0, b, 2 * b));
  } else {
    loss = F::cross_entropy(logits, labels);
  }
  if (terms.mlm_weight > 0) loss = loss + terms.mlm_weight * mlm;
  return loss;
}

std::vector<std::int64_t> predict_intent_batch(model::SpaceModel& net,
                                               const model::EncoderInputs& inputs, bool bf16) {
  model::AutocastScope autocast(bf16, inputs.input_ids.device().type());
  return argmax_ids(net->intent_logits(net->forward_cls(inputs)));
}

namespace {

/// LP-FT's first stage (FinetuneOptions::classifier_init "linear_probe"): fits L2 logistic
/// regression to the frozen [CLS] vectors of `texts` and writes it into `net`'s intent head
/// (its rows in label-id order). Two classes: the binary model's w·x + b becomes the softmax pair
/// (−w/2, −b/2), (w/2, b/2), which gives the same probabilities. A label absent from `labels`
/// keeps weight 0 and gets the lowest fitted bias.
void init_classifier_from_probe(model::SpaceModel& net, const data::Tokenizer& tok,
                                const std::vector<std::string>& texts,
                                const std::vector<int>& labels, const FinetuneOptions& o,
                                bool bf16) {
  const ProbeMatrix x =
      embed_texts(*net, tok, texts, o.per_device_eval_batch_size, o.max_utt_len, bf16);
  LogisticOptions lo;
  lo.C = o.linear_probe_c;
  const LogisticModel fit = fit_logistic(x, labels, lo);
  const std::int64_t num_labels = net->config().num_labels, hidden = x.cols();
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(num_labels, hidden);
  Eigen::VectorXd b = Eigen::VectorXd::Constant(num_labels, 0.0);
  if (fit.classes.size() == 2) {
    for (int k = 0; k < 2; ++k) {
      const double sign = k == 0 ? -0.5 : 0.5;
      w.row(fit.classes[k]) = sign * fit.coef.row(0);
      b(fit.classes[k]) = sign * fit.intercept(0);
    }
  } else {
    b.setConstant(fit.intercept.minCoeff());
    for (std::size_t k = 0; k < fit.classes.size(); ++k) {
      w.row(fit.classes[k]) = fit.coef.row(static_cast<Eigen::Index>(k));
      b(fit.classes[k]) = fit.intercept(static_cast<Eigen::Index>(k));
    }
  }
  // Eigen's default storage is column-major: transpose into a row-major float copy.
  const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> wf = w.cast<float>();
  const Eigen::VectorXf bf = b.cast<float>();
  const torch::Tensor wt =
      torch::from_blob(const_cast<float*>(wf.data()), {num_labels, hidden}, torch::kFloat32)
          .clone();
  const torch::Tensor bt =
      torch::from_blob(const_cast<float*>(bf.data()), {num_labels}, torch::kFloat32).clone();
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : model::model_tensors(*net)) {
    if (name == "intent_classifier.weight") p.copy_(wt.to(p.device()));
    if (name == "intent_classifier.bias") p.copy_(bt.to(p.device()));
  }
}

}  // namespace

IntentRunResult finetune_intent(const std::string& bundle_dir, const IntentTask& task,
                                const FinetuneOptions& o, std::uint64_t seed,
                                const std::function<void(const EpochInfo&)>& on_epoch,
                                const std::string& save_dir) {
  check_options(o);
  const torch::Device device = model::resolve_device(o.device, "device");
  const bool bf16 = model::effective_bf16(device, o.bf16);
  const model::LoadedBundle base = model::load_bundle(bundle_dir);
  torch::manual_seed(seed);
  model::SpaceModel net = build_model(base, static_cast<std::int64_t>(task.labels.size()), 0, o);
  net->to(device);
  const data::Tokenizer& tok = *base.tokenizer;
  const auto train = serialize_texts(task.train.texts, tok, net->config(), o.max_utt_len);
  const auto val = serialize_texts(task.val.texts, tok, net->config(), o.max_utt_len);
  const auto test = serialize_texts(task.test.texts, tok, net->config(), o.max_utt_len);
  if (o.classifier_init == "linear_probe") {
    init_classifier_from_probe(net, tok, task.train.texts, task.train.labels, o, bf16);
  }

  // MLM masks: one stream per run, from the seed alone (docs/evaluation.md).
  std::mt19937_64 mask_rng(seed ^ 0x6d6c6d2d66746e65ull);
  data::MlmMaskingOptions mask_options;
  mask_options.mask_prob = o.mlm_probability;
  auto batch_loss = [&](const std::vector<std::size_t>& batch) {
    std::vector<std::int64_t> labels;
    for (std::size_t i : batch) labels.push_back(task.train.labels[i]);
    const std::vector<data::SerializedExample> examples = pick(train, batch);
    IntentLossTerms terms{o.rdrop_weight, o.mlm_weight, nullptr};
    model::CollatedBatch masked;
    if (o.mlm_weight > 0) {
      std::vector<data::SerializedExample> copies = examples;
      std::vector<std::vector<std::int32_t>> targets;
      for (auto& x : copies) {
        data::MaskedTokens m =
            data::mask_for_mlm(x, {}, tok.special(), tok.vocab_size(), mask_rng, mask_options);
        x.input_ids = std::move(m.input_ids);
        targets.push_back(std::move(m.labels));
      }
      masked = model::to_device(model::collate(copies, targets), device);
      terms.masked = &masked;
    }
    return intent_batch_loss(net, model::to_device(model::collate(examples), device),
                             torch::tensor(labels, torch::kInt64).to(device), bf16, terms);
  };
  auto validate = [&] {
    const std::vector<int> pred = predict_intents(net, val, o.per_device_eval_batch_size, bf16);
    return accuracy(pred, task.val.labels);
  };
  const LoopResult loop =
      train_and_select(net, train.size(), o, seed, batch_loss, validate, on_epoch);

  IntentRunResult result;
  fill_run_stats(result, loop, train.size());
  result.best_val_accuracy = loop.best_score;
  const auto t_test = Clock::now();
  const std::vector<int> ids = predict_intents(net, test, o.per_device_eval_batch_size, bf16);
  result.predict_examples_per_second = static_cast<double>(test.size()) / seconds_since(t_test);
  result.test_predictions.reserve(ids.size());
  for (int id : ids) result.test_predictions.push_back(task.labels[static_cast<std::size_t>(id)]);
  if (!save_dir.empty()) {
    model::BundleInfo info;
    info.intent_labels = task.labels;
    info.recipe = {{"finetuned_from", bundle_dir},
                   {"seed", seed},
                   {"best_epoch", result.best_epoch},
                   {"best_val_accuracy", result.best_val_accuracy}};
    // The source bundle folder holds tokenizer.json and its model / vocabulary file.
    model::save_bundle(save_dir, *net, bundle_dir, info);
  }
  return result;
}

namespace {

/// The word-level inputs of every example of `xs`, serialised single-turn with `so`.
std::vector<TaggedInput> encode_tagging_examples(const std::vector<TaggingExample>& xs,
                                                 const data::Tokenizer& tok,
                                                 const data::SerializeOptions& so) {
  std::vector<TaggedInput> out;
  out.reserve(xs.size());
  for (const auto& x : xs) out.push_back(encode_words(x.words, tok, so));
  return out;
}

/// The serialised model input of every element of `xs`, in order.
std::vector<data::SerializedExample> tagged_serialized(const std::vector<TaggedInput>& xs) {
  std::vector<data::SerializedExample> out;
  out.reserve(xs.size());
  for (const auto& x : xs) out.push_back(x.input);
  return out;
}

/// The training loss of the tagging examples `batch` (indices into task.train / `train` /
/// `train_in`): cross-entropy of the tags on each word's first sub-word, plus that of the
/// intents when `top`. Computed under autocast when `bf16`.
torch::Tensor tagging_batch_loss(model::SpaceModel& net, const TaggingTask& task,
                                 const std::vector<TaggedInput>& train,
                                 const std::vector<data::SerializedExample>& train_in,
                                 const std::vector<std::size_t>& batch, bool top, bool bf16,
                                 const torch::Device& device) {
  const model::EncoderInputs in = model::to_device(model::collate(pick(train_in, batch)), device);
  // Tag targets on the rows of each word's first sub-word, -100 elsewhere.
  torch::Tensor targets = torch::full({in.input_ids.size(0), in.input_ids.size(1) + 1},
                                      model::kIgnoreLabel, torch::kInt64);
  auto* t = targets.data_ptr<std::int64_t>();
  const std::int64_t width = targets.size(1);
  std::vector<std::int64_t> intents;
  for (std::size_t k = 0; k < batch.size(); ++k) {
    const TaggingExample& ex = task.train[batch[k]];
    const auto& rows = train[batch[k]].first_row;
    for (std::size_t w = 0; w < rows.size(); ++w) {
      if (rows[w] >= 0) {
        t[static_cast<std::int64_t>(k) * width + rows[w]] = find_index(task.tag_labels, ex.tags[w]);
      }
    }
    if (top) intents.push_back(find_index(task.intent_labels, ex.intent));
  }
  torch::Tensor tag_logits, intent_logits;
  {
    model::AutocastScope autocast(bf16, device.type());
    const torch::Tensor hidden = net->forward(in, true);
    tag_logits = net->tag_logits(hidden);
    if (top) intent_logits = net->intent_logits(model::SpaceModelImpl::cls_vector(hidden));
  }
  namespace F = torch::nn::functional;
  torch::Tensor loss =
      F::cross_entropy(tag_logits.to(torch::kFloat32).reshape({-1, tag_logits.size(-1)}),
                       targets.to(device).reshape({-1}),
                       F::CrossEntropyFuncOptions().ignore_index(model::kIgnoreLabel));
  if (top) {
    loss = loss + F::cross_entropy(intent_logits.to(torch::kFloat32),
                                   torch::tensor(intents, torch::kInt64).to(device));
  }
  return loss;
}

/// Word tags ("O" for words without a sub-word) and, when `top`, intents of every example of
/// `xs` (serialised as `xs_in`), into `tags` and `ints`; batches of `batch_size`, under
/// autocast when `bf16`.
void predict_tagging(model::SpaceModel& net, const TaggingTask& task,
                     const std::vector<TaggedInput>& xs,
                     const std::vector<data::SerializedExample>& xs_in, int batch_size, bool top,
                     bool bf16, const torch::Device& device,
                     std::vector<std::vector<std::string>>& tags, std::vector<std::string>& ints) {
  tags.assign(xs.size(), {});
  ints.assign(top ? xs.size() : 0, "");
  for_each_eval_batch(
      net, xs_in, batch_size,
      [&](const std::vector<std::size_t>& part, const model::EncoderInputs& in) {
        const torch::Tensor hidden = [&] {
          model::AutocastScope autocast(bf16, device.type());
          return net->forward(in, true);
        }();
        const auto tag_ids = argmax_ids(net->tag_logits(hidden));
        const std::int64_t width = hidden.size(1);
        std::vector<std::int64_t> intent_ids;
        if (top) {
          intent_ids = argmax_ids(net->intent_logits(model::SpaceModelImpl::cls_vector(hidden)));
        }
        for (std::size_t i = 0; i < part.size(); ++i) {
          const std::size_t x = part[i];
          const auto k = static_cast<std::int64_t>(i);
          for (const std::int64_t row : xs[x].first_row) {
            tags[x].push_back(row < 0 ? "O"
                                      : task.tag_labels[static_cast<std::size_t>(
                                            tag_ids[static_cast<std::size_t>(k * width + row)])]);
          }
          if (top)
            ints[x] = task.intent_labels[static_cast<std::size_t>(
                intent_ids[static_cast<std::size_t>(k)])];
        }
      });
}

/// Saves the fine-tuned tagger `net` as a bundle in `save_dir`, with its label maps and a
/// recipe saying how it reads a text; the tokenizer is copied from `bundle_dir`. Throws what
/// model::save_bundle throws.
void save_tagging_bundle(const std::string& save_dir, model::SpaceModel& net,
                         const std::string& bundle_dir, const TaggingTask& task,
                         const FinetuneOptions& o, std::uint64_t seed,
                         const TaggingRunResult& result) {
  model::BundleInfo info;
  info.tag_labels = task.tag_labels;
  info.intent_labels = task.intent_labels;
  // How the tagger reads a text (docs/evaluation.md "Models per task"), for whoever serves it.
  info.recipe = {
      {"finetuned_from", bundle_dir},
      {"task", task.name},
      {"tagging",
       {{"words", "whitespace"}, {"reads", "first sub-word"}, {"max_utt_len", o.max_utt_len}}},
      {"seed", seed},
      {"best_epoch", result.best_epoch},
      {"best_val_score", result.best_val_score}};
  model::save_bundle(save_dir, *net, bundle_dir, info);
}

}  // namespace

TaggingRunResult finetune_tagging(const std::string& bundle_dir, const TaggingTask& task,
                                  const FinetuneOptions& o, std::uint64_t seed,
                                  const TaggingScorer& val_score,
                                  const std::function<void(const EpochInfo&)>& on_epoch,
                                  const std::string& save_dir) {
  check_options(o);
  if (o.classifier_init != "random") {
    throw std::invalid_argument("fine-tuning: classifier_init " + o.classifier_init +
                                " applies to intent tasks only; tagging tasks (and TOP) start "
                                "their heads at random (classifier_init: random)");
  }
  const torch::Device device = model::resolve_device(o.device, "device");
  const bool bf16 = model::effective_bf16(device, o.bf16);
  const bool top = !task.intent_labels.empty();
  const model::LoadedBundle base = model::load_bundle(bundle_dir);
  torch::manual_seed(seed);
  model::SpaceModel net = build_model(base, static_cast<std::int64_t>(task.intent_labels.size()),
                                      static_cast<std::int64_t>(task.tag_labels.size()), o);
  net->to(device);
  const data::Tokenizer& tok = *base.tokenizer;
  const data::SerializeOptions so = single_turn(net->config(), o.max_utt_len);
  const auto train = encode_tagging_examples(task.train, tok, so),
             val = encode_tagging_examples(task.val, tok, so),
             test = encode_tagging_examples(task.test, tok, so);
  const auto train_in = tagged_serialized(train), val_in = tagged_serialized(val),
             test_in = tagged_serialized(test);

  auto batch_loss = [&](const std::vector<std::size_t>& batch) {
    return tagging_batch_loss(net, task, train, train_in, batch, top, bf16, device);
  };
  const int eval_bs = o.per_device_eval_batch_size;
  auto validate = [&] {
    std::vector<std::vector<std::string>> tags;
    std::vector<std::string> ints;
    predict_tagging(net, task, val, val_in, eval_bs, top, bf16, device, tags, ints);
    return val_score(tags, ints);
  };
  const LoopResult loop =
      train_and_select(net, train.size(), o, seed, batch_loss, validate, on_epoch);

  TaggingRunResult result;
  fill_run_stats(result, loop, train.size());
  result.best_val_score = loop.best_score;
  const auto t_test = Clock::now();
  predict_tagging(net, task, test, test_in, eval_bs, top, bf16, device, result.test_tags,
                  result.test_intents);
  result.predict_examples_per_second = static_cast<double>(test.size()) / seconds_since(t_test);
  if (!save_dir.empty()) save_tagging_bundle(save_dir, net, bundle_dir, task, o, seed, result);
  return result;
}

}  // namespace dialtree::eval
