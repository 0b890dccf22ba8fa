// The torch half of eval/pseudo_label.h: a model's vectors of a DialoGLUE intent task, handed to
// the torch-free rule (docs/training.md "Pseudo-labelled intent stage").
#include <chrono>

#include "eval/probe_model.h"
#include "eval/pseudo_label.h"
#include "eval/tasks.h"
#include "common/clock.h"
#include "model/device.h"
#include "model/encoder.h"

namespace dialtree::eval {

PseudoLabelReport pseudo_label_task(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                                    const std::string& data_dir, const std::string& task,
                                    const PseudoLabelOptions& options) {
  check_pseudo_label_options(options);
  if (!is_intent_task(task)) {
    throw std::invalid_argument("pseudo-labels are for the intent tasks (banking, clinc, hwu), not '" +
                                task + "'");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const IntentTask few = load_intent_task(data_dir, task, Setting::Few);
  // train.csv's texts only: its labels are read by the strict CSV reader and dropped here, so
  // nothing below can see them (the few-shot rule of docs/evaluation.md).
  const std::vector<std::string> pool =
      unlabelled_pool(load_intent_task(data_dir, task, Setting::Full).train.texts, few.train.texts);
  const bool bf16 = model::effective_bf16(model::module_device(net), options.bf16);
  auto embed = [&](const std::vector<std::string>& texts) {
    return embed_texts(net, tok, texts, options.batch_size, options.max_utt_len, bf16);
  };
  PseudoLabelReport r =
      pseudo_label_vectors(task, embed(few.train.texts), few.train.labels, embed(few.val.texts),
                           few.val.labels, embed(pool), pool, few.labels, options);
  r.seconds = seconds_since(t0);
  return r;
}

}  // namespace dialtree::eval
