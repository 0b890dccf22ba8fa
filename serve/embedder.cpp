#include "serve/embedder.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "model/torch_api.h"

#include "model/bundle.h"
#include "model/collate.h"
#include "model/device.h"
#include "data/word_input.h"

namespace dialtree::serve {

struct Embedder::Impl {
  model::LoadedBundle bundle;
  torch::Device device{torch::kCPU};  ///< where the bundle's weights live
  bool bf16 = false;                  ///< forward passes under bf16 autocast
};

Embedder::Embedder(const std::string& model_dir, std::size_t max_input_length,
                   const std::string& device, bool bf16)
    : impl_(std::make_unique<Impl>()), model_dir_(model_dir) {
  if (max_input_length < 3) {
    throw std::invalid_argument(
        "max_input_length must be >= 3 (one sub-word and two role "
        "markers), got " +
        std::to_string(max_input_length));
  }
  impl_->device = model::resolve_device(device, "device");
  impl_->bf16 = model::effective_bf16(impl_->device, bf16);
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

std::string Embedder::dtype() const {
  return impl_->bf16 ? "bfloat16" : "float32";
}

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
bool Embedder::has_tagger() const {
  return impl_->bundle.model->has_tag_head();
}
const std::vector<std::string>& Embedder::tag_labels() const {
  return impl_->bundle.info.tag_labels;
}

namespace {

// The "has no tokens" refusal of turn `i` of `turns` (docs/failure-cases.md C19): whitespace
// alone is refused like an empty string, not embedded as the constant vector of two markers; so
// is a text of characters the tokenizer drops (control and zero-width characters), which the
// message names so that "\u0001" is not called whitespace.
ApiError no_tokens(std::size_t i, std::size_t turns, const std::string& param) {
  return ApiError(ErrorKind::kEmptyInput,
                  param + ": " +
                      (turns == 1 ? std::string("the text") : "turn " + std::to_string(i)) +
                      " has no tokens (it is empty, whitespace only, or only characters the "
                      "tokenizer drops, such as control and zero-width characters)",
                  param);
}

}  // namespace

std::vector<data::Utterance> Embedder::tokenize(const Input& input, std::size_t turns,
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
    return history;
  }
  history.reserve(turns);
  for (std::size_t i = 0; i < turns; ++i) {
    const Turn& t = input.turns[i];
    history.push_back({t.role, tok.encode(t.text)});
    if (history.back().ids.empty()) throw no_tokens(i, input.turns.size(), param);
  }
  return history;
}

data::SerializedExample Embedder::fit(std::vector<data::Utterance>& history, bool truncate,
                                      TruncationDirection direction,
                                      const std::string& param) const {
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
  return data::serialize_context(history, tokenizer().special(), so);
}

data::SerializedExample Embedder::prepare(const Input& input, bool truncate,
                                          TruncationDirection direction,
                                          const std::string& param) const {
  std::vector<data::Utterance> history = tokenize(input, input.turns.size(), param);
  return fit(history, truncate, direction, param);
}

WordInput Embedder::prepare_words(const Input& input, bool truncate,
                                  TruncationDirection direction, const std::string& param) const {
  if (input.token_ids || input.turns.empty()) {
    throw ApiError(ErrorKind::kValidation, param + ": a tagger reads text, not token ids", param);
  }
  WordInput out;
  const Turn& current = input.turns.back();
  out.text = current.text;
  out.words = data::split_words(current.text);
  std::vector<std::string> texts;
  texts.reserve(out.words.size());
  for (const data::WordSpan& w : out.words) texts.push_back(w.text);
  data::WordPieces pieces = data::encode_word_pieces(texts, tokenizer());
  if (pieces.ids.empty()) throw no_tokens(input.turns.size() - 1, input.turns.size(), param);
  // A right cut keeps the first words; the left cut (serialisation's) keeps the last ones.
  if (truncate && direction == TruncationDirection::kRight) {
    data::keep_first_pieces(pieces, limits_.max_utterance_length);
  }
  std::vector<data::Utterance> history = tokenize(input, input.turns.size() - 1, param);
  history.push_back({current.role, pieces.ids});
  out.example = fit(history, truncate, direction, param);
  out.first_row = data::first_piece_rows(out.example, pieces);
  return out;
}

namespace {

// Rows of a float [B, C] host tensor as vectors.
std::vector<std::vector<float>> rows_of(const torch::Tensor& t) {
  const torch::Tensor host = t.to(torch::kFloat32).to(torch::kCPU).contiguous();
  const auto rows = host.size(0), cols = host.size(1);
  std::vector<std::vector<float>> out(static_cast<std::size_t>(rows));
  const float* p = host.data_ptr<float>();
  for (std::int64_t r = 0; r < rows; ++r) {
    out[static_cast<std::size_t>(r)].assign(p + r * cols, p + (r + 1) * cols);
  }
  return out;
}

}  // namespace

ForwardOutputs Embedder::forward(const std::vector<const data::SerializedExample*>& batch,
                                 bool with_probs, bool with_tags) const {
  ForwardOutputs out;
  if (batch.empty()) return out;
  model::SpaceModel& net = impl_->bundle.model;
  if (with_tags && !net->has_tag_head()) {
    throw std::logic_error("forward: tags asked of a model without a tagger");
  }
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
  const model::EncoderInputs inputs = model::to_device(model::collate(examples), impl_->device);
  // Under bf16 the autocast scope is the one fine-tuning predicts with (eval/finetune.cpp), so
  // a served model answers its test predictions: a tagger's encoder runs under it and its heads
  // in float32 after it; an intent classifier runs encoder and head under it.
  const auto encode = [&](auto&& run) {
    model::AutocastScope autocast(impl_->bf16, impl_->device.type());
    return run().to(torch::kFloat32);
  };
  torch::Tensor cls, logits;
  if (with_tags) {
    // The full encoder, as tagging fine-tuning predicts (eval/finetune.cpp): [B, L+1, H].
    const torch::Tensor hidden = encode([&] { return net->forward(inputs, true); });
    cls = model::SpaceModelImpl::cls_vector(hidden);
    const torch::Tensor probs = torch::softmax(net->tag_logits(hidden), -1);
    const auto [best, ids] = probs.max(-1);  // [B, L+1]
    const torch::Tensor best_host = best.to(torch::kCPU).contiguous();
    const torch::Tensor ids_host = ids.to(torch::kInt32).to(torch::kCPU).contiguous();
    const auto width = best_host.size(1);
    out.tag_ids.resize(batch.size());
    out.tag_scores.resize(batch.size());
    for (std::size_t r = 0; r < batch.size(); ++r) {
      const auto n = static_cast<std::int64_t>(batch[r]->input_ids.size()) + 1;  // + [CLS]
      const auto offset = static_cast<std::int64_t>(r) * width;
      out.tag_ids[r].assign(ids_host.data_ptr<std::int32_t>() + offset,
                            ids_host.data_ptr<std::int32_t>() + offset + n);
      out.tag_scores[r].assign(best_host.data_ptr<float>() + offset,
                               best_host.data_ptr<float>() + offset + n);
    }
  } else {
    model::AutocastScope autocast(impl_->bf16, impl_->device.type());
    cls = net->forward_cls(inputs);
    if (with_probs && net->has_intent_head()) logits = net->intent_logits(cls).to(torch::kFloat32);
    cls = cls.to(torch::kFloat32);
  }
  out.pooled = rows_of(cls);
  if (with_probs && net->has_intent_head()) {
    if (!logits.defined()) logits = net->intent_logits(cls);
    out.probs = rows_of(torch::softmax(logits, -1));
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
