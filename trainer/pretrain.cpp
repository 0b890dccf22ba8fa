// The pretraining run (trainer/pretrain.h): set-up, checkpoints, evaluation and the loop. Over
// 800 lines because its sections (starting weights, batch streams, checkpoints, set-up steps,
// evaluation, the loop) all work on the one `Run` state declared here; every unit with a state
// of its own lives in its own file: the step (step.h), checkpoint folders (run_dir.h), step
// statistics (step_stats.h), the metrics log (log_window.h), health checks (health_monitor.h)
// and fault injection (fault_injection.h).
#include "trainer/pretrain.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include <fmt/core.h>
#include <fmt/format.h>
#include <torch/serialize.h>  // optimiser state in checkpoints; the rest: trainer/step.h
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/blas_kernels.h"
#include "common/error.h"
#include "common/json_util.h"
#include "common/malloc_info.h"
#include "data/masking.h"
#include "data/tokenizer_factory.h"
#include "losses/contrastive.h"
#include "losses/objective.h"
#include "model/bundle.h"
#include "model/collate.h"
#include "model/device.h"
#include "model/encoder.h"
#include "trainer/batching.h"
#include "trainer/distributed.h"
#include "trainer/fault_injection.h"
#include "trainer/health.h"
#include "trainer/health_monitor.h"
#include "trainer/log_window.h"
#include "trainer/observer.h"
#include "trainer/pretrain_data.h"
#include "trainer/run_dir.h"
#include "trainer/step.h"
#include "trainer/step_stats.h"

namespace dialtree::trainer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Tags that make the masking and the dropout seeds of a micro-batch independent streams.
constexpr std::uint64_t kMaskTag = 0x6d61736bull;     // "mask"
constexpr std::uint64_t kDropoutTag = 0x64726f70ull;  // "drop"

// The seed of stream `tag` for global micro-batch `n` (0-based over the whole run, counted as
// if one process consumed every batch; data-parallel rank r of a step with base index m
// takes micro-batches m + micro * world_size + r). Depends on nothing else, so the MLM masks
// and dropout masks of a batch are the same under any world size and after a resume.
std::uint64_t micro_seed(std::int64_t seed, std::uint64_t tag, std::int64_t n) {
  return splitmix64(splitmix64(static_cast<std::uint64_t>(seed) ^ tag) +
                    static_cast<std::uint64_t>(n));
}

// ---------------------------------------------------------------------------------------------
// Starting weights (model_name_or_path)

// Copies the weights of the bundle `dir` into `net`, whose architecture `want` comes from the
// config's model: section. Every architecture key must agree (the message names the model.* key
// and both values); an intent / tag head in the bundle is left out, as pretraining has none.
// Returns the number of tensors copied. @throws DataError naming the bundle file.
std::size_t init_from_bundle(model::SpaceModelImpl& net, const model::EncoderConfig& want,
                             const std::string& dir) {
  const std::string config_file = (fs::path(dir) / model::kEncoderConfigFile).string();
  const model::EncoderConfig have = model::read_encoder_config(dir);
  // Every key that shapes the weights must agree; dropouts and the initialisation may change,
  // the views are matched below, the heads are left out and the ids come from the tokenizer.
  static const std::set<std::string> kFree = {"hidden_dropout_prob",
                                              "attention_probs_dropout_prob",
                                              "embedding_dropout_prob",
                                              "ffn_dropout_prob",
                                              "initializer_range",
                                              "projection_views",
                                              "num_labels",
                                              "num_tags",
                                              "pad_token_id",
                                              "cls_token_id"};
  const auto want_json = model::encoder_config_to_json(want);
  const auto have_json = model::encoder_config_to_json(have);
  for (const std::string& key : model::encoder_config_keys()) {
    if (kFree.count(key) != 0 || want_json.at(key) == have_json.at(key)) continue;
    throw DataError(config_file, "", "model." + key,
                    fmt::format("the config asks for {} but the model_name_or_path bundle has {}; "
                                "set model.{} to the bundle's value",
                                want_json.at(key).dump(), have_json.at(key).dump(), key));
  }
  // The config may keep a subset of the bundle's views (SPACE-2's trigger_subspaces, e.g. "I"
  // alone in the intent stage, docs/training.md): their rows of the projection are copied.
  std::vector<std::int64_t> view_rows;  // the bundle's view index of each wanted view
  for (const auto& v : want.projection_views) {
    const auto it = std::find(have.projection_views.begin(), have.projection_views.end(), v);
    if (it == have.projection_views.end()) {
      throw DataError(config_file, "", "model.projection_views",
                      fmt::format("view {} is not among the model_name_or_path bundle's views "
                                  "[{}]; keep model.projection_views a subset of them",
                                  v, fmt::join(have.projection_views, ", ")));
    }
    view_rows.push_back(it - have.projection_views.begin());
  }
  // The data tokenizer decides these two; a different one means another vocabulary.
  if (want.cls_token_id != have.cls_token_id || want.pad_token_id != have.pad_token_id) {
    throw DataError(config_file, "", "data.tokenizer",
                    "the data tokenizer's [CLS]/[PAD] ids differ from the model_name_or_path "
                    "bundle's: use the bundle's own tokenizer (data.tokenizer: " +
                        dir + ")");
  }
  const std::string weights_file = (fs::path(dir) / model::kWeightsFile).string();
  model::SafetensorsContents weights = model::load_safetensors(weights_file);
  model::NamedTensors kept;
  const bool same_views = want.projection_views == have.projection_views;
  for (auto& [name, tensor] : weights.tensors) {
    if (model::is_task_head_tensor(name)) continue;
    if (!same_views && name.rfind("projection.", 0) == 0) {
      // [K·P, H] weight or [K·P] bias: view k owns rows k·P .. (k+1)·P.
      std::vector<torch::Tensor> blocks;
      for (const std::int64_t k : view_rows) {
        blocks.push_back(tensor.narrow(0, k * have.projection_dim, have.projection_dim));
      }
      kept.emplace_back(name, torch::cat(blocks, 0).contiguous());
      continue;
    }
    kept.emplace_back(name, tensor);
  }
  model::load_model_tensors(net, kept, weights_file);
  return kept.size();
}

