#include "serve/embedder.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "model/torch_api.h"

#include "model/bundle.h"
#include "model/collate.h"
#include "model/device.h"

namespace dialtree::serve {

struct Embedder::Impl {
  model::LoadedBundle bundle;
  torch::Device device{torch::kCPU};  ///< where the bundle's weights live
};

Embedder::Embedder(const std::string& model_dir, std::size_t max_input_length,
                   const std::string& device)
    : impl_(std::make_unique<Impl>()), model_dir_(model_dir) {
  if (max_input_length < 3) {
    throw std::invalid_argument(
        "max_input_length must be >= 3 (one sub-word and two role "
        "markers), got " +
        std::to_string(max_input_length));
  }
  impl_->device = model::resolve_device(device, "device");
  impl_->bundle = model::load_bundle(model_dir);
  impl_->bundle.model->to(impl_->device);
  const auto& cfg = impl_->bundle.model->config();
  limits_.max_input_length = max_input_length;
  limits_.max_utterance_length =
      static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(max_input_length),
                                                      cfg.max_position_embeddings) -
                               2);
  limits_.max_turns = static_cast<std::size_t>(cfg.max_turns);
}

Embedder::~Embedder() = default;

std::string Embedder::device() const {
  return impl_->device.str();
}

const data::Tokenizer& Embedder::tokenizer() const {
  return *impl_->bundle.tokenizer;
}
std::size_t Embedder::hidden_size() const {
  return static_cast<std::size_t>(impl_->bundle.model->config().hidden_size);
}
bool Embedder::has_classifier() const {
  return impl_->bundle.model->has_intent_head();
}
const std::vector<std::string>& Embedder::intent_labels() const {
  return impl_->bundle.info.intent_labels;
}

data::SerializedExample Embedder::prepare(const Input& input, bool truncate,
                                          TruncationDirection direction,
                                          const std::string& param) const {
  const data::Tokenizer& tok = tokenizer();
  std::vector<data::Utterance> history;
  if (input.token_ids) {
    data::Utterance u{"user", {}};
    u.ids.reserve(input.token_ids->size());
    for (std::size_t i = 0; i < input.token_ids->size(); ++i) {
      const std::int64_t id = (*input.token_ids)[i];
      if (id >= tok.vocab_size()) {
        const std::string p = param + "[" + std::to_string(i) + "]";
        throw ApiError(ErrorKind::kValidation,
                       p + ": token id " + std::to_string(id) +
                           " is outside the vocabulary (size " + std::to_string(tok.vocab_size()) +
                           ")",
                       p);
      }
      u.ids.push_back(static_cast<std::int32_t>(id));
    }
    history.push_back(std::move(u));
  } else {
    history.reserve(input.turns.size());
    for (std::size_t i = 0; i < input.turns.size(); ++i) {
      const Turn& t = input.turns[i];
      history.push_back({t.role, tok.encode(t.text)});
      // Whitespace alone encodes to nothing: refused like an empty string (docs/failure-cases.md
      // C19), not embedded as the constant vector of two role markers.
      if (history.back().ids.empty()) {
        throw ApiError(
            ErrorKind::kEmptyInput,
            param + ": " +
                (input.turns.size() == 1 ? std::string("the text") : "turn " + std::to_string(i)) +
                " has no tokens (it is empty or whitespace only)",
            param);
      }
    }
  }

  const std::size_t keep = limits_.max_utterance_length;
  if (!truncate) {
    if (history.size() > limits_.max_turns) {
      throw ApiError(ErrorKind::kInputTooLong,
                     param + ": the dialog has " + std::to_string(history.size()) +
                         " turns; the model sees at most " + std::to_string(limits_.max_turns) +
                         " (turn truncation on to keep the newest ones: \"truncate\": true, or "
                         "embed --truncate true)",
                     param);
    }
    std::size_t total = 0;
    for (std::size_t i = 0; i < history.size(); ++i) {
      if (history[i].ids.size() > keep) {
        throw ApiError(
            ErrorKind::kInputTooLong,
            param + ": an utterance has " + std::to_string(history[i].ids.size()) +
                " tokens; at most " + std::to_string(keep) +
                " fit (the model's max_utterance_length, set by its position table; turn "
                "truncation on to cut it: \"truncate\": true, or embed --truncate true)",
            param);
      }
      total += history[i].ids.size() + 2;
    }
    if (total > limits_.max_input_length) {
      throw ApiError(ErrorKind::kInputTooLong,
                     param + ": the input has " + std::to_string(total) +
                         " tokens with its role markers; --max-input-length is " +
                         std::to_string(limits_.max_input_length) +
                         " (turn truncation on: \"truncate\": true, or embed --truncate true)",
                     param);
    }
  } else if (direction == TruncationDirection::kRight) {
    // serialize_context keeps an utterance's last ids; cutting here first keeps the first ones.
    for (auto& u : history) {
      if (u.ids.size() > keep) u.ids.resize(keep);
    }
  }
  data::SerializeOptions so;
  so.max_len = limits_.max_input_length;
  so.max_utt_len = keep;
  so.max_ctx_turn = limits_.max_turns;
  return data::serialize_context(history, tok.special(), so);
}

