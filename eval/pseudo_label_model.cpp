// The torch half of eval/pseudo_label.h: a model's vectors of a DialoGLUE intent task, handed to
// the torch-free rule (docs/training.md "Pseudo-labelled intent stage").
#include <chrono>
#include <stdexcept>

#include "eval/probe_model.h"
#include "eval/pseudo_label.h"
#include "common/clock.h"
#include "model/device.h"
#include "model/encoder.h"

namespace dialtree::eval {

PseudoLabelReport pseudo_label_task(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                                    const PseudoLabelData& data,
                                    const PseudoLabelOptions& options) {
  check_pseudo_label_options(options);
  const auto t0 = std::chrono::steady_clock::now();
  const bool bf16 = model::effective_bf16(model::module_device(net), options.bf16);
  auto embed = [&](const std::vector<std::string>& texts, const char* what) {
    ProbeMatrix x = embed_texts(net, tok, texts, options.batch_size, options.max_utt_len, bf16);
    if (!x.allFinite()) {
      throw std::runtime_error(data.task + ": the model's vectors of " + what +
                               " are not finite (NaN or inf weights in the bundle?)");
    }
    return x;
  };
  PseudoLabelReport r = pseudo_label_vectors(
      data.task, embed(data.labelled.texts, "train_10"), data.labelled.labels,
      embed(data.val.texts, "val"), data.val.labels, embed(data.pool, "train.csv's texts"),
      data.pool, data.label_names, options);
  r.seconds = seconds_since(t0);
  return r;
}

}  // namespace dialtree::eval