// ---------------------------------------------------------------------------------------------
// Configuration mapping

model::EncoderConfig encoder_config(const PretrainConfig& c, const data::Tokenizer& tok) {
  model::EncoderConfig e = c.model;
  if (e.vocab_size == 0) e.vocab_size = tok.vocab_size();
  if (e.vocab_size < tok.vocab_size()) {
    throw DataError("", "", "model.vocab_size",
                    fmt::format("{} is smaller than the tokenizer's vocabulary ({})", e.vocab_size,
                                tok.vocab_size()));
  }
  e.pad_token_id = tok.special().pad;
  e.cls_token_id = tok.special().cls;
  e.validate();
  return e;
}

// ---------------------------------------------------------------------------------------------
// One stream (labelled or unlabelled) and its losses

struct Stream {
  std::vector<PretrainDataset> datasets;
  PretrainDataSkips skipped;  ///< empty turns and dialogs left out, reported in the log
  std::unique_ptr<BatchStream> batches;
  bool labelled = false;
  bool active() const { return batches != nullptr; }
};

// `grouped_by` (labelled streams only): the data section whose data.group_by_view and
// data.group_size draw the batches.
Stream make_stream(const std::vector<std::string>& files, bool labelled, int batch_size,
                   std::uint64_t seed, const data::Tokenizer& tok,
                   const data::SerializeOptions& opt, const DataConfig* grouped_by = nullptr,
                   bool slot_ids = false) {
  Stream s;
  s.labelled = labelled;
  if (files.empty()) return s;
  s.datasets = load_pretrain_data(files, labelled, tok, opt, &s.skipped, slot_ids);
  if (s.datasets.empty()) {
    throw DataError(files.front(), "", labelled ? "data.labelled" : "data.unlabelled",
                    "no training example (no non-empty trigger-role turn)");
  }
  s.batches = std::make_unique<BatchStream>(
      dataset_sizes(s.datasets), static_cast<std::size_t>(batch_size), seed,
      grouped_by != nullptr ? view_grouping(s.datasets, *grouped_by) : Grouping{});
  return s;
}

// Indices of the model's projection views in sts::View order.
std::vector<std::size_t> view_indices(const std::vector<std::string>& names) {
  std::vector<std::size_t> out;
  for (const auto& n : names) {
    const std::optional<std::size_t> k = sts::find_view(n);
    if (!k) throw DataError("", "", "model.projection_views", "unknown view " + n);
    out.push_back(*k);
  }
  return out;
}

torch::Tensor to_tensor(const sts::ScoreMatrix& m) {
  return torch::from_blob(const_cast<float*>(m.data()), {m.rows(), m.cols()}, torch::kFloat32)
      .clone();
}

// Soft targets of a labelled batch: [K, B, B] (per-view) or [B, B] (combined), docs/method.md §3.5.
torch::Tensor soft_masks(const std::vector<const PretrainExample*>& batch,
                         const std::vector<std::size_t>& views, const std::string& mode) {
  std::vector<sts::ViewSets> sets;
  sets.reserve(batch.size());
  for (const auto* ex : batch) sets.push_back(ex->views);
  if (mode == "combined") return to_tensor(sts::batch_combined(sets));
  const sts::BatchScores scores = sts::batch_scores(sets);
  std::vector<torch::Tensor> per_view;
  per_view.reserve(views.size());
  for (std::size_t k : views) per_view.push_back(to_tensor(scores.views[k]));
  return torch::stack(per_view);
}

// The tensors of one batch (docs/method.md §4.1-§4.2): the unmasked inputs, the soft masks, the
// masked MLM copy (labelled value spans fully masked, §4.2) and, with `token_slots`, the slot id
// of every value-mention token (docs/training.md "A token-level tree term").
StreamBatch prepare_batch(const std::vector<const PretrainExample*>& batch, torch::Tensor masks,
                          const data::MlmMaskingOptions& mopt, const data::Tokenizer& tok,
                          std::mt19937_64& rng, bool labelled, bool token_slots) {
  std::vector<data::SerializedExample> tokens;
  tokens.reserve(batch.size());
  for (const auto* ex : batch) tokens.push_back(ex->tokens);
  StreamBatch out;
  out.inputs = model::collate(tokens);
  if (token_slots) {  // the token-level tree term's slot ids (kNoSlot -> kIgnoreLabel)
    std::vector<std::vector<std::int32_t>> slots;
    slots.reserve(batch.size());
    for (const auto* ex : batch) {
      std::vector<std::int32_t> ids(ex->tokens.input_ids.size(),
                                    static_cast<std::int32_t>(model::kIgnoreLabel));
      for (std::size_t i = 0; i < ex->span_slots.size(); ++i) {
        if (ex->span_slots[i] != kNoSlot) ids[i] = ex->span_slots[i];
      }
      slots.push_back(std::move(ids));
    }
    out.token_slots = model::collate_labels(tokens, slots);
  }
  out.masks = std::move(masks);
  std::vector<std::vector<std::int32_t>> labels;
  labels.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    static const std::vector<std::uint8_t> kNoSpans;
    data::MaskedTokens m =
        data::mask_for_mlm(batch[i]->tokens, labelled ? batch[i]->span_flags : kNoSpans,
                           tok.special(), tok.vocab_size(), rng, mopt);
    tokens[i].input_ids = std::move(m.input_ids);
    labels.push_back(std::move(m.labels));
  }
  out.masked = model::collate(tokens, labels);
  return out;
}

