// Throughput of one pre-training step (trainer/pretrain.cpp) on fixed synthetic batches:
//   bench_train_step [--bf16] [--threads N] [--steps N] [--warmup N] [--seq-len L]
//                    [--batch B] [--shard-size S] [--seed S] [--dropout P]
//                    [--language mlm|rtd] [--generator-size F] [--profile TRACE]
//
// The model is configs/pretrain-small.yaml's `model:` section (4 layers, hidden 256, 4 heads,
// FFN 1024, vocab 8000, ten projection views of 256, every dropout 0.1). The step is the
// trainer's: for a labelled and an unlabelled batch of B examples each, the contrastive pass
// (one 2B forward with [CLS], projection head and multi-view SupCon loss in fp32) and the MLM
// pass (B forward without [CLS], target rows gathered, MLM head, token-mean loss); then
// combine_objective, backward, clip_grad_norm_(5.0) and an AdamW step. Data preparation
// (collation, masking, tree scores) is not timed: the batches are built once.
//
// bench/reference/train_step.py is the same step in Python (Debian's python3-torch); with the
// same seed both draw identical weights, batches and dropout masks, so their step-0 losses
// agree. bench/train_step.sh runs the two alternately and prints the comparison.
//
// With --language, the step is the language stage's instead (configs/pretrain-lm.yaml): the
// unlabelled batch alone, no contrastive pass, and the language term MLM or ELECTRA's
// replaced-token detection (docs/training.md "Replaced-token detection"; a generator of
// --generator-size of the depth, discriminator weight 50). Its FLOPs count the generator and the
// encoder (forward_flops_language).
//
// With --profile, LibTorch's profiler records every operator of the timed steps into TRACE (a
// Chrome trace, JSON), which bench/profile_ops.py sums per operator (self time, calls a step):
// what each part of the step costs (bench/README.md "What a bf16 step spends its time on"). The
// profiler's own overhead is in that run's timings.
//
// Output: human-readable lines, then one `RESULT key=value ...` line for scripts.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "model/torch_api.h"
#include <torch/csrc/autograd/profiler_legacy.h>

#include "bench_util.h"
#include "common/blas_kernels.h"
#include "losses/contrastive.h"
#include "losses/objective.h"
#include "model/collate.h"
#include "model/device.h"
#include "model/encoder.h"
#include "model/rtd.h"
#include "trainer/step.h"

namespace {

using dialtree::bench::Clock;
using dialtree::bench::median;
using dialtree::bench::process_cpu_seconds;
using dialtree::bench::seconds_since;
using dialtree::bench::small_config;

/// Command-line settings.
struct Options {
  bool bf16 = false;
  int threads = 2;
  int steps = 20;
  int warmup = 3;
  std::int64_t seq_len = 128;
  std::int64_t batch = 32;       ///< per stream: labelled and unlabelled each
  std::int64_t shard_size = 16;  ///< data.contrastive_shard_size of pretrain-small.yaml
  std::uint64_t seed = 11;
  double dropout = 0.1;        ///< every dropout of the model (0 makes the step deterministic)
  std::string device = "cpu";  ///< model/device.h spelling: cpu, cuda, cuda:N, auto
  bool base = false;           ///< BERT-base size (12 x 768) instead of pretrain-small's 4 x 256
  std::string language;        ///< "" (the SPACE-2 step), "mlm" or "rtd" (the language stage)
  double generator_size = 0.25;  ///< rtd: loss.generator_size
  std::string profile;           ///< a Chrome trace of the timed steps' operators ("" = none)
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--bf16] [--threads N] [--steps N] [--warmup N] [--seq-len L] "
               "[--batch B] [--shard-size S] [--seed S] [--dropout P] [--device D] "
               "[--model small|base] [--language mlm|rtd] [--generator-size F] "
               "[--profile TRACE]\n",
               argv0);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> long long {
      if (i + 1 >= argc) usage(argv[0]);
      return std::stoll(argv[++i]);
    };
    if (a == "--bf16") {
      o.bf16 = true;
    } else if (a == "--threads") {
      o.threads = static_cast<int>(value());
    } else if (a == "--steps") {
      o.steps = static_cast<int>(value());
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(value());
    } else if (a == "--seq-len") {
      o.seq_len = value();
    } else if (a == "--batch") {
      o.batch = value();
    } else if (a == "--shard-size") {
      o.shard_size = value();
    } else if (a == "--seed") {
      o.seed = static_cast<std::uint64_t>(value());
    } else if (a == "--dropout") {
      if (i + 1 >= argc) usage(argv[0]);
      o.dropout = std::stod(argv[++i]);
    } else if (a == "--device") {
      if (i + 1 >= argc) usage(argv[0]);
      o.device = argv[++i];
    } else if (a == "--model") {
      if (i + 1 >= argc) usage(argv[0]);
      const std::string m = argv[++i];
      if (m != "small" && m != "base") usage(argv[0]);
      o.base = m == "base";
    } else if (a == "--language") {
      if (i + 1 >= argc) usage(argv[0]);
      o.language = argv[++i];
      if (o.language != "mlm" && o.language != "rtd") usage(argv[0]);
    } else if (a == "--generator-size") {
      if (i + 1 >= argc) usage(argv[0]);
      o.generator_size = std::stod(argv[++i]);
      if (!(o.generator_size > 0 && o.generator_size <= 1)) usage(argv[0]);
    } else if (a == "--profile") {
      if (i + 1 >= argc) usage(argv[0]);
      o.profile = argv[++i];
      // LibTorch's profiler only logs a failed write at the end: check the path first.
      if (!std::ofstream(o.profile)) {
        std::fprintf(stderr, "--profile: cannot write %s\n", o.profile.c_str());
        std::exit(2);
      }
    } else {
      usage(argv[0]);
    }
  }
  if (o.threads < 1 || o.steps < 1 || o.warmup < 0 || o.seq_len < 1 || o.batch < 1 ||
      o.shard_size < 0 || !(o.dropout >= 0 && o.dropout < 1)) {
    usage(argv[0]);
  }
  return o;
}