ForwardOutputs Embedder::forward(const std::vector<const data::SerializedExample*>& batch,
                                 bool with_probs) const {
  ForwardOutputs out;
  if (batch.empty()) return out;
  std::vector<data::SerializedExample> examples;
  examples.reserve(batch.size());
  for (const auto* ex : batch) examples.push_back(*ex);

  if (threads_per_forward_ > 0) {
    // Per thread: OpenMP's thread count (what LibTorch and OpenBLAS read) is the calling
    // thread's own setting.
    thread_local int configured = 0;
    if (configured != threads_per_forward_) {
      at::set_num_threads(threads_per_forward_);
      configured = threads_per_forward_;
    }
  }
  torch::InferenceMode guard;
  model::SpaceModel& net = impl_->bundle.model;
  const model::EncoderInputs inputs = model::to_device(model::collate(examples), impl_->device);
  const torch::Tensor cls = net->forward_cls(inputs).to(torch::kFloat32);
  const torch::Tensor cls_host = cls.to(torch::kCPU).contiguous();
  const auto rows = cls.size(0), dims = cls.size(1);
  out.pooled.resize(static_cast<std::size_t>(rows));
  const float* p = cls_host.data_ptr<float>();
  for (std::int64_t r = 0; r < rows; ++r) {
    out.pooled[static_cast<std::size_t>(r)].assign(p + r * dims, p + (r + 1) * dims);
  }
  if (with_probs && net->has_intent_head()) {
    const torch::Tensor probs =
        torch::softmax(net->intent_logits(cls), -1).to(torch::kCPU).contiguous();
    const auto classes = probs.size(1);
    const float* q = probs.data_ptr<float>();
    out.probs.resize(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      out.probs[static_cast<std::size_t>(r)].assign(q + r * classes, q + (r + 1) * classes);
    }
  }
  return out;
}

void Embedder::set_threads_per_forward(int threads) {
  if (threads < 0) {
    throw std::invalid_argument("threads per forward pass must be >= 0, got " +
                                std::to_string(threads));
  }
  threads_per_forward_ = threads;
}

int Embedder::intra_op_threads() {
  return at::get_num_threads();
}

std::vector<std::vector<float>> embed_batched(const Embedder& embedder,
                                              const std::vector<data::SerializedExample>& examples,
                                              const BatchPlanLimits& limits,
                                              std::size_t* padded_tokens) {
  std::vector<std::size_t> lengths;
  lengths.reserve(examples.size());
  for (const auto& ex : examples) lengths.push_back(ex.input_ids.size());
  std::vector<std::vector<float>> vectors(examples.size());
  std::size_t padded = 0;
  for (const auto& part : plan_batches(lengths, limits)) {
    std::vector<const data::SerializedExample*> batch;
    std::size_t longest = 0;
    for (std::size_t i : part) {
      batch.push_back(&examples[i]);
      longest = std::max(longest, lengths[i]);
    }
    padded += longest * part.size();
    ForwardOutputs out = embedder.forward(batch, false);
    for (std::size_t r = 0; r < part.size(); ++r) vectors[part[r]] = std::move(out.pooled[r]);
  }
  if (padded_tokens) *padded_tokens = padded;
  return vectors;
}

}  // namespace dialtree::serve