std::vector<const PretrainExample*> resolve(const Stream& s, const BatchRef& r) {
  std::vector<const PretrainExample*> out;
  out.reserve(r.examples.size());
  for (std::size_t i : r.examples) out.push_back(&s.datasets[r.dataset].examples[i]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The run and its checkpoints

struct Run {
  const PretrainConfig& cfg;
  std::unique_ptr<data::Tokenizer> tok;
  data::MlmMaskingOptions masking;  // loss.mlm_probability and loss.whole_word_mask
  model::EncoderConfig ecfg;
  model::SpaceModel net{nullptr};
  // loss.language_objective rtd: the generator and discriminator head (null otherwise).
  model::ReplacedTokenDetection rtd{nullptr};
  std::unique_ptr<torch::optim::AdamW> opt;
  // Seconds of optimisation steps so far (evaluation and saving excluded), resumed with the
  // run: the x axis of quality against training time (`dialtree plot --x minutes`).
  double train_seconds = 0;
  Stream lab, unl;
  std::vector<std::size_t> views;
  DataParallelGroup* group = nullptr;  // null: a single process
  int rank = 0, world = 1;
  std::int64_t micro_done = 0;  // global micro-batches consumed (micro_seed's n)
  std::int64_t per_step = 1;    // micro-batches per optimiser step: accumulation x world
  std::int64_t step = 0, total = 0, warmup = 0, steps_per_epoch = 0;
  LogWindow window;  // saved in checkpoints (trainer/log_window.h)
  std::string last_checkpoint;
  torch::Device device{torch::kCPU};  // config device, resolved (model/device.h)
  bool bf16 = false;  // config bf16, where the device has native bf16 (model::effective_bf16)
  explicit Run(const PretrainConfig& c) : cfg(c) {}
  /// Every trained parameter: the model's, then the RTD module's.
  std::vector<torch::Tensor> parameters() {
    return trained_parameters(net, rtd ? rtd.get() : nullptr);
  }
};

// The RTD module's file in a checkpoint (the bundle's model.safetensors keeps the encoder).
constexpr const char* kRtdWeightsFile = "rtd.safetensors";

// Saves checkpoint-<step> of the run (trainer/run_dir.h: staging folder, sync, rename, pruning):
// the model bundle, optimizer.pt, the RTD module and trainer_state.json.
void save_checkpoint(Run& r) {
  TrainerState s;
  s.global_step = r.step;
  s.total_steps = r.total;
  if (r.lab.active()) s.labelled_position = r.lab.batches->position();
  if (r.unl.active()) s.unlabelled_position = r.unl.batches->position();
  s.micro_batches_done = r.micro_done;
  s.world_size = r.world;
  s.gradient_accumulation_steps = r.cfg.gradient_accumulation_steps;
  s.log_window = r.window.to_json();
  s.train_seconds = r.train_seconds;
  s.seed = r.cfg.seed;
  s.data_seed = r.cfg.data_seed;
  s.batch_grouping = batch_grouping_name(r.cfg.data);
  const auto write_files = [&](const fs::path& tmp) {
    model::BundleInfo info;
    info.recipe = {{"config_yaml", dump_config(r.cfg)}, {"step", r.step}};
    model::save_bundle(tmp.string(), *r.net, r.cfg.data.tokenizer, info);
    torch::save(*r.opt, (tmp / "optimizer.pt").string());
    if (r.rtd) {
      model::save_safetensors((tmp / kRtdWeightsFile).string(), model::model_tensors(*r.rtd),
                              {{"format", "pt"}});
    }
  };
  r.last_checkpoint =
      write_checkpoint(r.cfg.output_dir, s, write_files, r.cfg.save_total_limit).string();
}

// Puts stream `s` at the checkpoint's position (`key` of its trainer_state.json `state_file`).
void seek_stream(Stream& s, const std::optional<StreamPosition>& position,
                 const fs::path& state_file, const char* key) {
  if (!s.active()) return;
  if (!position) {
    throw DataError(state_file.string(), "", key,
                    "is null: the checkpoint was made without this stream");
  }
  s.batches->seek(*position);
}

// Restores the run from checkpoint folder `dir`: weights, RTD module, optimiser state (mapped
// onto this run's device), step, stream positions, micro-batch count and logging window.
void load_checkpoint(Run& r, const std::string& dir) {
  const fs::path d(dir);
  const TrainerState state = read_trainer_state(
      d, r.cfg.data_seed, r.cfg.gradient_accumulation_steps, batch_grouping_name(r.cfg.data));
  const model::SafetensorsContents weights =
      model::load_safetensors((d / model::kWeightsFile).string());
  model::load_model_tensors(*r.net, weights.tensors, (d / model::kWeightsFile).string());
  const fs::path rtd_file = d / kRtdWeightsFile;
  if (r.rtd && !fs::exists(rtd_file)) {
    throw DataError(rtd_file.string(), "", "loss.language_objective",
                    "is missing: the checkpoint was made with the mlm objective, and "
                    "language_objective rtd needs its generator");
  }
  if (!r.rtd && fs::exists(rtd_file)) {
    throw DataError(rtd_file.string(), "", "loss.language_objective",
                    "the checkpoint was made with the rtd objective; resume it with "
                    "loss.language_objective=rtd");
  }
  if (r.rtd) {
    model::load_model_tensors(*r.rtd, model::load_safetensors(rtd_file.string()).tensors,
                              rtd_file.string());
  }
  // Optimiser state is mapped onto this run's device: a checkpoint resumes on either.
  torch::load(*r.opt, (d / "optimizer.pt").string(), r.device);
  r.step = state.global_step;
  seek_stream(r.lab, state.labelled_position, d / kTrainerStateFile, "labelled_position");
  seek_stream(r.unl, state.unlabelled_position, d / kTrainerStateFile, "unlabelled_position");
  r.micro_done = state.micro_batches_done;
  r.window = LogWindow::from_json(state.log_window);
  r.train_seconds = state.train_seconds;
}

// Keeps only the metrics lines of steps <= `step` (a resumed run rewrites its future).
void truncate_metrics(const fs::path& path, std::int64_t step) {
  if (!fs::exists(path)) return;
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      if (json::parse(line).value("step", std::int64_t{0}) <= step) kept += line + "\n";
    } catch (const json::exception&) {
      // a line cut by a crash: dropped
    }
  }
  write_file_atomic(path, kept);
}