constexpr std::int64_t kMaskId = 103;       ///< data::SpecialTokens::mask
constexpr std::int64_t kUtteranceLen = 32;  ///< position ids restart every 32 tokens

/// One fixed stream batch: the contrastive inputs (doubled to 2B, as the trainer's doubled()
/// does inside the step), the masked MLM copy with its labels, and the soft masks (labelled
/// only; undefined = identity).
/// Draws a batch from torch's global generator, in the order the Python reference uses: ids,
/// then (labelled) the [K, B, B] soft masks, then the MLM target choice.
dialtree::trainer::StreamBatch make_batch(std::int64_t b, std::int64_t len, std::int64_t vocab,
                                          std::int64_t views, bool labelled) {
  dialtree::trainer::StreamBatch s;
  const auto i64 = torch::kInt64;
  const torch::Tensor ids = torch::randint(9, vocab, {b, len}, i64);
  const torch::Tensor t = torch::arange(len, i64);
  const std::int64_t utterances = (len + kUtteranceLen - 1) / kUtteranceLen;
  const torch::Tensor u = torch::div(t, kUtteranceLen, "floor");  // utterance index
  const torch::Tensor pos = t.remainder(kUtteranceLen);
  // Turn 1 = the last (current) utterance; role 1 at even distance from it (docs/method.md §1.5).
  const torch::Tensor turn = (utterances - u).clamp_max(16);
  const torch::Tensor role = (utterances - 1 - u).remainder(2).eq(0).to(i64);
  s.inputs.input_ids = ids;
  s.inputs.attention_mask = torch::ones({b, len}, i64);
  s.inputs.position_ids = pos.expand({b, len}).contiguous();
  s.inputs.role_ids = role.expand({b, len}).contiguous();
  s.inputs.turn_ids = turn.expand({b, len}).contiguous();
  if (labelled) {
    // Symmetric scores in [0, 1] with S_ii = 1, one matrix per view.
    const torch::Tensor r = torch::rand({views, b, b});
    s.masks = (r + r.transpose(1, 2)) * 0.5;
    s.masks.diagonal(0, 1, 2).fill_(1.0);
  }
  const torch::Tensor target = torch::rand({b, len}).lt(0.15);
  s.masked.inputs = s.inputs;
  s.masked.inputs.input_ids = torch::where(target, torch::full_like(ids, kMaskId), ids);
  s.masked.mlm_labels =
      torch::where(target, ids, torch::full_like(ids, dialtree::model::kIgnoreLabel));
  return s;
}

