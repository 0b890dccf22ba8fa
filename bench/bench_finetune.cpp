// Intent fine-tuning throughput: training steps and test-set prediction of `dialtree eval`
// (eval/finetune_step.h: intent_batch_loss, predict_intent_batch; AdamW from
// trainer::make_adamw, clipping 5.0) on the small encoder of configs/pretrain-small.yaml with a
// 77-class head (BANKING77), on fixed synthetic single-utterance batches. The Python reference
// bench/reference/finetune.py runs the same model and steps; bench/finetune.sh alternates both.
//   bench_finetune [--threads N] [--steps N] [--warmup N] [--seq-len L] [--batch B]
//                  [--eval-batch B] [--predict N] [--dropout P] [--seed S]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/torch_api.h"

#include "bench_util.h"
#include "common/blas_kernels.h"
#include "eval/finetune_step.h"
#include "model/encoder.h"
#include "trainer/step.h"

namespace {

using dialtree::bench::Clock;
using dialtree::bench::median;
using dialtree::bench::seconds_since;

struct Options {
  int threads = 2, steps = 30, warmup = 3, seed = 1;
  std::int64_t seq_len = 24, batch = 32, eval_batch = 256, predict = 3080, classes = 77;
  double dropout = 0.25;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads")
      o.threads = std::atoi(next());
    else if (a == "--steps")
      o.steps = std::atoi(next());
    else if (a == "--warmup")
      o.warmup = std::atoi(next());
    else if (a == "--seed")
      o.seed = std::atoi(next());
    else if (a == "--seq-len")
      o.seq_len = std::atoll(next());
    else if (a == "--batch")
      o.batch = std::atoll(next());
    else if (a == "--eval-batch")
      o.eval_batch = std::atoll(next());
    else if (a == "--predict")
      o.predict = std::atoll(next());
    else if (a == "--dropout")
      o.dropout = std::atof(next());
    else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--steps N] [--warmup N] [--seq-len L] [--batch B] "
                   "[--eval-batch B] [--predict N] [--dropout P] [--seed S]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (o.threads < 1 || o.steps < 1 || o.warmup < 0 || o.seq_len < 2 || o.seq_len > 62 ||
      o.batch < 1 || o.eval_batch < 1 || o.predict < 1) {
    std::fprintf(stderr, "bench_finetune: an option is out of range (seq-len must be 2..62)\n");
    std::exit(2);
  }
  return o;
}

/// One user utterance per row, as eval's serialisation makes it: [sos_u] ids [eos_u], positions
/// 0..L-1, role 1, turn 1; ids drawn from torch's generator (the reference draws the same).
dialtree::model::EncoderInputs make_inputs(std::int64_t b, std::int64_t len) {
  const auto i64 = torch::kInt64;
  torch::Tensor ids = torch::randint(9, 8000, {b, len}, i64);
  ids.select(1, 0).fill_(13);       // sos_u
  ids.select(1, len - 1).fill_(7);  // eos_u
  return {ids, torch::ones({b, len}, i64), torch::arange(len, i64).expand({b, len}).contiguous(),
          torch::ones({b, len}, i64), torch::ones({b, len}, i64)};
}

}  // namespace

int main(int argc, char** argv) {
  // The BLAS kernels dialtree itself would run with (docs/performance.md): re-executes once
  // with OPENBLAS_CORETYPE set when OpenBLAS chose narrower ones than the CPU has.
  dialtree::ensure_blas_kernels(argv);
  namespace eval = dialtree::eval;
  namespace model = dialtree::model;
  const Options o = parse(argc, argv);
  at::set_num_threads(o.threads);
  torch::manual_seed(static_cast<std::uint64_t>(o.seed));
  model::EncoderConfig cfg = dialtree::bench::small_config(o.dropout);
  cfg.num_labels = o.classes;
  model::SpaceModel net(cfg);
  const model::EncoderInputs batch = make_inputs(o.batch, o.seq_len);
  const torch::Tensor labels = torch::randint(0, o.classes, {o.batch}, torch::kInt64);
  const model::EncoderInputs test = make_inputs(o.predict, o.seq_len);
  auto opt = dialtree::trainer::make_adamw(net, 2e-4, 0.01, 0.9, 0.999, 1e-6);

  net->train();
  std::vector<double> step_s;
  double loss0 = 0;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    const auto t0 = Clock::now();
    opt->zero_grad();
    const torch::Tensor loss = eval::intent_batch_loss(net, batch, labels, /*bf16=*/false);
    loss.backward();
    torch::nn::utils::clip_grad_norm_(net->parameters(), 5.0);
    opt->step();
    const double l = loss.item<double>();
    if (step == 0) loss0 = l;
    if (step >= o.warmup) step_s.push_back(seconds_since(t0));
  }

  net->eval();
  std::vector<double> predict_s;
  std::int64_t checksum = 0;
  for (int round = 0; round < 3; ++round) {
    torch::InferenceMode guard;
    const auto t0 = Clock::now();
    checksum = 0;
    for (std::int64_t b = 0; b < o.predict; b += o.eval_batch) {
      const std::int64_t e = std::min(o.predict, b + o.eval_batch);
      auto slice = [&](const torch::Tensor& t) { return t.slice(0, b, e); };
      const model::EncoderInputs in{slice(test.input_ids), slice(test.attention_mask),
                                    slice(test.position_ids), slice(test.role_ids),
                                    slice(test.turn_ids)};
      for (const std::int64_t id : eval::predict_intent_batch(net, in, false)) checksum += id;
    }
    predict_s.push_back(seconds_since(t0));
  }
  const double train_eps = static_cast<double>(o.batch) / median(step_s);
  const double predict_eps = static_cast<double>(o.predict) / median(predict_s);
  std::printf(
      "impl cpp (libtorch %s)  threads %d  batch %lld  seq_len %lld  classes %lld  dropout %g  "
      "steps %d (+%d warm-up)\n",
      TORCH_VERSION, at::get_num_threads(), static_cast<long long>(o.batch),
      static_cast<long long>(o.seq_len), static_cast<long long>(o.classes), o.dropout, o.steps,
      o.warmup);
  std::printf("step 0 loss %.6f (ln %lld = %.4f)\n", loss0, static_cast<long long>(o.classes),
              std::log(static_cast<double>(o.classes)));
  std::printf("train: %.4f s/step median, %.1f examples/s\n", median(step_s), train_eps);
  std::printf(
      "predict: %lld examples in batches of %lld, %.3f s median of 3, %.1f examples/s, "
      "class-id checksum %lld\n",
      static_cast<long long>(o.predict), static_cast<long long>(o.eval_batch), median(predict_s),
      predict_eps, static_cast<long long>(checksum));
  std::printf("RESULT impl=cpp train_ex_s=%.3f predict_ex_s=%.3f loss0=%.6f\n", train_eps,
              predict_eps, loss0);
  return 0;
}