// env.json: the host environment (model::host_environment), world size, device, bf16 and the
// parameter count.
void write_env(const Run& r) {
  json env = model::host_environment();
  env.update({{"world_size", r.world},
              {"device", r.device.str()},
              {"bf16", r.cfg.bf16},
              {"bf16_effective", r.bf16},
              {"model_parameters", [&] {
                 std::int64_t n = 0;
                 for (const auto& p : r.net->parameters()) n += p.numel();
                 return n;
               }()}});
  write_file_atomic(fs::path(r.cfg.output_dir) / "env.json", env.dump(2) + "\n");
}

// ---------------------------------------------------------------------------------------------
// Set-up

// resume_from_checkpoint, with "latest" resolved to the newest complete checkpoint of
// output_dir, or none (what the launcher's restarts and torchrun's use, docs/training.md
// "Health checks"). Empty: a fresh run.
std::string resume_point(const PretrainConfig& config, const LogSink& say) {
  std::string resume = config.resume_from_checkpoint;
  if (resume == "latest") {
    resume = newest_checkpoint(config.output_dir);
    say(resume.empty() ? "resume_from_checkpoint=latest: no checkpoint in " + config.output_dir +
                             " yet; starting at step 0"
                       : "resume_from_checkpoint=latest: " + resume);
  }
  // A fresh run does not replace a finished run's final/ unless told to (HF's
  // overwrite_output_dir; docs/failure-cases.md B12).
  if (resume.empty() && !config.overwrite_output_dir &&
      fs::exists(fs::path(config.output_dir) / "final" / model::kWeightsFile)) {
    throw DataError(config.output_dir, "", "overwrite_output_dir",
                    "holds a finished run (final/), which a fresh run would replace; set "
                    "overwrite_output_dir=true to train over it, resume_from_checkpoint to "
                    "continue it, or choose another output_dir");
  }
  return resume;
}

// The device first: a GPU that is not there stops the run before any input is checked. Then the
// inputs, the threads, the seed and bf16.
void prepare_device(Run& r, const LogSink& say) {
  const PretrainConfig& config = r.cfg;
  r.device = model::resolve_device(config.device, "device");
  if (r.device.is_cuda() && r.world > 1) {
    throw DataError("device", "", "",
                    fmt::format("\"{}\" with {} data-parallel processes: data-parallel training "
                                "runs on the CPU (Gloo) only in this version; NCCL across GPUs is "
                                "not built yet (docs/gpu.md). Use device: cpu, or one process",
                                config.device, r.world));
  }
  check_inputs_exist(config);
  at::set_num_threads(config.threads);
  torch::manual_seed(static_cast<std::uint64_t>(config.seed));
  std::string bf16_note;
  r.bf16 = model::effective_bf16(r.device, config.bf16, &bf16_note);
  if (!bf16_note.empty()) say("warning: " + bf16_note);
}

// The tokenizer, the model (from model_name_or_path on a fresh run) and, with
// language_objective rtd, the generator and discriminator head, on the run's device.
void build_model(Run& r, bool fresh, const LogSink& say) {
  const PretrainConfig& config = r.cfg;
  r.tok = data::load_tokenizer(config.data.tokenizer);
  r.masking.mask_prob = config.loss.mlm_probability;
  if (config.loss.whole_word_mask) {
    r.masking.continues_word =
        std::make_shared<const std::vector<std::uint8_t>>(data::word_continuation_flags(*r.tok));
  }
  r.ecfg = encoder_config(config, *r.tok);
  r.net = model::SpaceModel(r.ecfg);
  if (!config.model_name_or_path.empty() && fresh) {
    const std::size_t n = init_from_bundle(*r.net, r.ecfg, config.model_name_or_path);
    say(fmt::format("initialised {} tensors from {}", n, config.model_name_or_path));
  }
  r.net->to(r.device);  // before the optimiser is made, so its state lives there too
  r.net->train();
  r.net->encoder()->set_padding_free(config.padding_free);
  if (config.loss.language_objective == "rtd") {
    // After the model: its initialisation draws first, so an rtd run's encoder starts where an
    // mlm run's does.
    const std::int64_t layers =
        model::generator_layers(config.loss.generator_size, r.ecfg.num_hidden_layers);
    r.rtd = model::ReplacedTokenDetection(r.ecfg, r.net->encoder()->word_embeddings(), layers);
    r.rtd->to(r.device);
    r.rtd->train();
    r.rtd->generator()->set_padding_free(config.padding_free);
    say(fmt::format("replaced-token detection: a {}-layer generator, discriminator weight {}",
                    layers, config.loss.discriminator_weight));
  }
  r.views = view_indices(r.ecfg.projection_views);
}