/// Wall-clock seconds of the phases of one step (CPU ops run synchronously, so the boundaries
/// are exact).
struct StepTimes {
  double labelled = 0, unlabelled = 0, objective = 0, backward = 0, clip = 0, adamw = 0;
  double total() const { return labelled + unlabelled + objective + backward + clip + adamw; }
};

/// The number of matrix-product FLOPs of one forward pass of the step (see bench/README.md):
/// per sequence of length S and layer S·(8H² + 4HF + 4SH); the MLM head on the N target rows
/// 2N·H·(H + V); the projection head 2·(2B)·H·K·P; the contrastive logits 2·K·(2s)²·P per shard
/// of s examples.
double forward_flops(const dialtree::model::EncoderConfig& c, std::int64_t b, std::int64_t len,
                     std::int64_t shard, double mlm_targets) {
  const double h = static_cast<double>(c.hidden_size), f = static_cast<double>(c.intermediate_size);
  const double layers = static_cast<double>(c.num_hidden_layers);
  const double v = static_cast<double>(c.vocab_size);
  const double k = static_cast<double>(c.projection_views.size());
  const double p = static_cast<double>(c.projection_dim);
  auto encoder = [&](double seqs, double s) {
    return seqs * layers * s * (8 * h * h + 4 * h * f + 4 * s * h);
  };
  const double bd = static_cast<double>(b);
  const std::int64_t s = shard > 0 && shard < b ? shard : b;
  const double shards = std::ceil(bd / static_cast<double>(s));
  const double per_stream = encoder(2 * bd, static_cast<double>(len + 1)) +
                            encoder(bd, static_cast<double>(len)) + 2 * (2 * bd) * h * k * p +
                            shards * 2 * k * std::pow(2.0 * static_cast<double>(s), 2) * p;
  return 2 * per_stream + 2 * mlm_targets * h * (h + v);
}

/// The matrix-product FLOPs of one forward pass of the language stage's step on one batch of
/// `b` sequences of `len` tokens with `targets` MLM targets (model FLOPs: the rows the last
/// block skips are counted). MLM: the encoder plus the MLM head on the targets,
/// 2N·H·(H + V). RTD (`generator_layers` > 0): the generator (its layers, same width) and its
/// MLM head on the targets, the encoder on the corrupted input, and the discriminator head on
/// every token, 2·B·S·(H² + H).
double forward_flops_language(const dialtree::model::EncoderConfig& c, std::int64_t b,
                              std::int64_t len, double targets, std::int64_t generator_layers) {
  const double h = static_cast<double>(c.hidden_size), f = static_cast<double>(c.intermediate_size);
  const double v = static_cast<double>(c.vocab_size);
  const double s = static_cast<double>(len), tokens = static_cast<double>(b) * s;
  const double per_layer = tokens * (8 * h * h + 4 * h * f + 4 * s * h);
  const double encoder = static_cast<double>(c.num_hidden_layers) * per_layer;
  const double head = 2 * targets * h * (h + v);
  if (generator_layers == 0) return encoder + head;
  return static_cast<double>(generator_layers) * per_layer + head + encoder +
         2 * tokens * (h * h + h);
}

/// Waits for the device's queued kernels (a no-op on the CPU), so that wall-clock times cover
/// the work.
void sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

