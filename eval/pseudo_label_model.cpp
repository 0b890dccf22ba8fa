// The torch half of eval/pseudo_label.h: a model's vectors of a DialoGLUE intent task, handed to
// the torch-free rule (docs/training.md "Pseudo-labelled intent stage").
#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <torch/torch.h>

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

PseudoLabelReport pseudo_label_task_head(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                                         const std::vector<std::string>& head_labels,
                                         const PseudoLabelData& data,
                                         const PseudoLabelOptions& options,
                                         const std::string& labeller) {
  check_pseudo_label_options(options);
  if (!net.has_intent_head() ||
      head_labels.size() != static_cast<std::size_t>(net.config().num_labels)) {
    throw std::invalid_argument(
        labeller + (net.has_intent_head()
                        ? ": its intent head and its " + std::to_string(head_labels.size()) +
                              " label names do not match"
                        : std::string(": the bundle has no intent head")) +
        " (fine-tune it with `dialtree eval dialoglue --save-models`)");
  }
  // Column k of the head is the task's class classes[k]; both must hold the same intents.
  std::vector<int> classes;
  for (const auto& name : head_labels) {
    const auto it = std::find(data.label_names.begin(), data.label_names.end(), name);
    if (it == data.label_names.end()) {
      throw std::invalid_argument(labeller + ": its intent '" + name + "' is not an intent of " +
                                  data.task + " (a bundle fine-tuned on another task?)");
    }
    classes.push_back(static_cast<int>(it - data.label_names.begin()));
  }
  for (const auto& name : data.label_names) {
    if (std::find(head_labels.begin(), head_labels.end(), name) == head_labels.end()) {
      throw std::invalid_argument(labeller + ": " + data.task + "'s intent '" + name +
                                  "' is not one of its head's labels");
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const bool bf16 = model::effective_bf16(model::module_device(net), options.bf16);
  auto probabilities = [&](const std::vector<std::string>& texts, const char* what) {
    const ProbeMatrix x =
        embed_texts(net, tok, texts, options.batch_size, options.max_utt_len, bf16);
    Eigen::MatrixXd p(x.rows(), static_cast<Eigen::Index>(classes.size()));
    if (x.rows() > 0) {
      torch::InferenceMode inference;
      const torch::Tensor cls =
          torch::from_blob(const_cast<double*>(x.data()), {x.rows(), x.cols()}, torch::kFloat64)
              .to(model::module_device(net), torch::kFloat32);
      const torch::Tensor probs =
          torch::softmax(net.intent_logits(cls).to(torch::kFloat64), -1).to(torch::kCPU).contiguous();
      p = Eigen::Map<const ProbeMatrix>(probs.data_ptr<double>(), x.rows(), p.cols());
    }
    if (!p.allFinite()) {
      throw std::runtime_error(data.task + ": the head's probabilities of " + what +
                               " are not finite (NaN or inf weights in " + labeller + "?)");
    }
    return p;
  };
  PseudoLabelReport r = pseudo_label_probabilities(
      data.task, probabilities(data.val.texts, "val"), data.val.labels,
      probabilities(data.pool, "train.csv's texts"), classes, data.pool, data.label_names,
      options.per_label);
  r.labelled = data.labelled.texts.size();
  r.labeller = labeller;
  r.converged = true;
  r.seconds = seconds_since(t0);
  return r;
}

}  // namespace dialtree::eval