// Both batch streams, and a log line of what they hold and left out.
void load_streams(Run& r, const LogSink& say) {
  const PretrainConfig& config = r.cfg;
  const auto t_load = std::chrono::steady_clock::now();
  const data::SerializeOptions sopt = serialize_options(config.data);
  const auto data_seed = static_cast<std::uint64_t>(config.data_seed);
  r.lab = make_stream(config.data.labelled, true, config.per_device_train_batch_size, data_seed,
                      *r.tok, sopt, &config.data, config.loss.token_contrastive_weight > 0);
  r.unl = make_stream(config.data.unlabelled, false, config.unlabelled_batch_size,
                      splitmix64(data_seed), *r.tok, sopt);
  auto count = [](const Stream& s) {
    std::size_t n = 0;
    for (const auto& d : s.datasets) n += d.examples.size();
    return n;
  };
  say(fmt::format("data: {} labelled examples in {} datasets, {} unlabelled in {} ({:.1f} s)",
                  count(r.lab), r.lab.datasets.size(), count(r.unl), r.unl.datasets.size(),
                  seconds_elapsed(t_load)));
  using Named = std::pair<const Stream*, const char*>;
  for (const auto& [stream, key] :
       {Named{&r.lab, "data.labelled"}, Named{&r.unl, "data.unlabelled"}}) {
    if (stream->skipped.turns > 0 || stream->skipped.dialogs > 0) {
      say(
          fmt::format("warning: {}: left out {} turn(s) with empty text and {} dialog(s) with no "
                      "turn left (docs/failure-cases.md B13)",
                      key, stream->skipped.turns, stream->skipped.dialogs));
    }
  }
}

// The schedule: one optimiser step consumes accum x world batches of each stream
// (docs/method.md §4.5 epoch); the total steps and the warm-up follow.
void plan_steps(Run& r) {
  const PretrainConfig& config = r.cfg;
  r.per_step = static_cast<std::int64_t>(config.gradient_accumulation_steps) * r.world;
  const std::size_t batches = std::max(r.lab.active() ? r.lab.batches->batches_per_epoch() : 0,
                                       r.unl.active() ? r.unl.batches->batches_per_epoch() : 0);
  r.steps_per_epoch =
      std::max<std::int64_t>(1, (static_cast<std::int64_t>(batches) + r.per_step - 1) / r.per_step);
  r.total = config.max_steps > 0 ? config.max_steps : config.num_train_epochs * r.steps_per_epoch;
  r.warmup =
      static_cast<std::int64_t>(std::ceil(config.warmup_ratio * static_cast<double>(r.total)));
}

// Continues the run from checkpoint folder `dir`. @throws DataError for a checkpoint beyond the
// run's steps.
void resume_from(Run& r, const std::string& dir, const LogSink& say) {
  load_checkpoint(r, dir);
  if (r.step > r.total) {
    throw DataError(dir, "", "resume_from_checkpoint",
                    fmt::format("the checkpoint is at step {}, beyond this run's {} steps (a "
                                "checkpoint of another run?)",
                                r.step, r.total));
  }
  say(fmt::format("resumed from {} at step {}", dir, r.step));
}

// Rank 0's start in the run directory: removes what an interrupted save left, warns about an
// earlier run's checkpoints (fresh runs), writes config.yaml and env.json, and opens
// metrics.jsonl for appending after the lines of the steps done.
void open_run_dir(const Run& r, bool fresh, const LogSink& say, std::ofstream& metrics) {
  const fs::path out(r.cfg.output_dir);
  fs::create_directories(out);
  for (const std::string& name : remove_stale_temporaries(out)) {
    say("removed " + (out / name).string() + ", left by an interrupted save");
  }
  if (fresh) {
    for (const CheckpointDir& c : list_checkpoints(out)) {
      say(
          fmt::format("warning: {} is from an earlier run in this output_dir: this run starts "
                      "at step 0, overwrites the checkpoints of the steps it saves, and never "
                      "resumes from or prunes one beyond its own step",
                      c.path.string()));
    }
  }
  write_file_atomic(out / "config.yaml", dump_config(r.cfg));
  write_env(r);
  const fs::path metrics_path = out / "metrics.jsonl";
  truncate_metrics(metrics_path, r.step);
  metrics.open(metrics_path, std::ios::app);
}

// The start-up lines: the model and the schedule, and the BLAS kernels.
void log_start(const Run& r, const LogSink& say) {
  say(
      fmt::format("model: {} layers x {} hidden, vocab {}; {} steps ({} per epoch), warm-up {}, "
                  "{} threads, device {}, bf16 {}, {} process{}",
                  r.ecfg.num_hidden_layers, r.ecfg.hidden_size, r.ecfg.vocab_size, r.total,
                  r.steps_per_epoch, r.warmup, at::get_num_threads(), r.device.str(),
                  r.bf16 ? "on" : "off", r.world, r.world == 1 ? "" : "es"));
  if (const BlasRuntime blas = inspect_loaded_blas(); blas.openblas) {
    const char* choice = std::getenv(kBlasDecisionEnv);
    say(fmt::format(
        "BLAS: OpenBLAS kernels {}, {} threads; {}", blas.corename, blas.num_threads,
        choice != nullptr ? choice : "no kernel choice made (not started by dialtree)"));
  }
}

// ---------------------------------------------------------------------------------------------
// Evaluation and the best model

// Evaluation during pretraining on rank 0 (docs/training.md "Evaluation during pretraining"):
// a metrics.jsonl record and a log line per evaluation and, with metric_for_best_model, the
// best model so far as the bundle best/.
class Evaluation {
 public:
  // Takes over best/ when this run made it (same metric, a step already done); otherwise
  // removes it.
  Evaluation(const Run& r, const Evaluator& evaluate, bool writer, std::ostream& metrics,
             LogSink say)
      : config_(r.cfg),
        evaluate_(evaluate),
        active_(writer && evaluate && r.cfg.eval_steps > 0),
        best_dir_(fs::path(r.cfg.output_dir) / "best"),
        metrics_(metrics),
        say_(std::move(say)) {
    if (!active_ || config_.metric_for_best_model.empty() || !fs::is_directory(best_dir_)) return;
    const nlohmann::json recipe = model::load_bundle(best_dir_.string()).info.recipe;
    const std::int64_t best_step = recipe.value("step", std::int64_t{-1});
    if (recipe.value("metric", std::string()) == config_.metric_for_best_model && best_step >= 0 &&
        best_step <= r.step && r.step > 0) {
      best_value_ = recipe.at("value").get<double>();
      say_(fmt::format("best so far: {} = {:.4f} at step {} ({})", config_.metric_for_best_model,
                       *best_value_, best_step, best_dir_.string()));
    } else {
      fs::remove_all(best_dir_);  // from another run, metric, or a step this run will redo
    }
  }