/// Best GFLOP/s of torch::mm on n x n matrices of `dtype` on `device` over a few timed rounds
/// (n = 1024 on the CPU, 8192 on a GPU, whose peak small products do not reach).
double gemm_peak(torch::ScalarType dtype, const torch::Device& device) {
  const std::int64_t n = device.is_cuda() ? 8192 : 1024;
  const auto opts = torch::TensorOptions().dtype(dtype).device(device);
  const torch::Tensor a = torch::randn({n, n}, opts), b = torch::randn({n, n}, opts);
  const int reps = dtype == torch::kFloat32 && !device.is_cuda() ? 8 : 32;
  torch::Tensor c = torch::mm(a, b);
  sync(device);
  double best = 0;
  for (int round = 0; round < 6; ++round) {
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) c = torch::mm(a, b);
    sync(device);
    best = std::max(best, 2.0 * static_cast<double>(n * n * n) * reps / seconds_since(t0) / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  // The BLAS kernels dialtree itself would run with (docs/performance.md): re-executes once
  // with OPENBLAS_CORETYPE set when OpenBLAS chose narrower ones than the CPU has.
  dialtree::ensure_blas_kernels(argv);
  namespace model = dialtree::model;
  namespace losses = dialtree::losses;
  namespace trainer = dialtree::trainer;
  const Options o = parse(argc, argv);
  at::set_num_threads(o.threads);
  torch::manual_seed(o.seed);
  const torch::Device device = model::resolve_device(o.device, "--device");
  model::EncoderConfig cfg = small_config(o.dropout);
  if (o.base) {  // BERT-base's shape (SPACE-2's size); positions cover the sequence
    cfg.hidden_size = cfg.projection_dim = 768;
    cfg.num_hidden_layers = 12;
    cfg.num_attention_heads = 12;
    cfg.intermediate_size = 3072;
    cfg.max_position_embeddings = std::max<std::int64_t>(512, cfg.max_position_embeddings);
    cfg.validate();
  }
  model::SpaceModel net(cfg);
  net->to(device);
  net->train();
  const auto views = static_cast<std::int64_t>(cfg.projection_views.size());
  const dialtree::trainer::StreamBatch lab =
      trainer::to_device(make_batch(o.batch, o.seq_len, cfg.vocab_size, views, true), device);
  const dialtree::trainer::StreamBatch unl =
      trainer::to_device(make_batch(o.batch, o.seq_len, cfg.vocab_size, views, false), device);
  const bool language_stage = !o.language.empty();
  const double unl_targets =
      static_cast<double>(unl.masked.mlm_labels.ne(model::kIgnoreLabel).sum().item<std::int64_t>());
  const double targets =
      static_cast<double>(lab.masked.mlm_labels.ne(model::kIgnoreLabel).sum().item<std::int64_t>()) +
      unl_targets;

  // The language stage's RTD module, built after the model as the trainer builds it.
  model::ReplacedTokenDetection rtd{nullptr};
  std::int64_t gen_layers = 0;
  if (o.language == "rtd") {
    gen_layers = model::generator_layers(o.generator_size, cfg.num_hidden_layers);
    rtd = model::ReplacedTokenDetection(cfg, net->encoder()->word_embeddings(), gen_layers);
    rtd->to(device);
    rtd->train();
  }
  const trainer::LanguageObjective language{rtd ? rtd.get() : nullptr, 50.0};
  const std::vector<torch::Tensor> params = trainer::trained_parameters(net, language.rtd);

  // AdamW as run_pretraining builds it, with pretrain-small.yaml's values (pretrain-lm.yaml's
  // rate for the language stage).
  const double lr = language_stage ? 5e-4 : 1e-4, max_grad_norm = 5.0;
  const auto opt_ptr = trainer::make_adamw(params, lr, /*weight_decay=*/0.0, 0.9, 0.999, 1e-6);
  torch::optim::AdamW& opt = *opt_ptr;

  losses::ContrastiveOptions copt;
  copt.temperature = 0.07;
  copt.base_temperature = 0.07;
  copt.shard_size = o.shard_size;
  // The language stage: the unlabelled stream alone, its language term at weight 1.
  const losses::ObjectiveWeights weights =
      language_stage ? losses::ObjectiveWeights{0.0, 1.0, 0.0} : losses::ObjectiveWeights{1.0, 0.1, 1.0};

  std::vector<double> step_s, cpu_s;
  std::vector<StepTimes> phases;
  losses::Objective first{};
  double first_grad_norm = 0;
  // The profiler covers the timed steps only; its destructor writes the trace.
  std::unique_ptr<torch::autograd::profiler::RecordProfile> profiler;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    if (step == o.warmup && !o.profile.empty()) {
      profiler = std::make_unique<torch::autograd::profiler::RecordProfile>(o.profile);
    }
    StepTimes ph;
    const double c0 = process_cpu_seconds();
    const auto t0 = Clock::now();
    // The trainer's step (accumulation 1, constant lr): trainer/step.h plus clip and AdamW.
    trainer::set_lr(opt, lr);
    opt.zero_grad();
    trainer::StepPhases fb;
    const losses::Objective obj = trainer::forward_backward(
        net, language_stage ? nullptr : &lab, &unl, weights, copt, o.bf16, 1.0, &fb, language);
    ph.labelled = fb.labelled, ph.unlabelled = fb.unlabelled;
    ph.objective = fb.objective, ph.backward = fb.backward;
    auto t = Clock::now();
    const double grad_norm = torch::nn::utils::clip_grad_norm_(params, max_grad_norm);
    ph.clip = seconds_since(t);
    t = Clock::now();
    opt.step();
    sync(device);
    ph.adamw = seconds_since(t);
    const double s = seconds_since(t0);
    const double c = process_cpu_seconds() - c0;
    if (step == 0) first = obj, first_grad_norm = grad_norm;
    if (step >= o.warmup) step_s.push_back(s), cpu_s.push_back(c), phases.push_back(ph);
  }
  profiler.reset();

  const double peak32 = gemm_peak(torch::kFloat32, device);
  const double peak16 = gemm_peak(torch::kBFloat16, device);
  const double med = median(step_s);
  const double examples = (language_stage ? 1.0 : 2.0) * static_cast<double>(o.batch);
  const double fwd =
      language_stage
          ? forward_flops_language(cfg, o.batch, o.seq_len, unl_targets, gen_layers)
          : forward_flops(cfg, o.batch, o.seq_len, o.shard_size, targets);
  const double train = 3 * fwd;
  const double peak = o.bf16 ? peak16 : peak32;
  const double mfu = train / med / 1e9 / peak;
  auto phase_median = [&](double StepTimes::*m) {
    std::vector<double> v;
    for (const auto& p : phases) v.push_back(p.*m);
    return median(v);
  };

  std::printf(
      "impl cpp (libtorch %s)  mode %s  threads %d  batch %lld+%lld  seq_len %lld  dropout %g  "
      "steps %d (+%d warm-up)  objective %s\n",
      TORCH_VERSION, o.bf16 ? "bf16" : "fp32", at::get_num_threads(),
      static_cast<long long>(language_stage ? 0 : o.batch), static_cast<long long>(o.batch),
      static_cast<long long>(o.seq_len), o.dropout, o.steps, o.warmup,
      language_stage ? (o.language == "rtd" ? "rtd (language stage)" : "mlm (language stage)")
                     : "space2");
  std::printf(
      "step 0 losses: total %.6f  sup %.6f  self %.6f  mlm_l %.6f  mlm_u %.6f  "
      "|g| %.6f  (ln(2s-1) = %.4f)\n",
      first.total_value, first.sup, first.self, first.mlm_labelled, first.mlm_unlabelled,
      first_grad_norm,
      std::log(2.0 * static_cast<double>(o.shard_size > 0 ? o.shard_size : o.batch) - 1));
  std::printf(
      "seconds/step: median %.4f  min %.4f  max %.4f  (CPU seconds/step, all threads: "
      "median %.4f)\n",
      med, *std::min_element(step_s.begin(), step_s.end()),
      *std::max_element(step_s.begin(), step_s.end()), median(cpu_s));
  std::printf(
      "phases (median s): labelled fwd %.4f  unlabelled fwd %.4f  objective %.4f  "
      "backward %.4f  clip %.4f  adamw %.4f\n",
      phase_median(&StepTimes::labelled), phase_median(&StepTimes::unlabelled),
      phase_median(&StepTimes::objective), phase_median(&StepTimes::backward),
      phase_median(&StepTimes::clip), phase_median(&StepTimes::adamw));
  std::printf("examples/s: %.2f\n", examples / med);
  std::printf("GFLOP/step: %.1f (forward %.1f x 3)  achieved %.1f GFLOP/s\n", train / 1e9,
              fwd / 1e9, train / med / 1e9);
  std::printf("GEMM peak (mm %s, %s): fp32 %.0f GFLOP/s  bf16 %.0f GFLOP/s  ->  MFU %.1f%%\n",
              device.is_cuda() ? "8192^2" : "1024^2", device.str().c_str(), peak32, peak16,
              100 * mfu);
  std::printf(
      "RESULT impl=cpp mode=%s ex_s=%.3f step_s=%.4f cpu_s=%.4f gflop_step=%.2f peak_fp32=%.1f "
      "peak_bf16=%.1f mfu=%.4f loss0=%.6f device=%s model=%s objective=%s\n",
      o.bf16 ? "bf16" : "fp32", examples / med, med, median(cpu_s), train / 1e9, peak32, peak16,
      mfu, first.total_value, device.str().c_str(), o.base ? "base" : "small",
      language_stage ? o.language.c_str() : "space2");
  return 0;
}