  bool active() const { return active_; }

  // Whether to evaluate after step `step` of `total`: every eval_steps and at the end.
  bool due(std::int64_t step, std::int64_t total) const {
    return active_ && (step % config_.eval_steps == 0 || step == total);
  }

  // Evaluates the model (in eval mode, then back to train mode), records and logs the figures,
  // and keeps the model as best/ when it is the best so far.
  // @throws DataError when the evaluation does not report metric_for_best_model.
  void run(Run& r) {
    const auto t_eval = std::chrono::steady_clock::now();
    r.net->eval();
    const std::vector<std::pair<std::string, double>> figures = evaluate_(*r.net);
    r.net->train();
    const double secs = seconds_elapsed(t_eval);
    json rec = {{"step", r.step},
                {"epoch", static_cast<double>(r.step) / static_cast<double>(r.steps_per_epoch)}};
    std::string text;
    for (const auto& [key, value] : figures) {
      rec[key] = value;
      text += fmt::format("  {} {:.4f}", key, value);
    }
    rec["eval_seconds"] = secs;
    rec["train_seconds"] = r.train_seconds;
    metrics_ << rec.dump() << "\n" << std::flush;
    say_(fmt::format("eval at step {}:{}  ({:.1f} s)", r.step, text, secs));
    keep_if_best(r, figures);
  }

  // With load_best_model_at_end and a best model: loads best/'s weights into the model and
  // notes its step and value in the final bundle's `recipe`.
  void load_best(Run& r, nlohmann::json& recipe) const {
    if (!config_.load_best_model_at_end || !best_value_ || !fs::is_directory(best_dir_)) return;
    init_from_bundle(*r.net, r.ecfg, best_dir_.string());
    const nlohmann::json best = model::load_bundle(best_dir_.string()).info.recipe;
    recipe["best_step"] = best.at("step");
    recipe[config_.metric_for_best_model] = best.at("value");
    say_(fmt::format("final/ holds the best model: {} = {:.4f} at step {}",
                     config_.metric_for_best_model, best.at("value").get<double>(),
                     best.at("step").get<std::int64_t>()));
  }

 private:
  void keep_if_best(const Run& r, const std::vector<std::pair<std::string, double>>& figures) {
    if (config_.metric_for_best_model.empty()) return;
    const auto it = std::find_if(figures.begin(), figures.end(), [&](const auto& f) {
      return f.first == config_.metric_for_best_model;
    });
    if (it == figures.end()) {
      std::string names;
      for (const auto& f : figures) names += (names.empty() ? "" : ", ") + f.first;
      throw DataError("", "", "metric_for_best_model",
                      fmt::format("the evaluation reports no '{}'; it reports: {}",
                                  config_.metric_for_best_model, names));
    }
    const bool better = !best_value_ || (config_.greater_is_better ? it->second > *best_value_
                                                                   : it->second < *best_value_);
    if (!better) return;
    best_value_ = it->second;
    model::BundleInfo info;
    info.recipe = {{"config_yaml", dump_config(config_)},
                   {"step", r.step},
                   {"metric", config_.metric_for_best_model},
                   {"value", it->second}};
    model::save_bundle(best_dir_.string(), *r.net, config_.data.tokenizer, info);
  }

  const PretrainConfig& config_;
  const Evaluator& evaluate_;
  const bool active_;
  const fs::path best_dir_;
  std::optional<double> best_value_;
  std::ostream& metrics_;
  LogSink say_;
};

// ---------------------------------------------------------------------------------------------
// One optimiser step

// The batches of one micro-step of a stream: one per rank, in rank order (all ranks draw all
// of them, so every rank's stream stays at the same position).
std::vector<BatchRef> next_batches(Stream& s, int world) {
  std::vector<BatchRef> out;
  if (!s.active()) return out;
  for (int w = 0; w < world; ++w) out.push_back(s.batches->next());
  return out;
}

// This rank's StreamBatch of a micro-step. With loss.gather_across_devices the soft masks span
// every rank's batch (in rank order, as DataParallelGroup::all_gather_rows concatenates the
// embeddings), otherwise only this rank's batch.
StreamBatch rank_batch(Run& r, const Stream& s, const std::vector<BatchRef>& refs,
                       std::mt19937_64& rng, std::int64_t* examples) {
  const PretrainConfig& c = r.cfg;
  const bool gather = r.group != nullptr && c.loss.gather_across_devices;
  std::vector<const PretrainExample*> all;
  std::vector<std::int64_t> rows;
  for (const BatchRef& ref : refs) {
    rows.push_back(static_cast<std::int64_t>(ref.examples.size()));
    *examples += rows.back();
    if (gather) {
      const auto part = resolve(s, ref);
      all.insert(all.end(), part.begin(), part.end());
    }
  }
  const auto own = resolve(s, refs[static_cast<std::size_t>(r.rank)]);
  torch::Tensor masks;
  if (s.labelled) masks = soft_masks(gather ? all : own, r.views, c.loss.score_mode);
  const bool token_slots = s.labelled && c.loss.token_contrastive_weight > 0;
  StreamBatch b = to_device(
      prepare_batch(own, masks, r.masking, *r.tok, rng, s.labelled, token_slots), r.device,
      /*non_blocking=*/true);
  if (gather) {
    b.gather_group = r.group;
    b.gather_rows = std::move(rows);
  }
  return b;
}

// What the forward and backward of every micro-batch needs besides the batches.
struct StepObjective {
  losses::ObjectiveWeights weights;
  losses::ContrastiveOptions contrastive;
  LanguageObjective language;
};

StepObjective step_objective(Run& r) {
  const PretrainConfig& c = r.cfg;
  StepObjective o;
  o.weights = {c.loss.contrastive_weight, c.loss.mlm_weight, c.loss.self_supervised_weight,
               c.loss.token_contrastive_weight};
  o.contrastive.temperature = c.loss.temperature;
  o.contrastive.base_temperature = c.loss.base_temperature;
  o.contrastive.shard_size = c.data.contrastive_shard_size;
  o.language = {r.rtd ? r.rtd.get() : nullptr, c.loss.discriminator_weight,
                c.loss.encoder_mlm_weight};
  return o;
}

// Micro-batch `micro` of the current step on this rank: draws every rank's batches of both
// streams, seeds the masking and the dropout by the micro-batch's global index (within it the
// labelled batch draws first), runs forward and backward (the loss scaled by 1 / accumulation)
// and adds its losses, tokens and examples (all ranks') to `stats` and `examples`.
void run_micro_batch(Run& r, const StepObjective& objective, std::int64_t micro, StepStats& stats,
                     std::int64_t& examples) {
  const PretrainConfig& config = r.cfg;
  const std::int64_t accum = config.gradient_accumulation_steps;
  const auto lab_refs = next_batches(r.lab, r.world);
  const auto unl_refs = next_batches(r.unl, r.world);
  const std::int64_t n = r.micro_done + micro * r.world + r.rank;
  std::mt19937_64 mask_rng(micro_seed(config.seed, kMaskTag, n));
  torch::manual_seed(micro_seed(config.seed, kDropoutTag, n));
  std::optional<StreamBatch> lab, unl;
  if (r.lab.active()) lab = rank_batch(r, r.lab, lab_refs, mask_rng, &examples);
  if (r.unl.active()) unl = rank_batch(r, r.unl, unl_refs, mask_rng, &examples);
  const losses::Objective o = forward_backward(
      r.net, lab ? &*lab : nullptr, unl ? &*unl : nullptr, objective.weights, objective.contrastive,
      r.bf16, 1.0 / static_cast<double>(accum), nullptr, objective.language);
  stats.add_micro_batch({o.total_value, o.sup, o.self, o.mlm_labelled, o.mlm_unlabelled,
                         o.generator_mlm, o.replaced_token, o.encoder_mlm, o.token_contrastive},
                        accum);
  for (const auto* b : {lab ? &*lab : nullptr, unl ? &*unl : nullptr}) {
    if (b == nullptr) continue;
    // Token rows the encoder's blocks compute: every position when padded, only the real ones
    // padding-free (collate() pads on the right, so the packed path applies).
    const double real = b->inputs.attention_mask.sum().item<double>();
    stats.tokens +=
        config.padding_free ? real : static_cast<double>(b->inputs.attention_mask.numel());
    stats.real_tokens += real;
  }
}

// The gradient norm of `params` (before clipping), clipped to `max_norm` when it is > 0.
double clip_gradients(const std::vector<torch::Tensor>& params, double max_norm) {
  if (max_norm > 0) return torch::nn::utils::clip_grad_norm_(params, max_norm);
  double sq = 0;
  for (const auto& p : params) {
    if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
  }
  return std::sqrt(sq);
}

// Whether to stop before the next step. Every rank stops at the same step: the stop request
// of any rank counts.
bool stop_requested(const std::atomic<bool>* stop, DataParallelGroup* group) {
  const bool here = stop != nullptr && stop->load();
  return group != nullptr ? group->sum({here ? 1.0 : 0.0})[0] > 0 : here;
}

// Starts a phase of the hang watchdog (a single process has none).
void enter_phase(DataParallelGroup* group, PhaseKind kind, const std::string& label) {
  if (group != nullptr) group->begin_phase(kind, label);
}

// Calls on_step after every step (rank 0's progress bar) with the step's loss and throughput
// and the time left at the pace so far.
class Progress final : public TrainingObserver {
 public:
  Progress(std::function<void(const StepInfo&)> on_step, std::int64_t first_step)
      : on_step_(std::move(on_step)), first_step_(first_step) {}
  void after_step(const StepEvent& e) override {
    if (!on_step_) return;
    const double elapsed = seconds_elapsed(start_);
    on_step_(StepInfo{e.step, e.total, e.stats->losses.total, e.learning_rate,
                      static_cast<double>(e.examples) / e.seconds,
                      elapsed / static_cast<double>(e.step - first_step_) *
                          static_cast<double>(e.total - e.step)});
  }

 private:
  std::function<void(const StepInfo&)> on_step_;
  std::int64_t first_step_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The end of the run: after a stop, a checkpoint of the step reached (unless one was just
// saved); otherwise the final/ bundle (best/'s weights with load_best_model_at_end). The other
// ranks return only once rank 0's save is complete.
PretrainResult finish_run(Run& r, PretrainResult result, const Evaluation& eval, bool writer,
                          const LogSink& say) {
  result.steps_done = r.step;
  enter_phase(r.group, PhaseKind::Exempt, "the end of training (final save)");
  const fs::path out(r.cfg.output_dir);
  const std::string step_checkpoint = (out / checkpoint_name(r.step)).string();
  if (result.interrupted) {
    if (r.last_checkpoint != step_checkpoint) {
      if (writer) save_checkpoint(r);
      r.last_checkpoint = step_checkpoint;
    }
    if (r.group) r.group->barrier();
    result.last_checkpoint = r.last_checkpoint;
    say(fmt::format("stopped at step {}; resume with resume_from_checkpoint={}", r.step,
                    r.last_checkpoint));
    return result;
  }
  r.net->eval();
  result.final_dir = (out / "final").string();
  if (writer) {
    model::BundleInfo info;
    info.recipe = {{"config_yaml", dump_config(r.cfg)}, {"steps", r.step}};
    eval.load_best(r, info.recipe);
    model::save_bundle(result.final_dir, *r.net, r.cfg.data.tokenizer, info);
  }
  if (r.group) r.group->barrier();
  result.last_checkpoint = r.last_checkpoint;
  say("saved " + result.final_dir);
  return result;
}

}  // namespace

PretrainResult run_pretraining(const PretrainConfig& config, const std::atomic<bool>* stop,
                               const std::function<void(const std::string&)>& log,
                               const std::function<void(const StepInfo&)>& on_step,
                               DataParallelGroup* group, const Evaluator& evaluate) {
  Run r(config);
  r.group = group;
  r.rank = group ? group->rank() : 0;
  r.world = group ? group->world_size() : 1;
  const bool writer = r.rank == 0;  // only rank 0 touches the run directory and logs
  const LogSink say = [&](const std::string& s) {
    if (log && writer) log(s);
  };
  const std::string resume = resume_point(config, say);
  prepare_device(r, say);
  build_model(r, resume.empty(), say);
  load_streams(r, say);
  plan_steps(r);
  r.opt = make_adamw(r.parameters(), config.learning_rate, config.weight_decay, config.adam_beta1,
                     config.adam_beta2, config.adam_epsilon);
  if (!resume.empty()) resume_from(r, resume, say);
  // Every rank starts from rank 0's weights (they are equal already when the seed and the
  // checkpoint are; this makes it a guarantee).
  if (group) group->broadcast_from_rank0(r.parameters());
  std::ofstream metrics;
  if (writer) open_run_dir(r, resume.empty(), say, metrics);
  log_start(r, say);
  Evaluation evaluation(r, evaluate, writer, metrics, say);
  if (evaluation.active() && r.step == 0) evaluation.run(r);

  // The loop: one optimiser step per iteration; the observers log, check and inject faults.
  const std::vector<torch::Tensor> params = r.parameters();
  const StepObjective objective = step_objective(r);
  FaultInjector faults = FaultInjector::from_env(r.rank, r.world);
  // Every faulty rank says so (not only rank 0, whose lines are the run's log).
  if (faults.armed() && log) {
    log(fmt::format("fault injection ({}) armed for rank {}", kFaultEnv, r.rank));
  }
  HealthMonitor health(config, group, r.window, say);
  Progress progress(writer ? on_step : std::function<void(const StepInfo&)>(), r.step);
  MetricsLog metrics_log(
      r.window, writer ? &metrics : nullptr, say,
      {config.logging_steps, r.steps_per_epoch, static_cast<bool>(r.rtd), r.step,
       r.rtd && config.loss.encoder_mlm_weight > 0, config.loss.token_contrastive_weight > 0},
      &health);
  TrainingObserver* const observers[] = {&faults, &health, &progress, &metrics_log};
  PretrainResult result;
  while (r.step < r.total) {
    if (stop_requested(stop, group)) {
      result.interrupted = true;
      break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    enter_phase(group, PhaseKind::Compute, fmt::format("step {}", r.step + 1));
    for (TrainingObserver* o : observers) o->before_step(r.step + 1);
    const double lr = config.learning_rate * lr_factor(r.step, r.warmup, r.total);
    set_lr(*r.opt, lr);
    r.opt->zero_grad();
    StepStats stats(r.world);
    std::int64_t examples = 0;
    for (std::int64_t micro = 0; micro < config.gradient_accumulation_steps; ++micro) {
      run_micro_batch(r, objective, micro, stats, examples);
    }
    r.micro_done += r.per_step;
    const double compute_secs = seconds_elapsed(t0);
    if (group) {
      if (!faults.skips_collective(r.step + 1)) group->average_gradients(params);
      // The per-rank seconds ride along in the sum of the logged figures.
      stats.set_rank_seconds(r.rank, compute_secs, group->take_collective_seconds());
      stats = StepStats::from_vector(group->sum(stats.to_vector()), r.world);
      stats.average_losses_over_ranks();
    }
    const double grad_norm = clip_gradients(params, config.max_grad_norm);
    r.opt->step();
    ++r.step;
    // Padding-free batches change the activations' sizes every step, so the freed pages that
    // jemalloc keeps (the launcher's MALLOC_CONF for `train`) fragment unless handed back now
    // and then; without this a language stage at batch 64 grew to 24 GB by step 12,500
    // (docs/build.md P13). Timed as part of the step.
    if (r.step % kReleaseFreeMemoryEverySteps == 0) release_free_memory();
    const double secs = seconds_elapsed(t0);
    r.train_seconds += secs;
    const StepEvent event{r.step, r.total, &stats, examples, grad_norm, lr, secs, r.train_seconds};
    for (TrainingObserver* o : observers) o->after_step(event);
    if (evaluation.due(r.step, r.total)) {
      enter_phase(group, PhaseKind::Exempt, fmt::format("evaluation after step {}", r.step));
      evaluation.run(r);
    }
    if (config.save_steps > 0 && r.step % config.save_steps == 0 && r.step < r.total) {
      enter_phase(group, PhaseKind::Exempt, fmt::format("checkpoint of step {}", r.step));
      if (writer) save_checkpoint(r);
      r.last_checkpoint = (fs::path(config.output_dir) / checkpoint_name(r.step)).string();
      say("saved " + r.last_checkpoint);
    }
  }
  return finish_run(r, result, evaluation, writer, say);
}

}  // namespace dialtree::trainer
