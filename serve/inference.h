// The inference side of `dialtree serve` (docs/serving.md "Batching, limits and operation"): the
// loaded Embedder behind one dynamic Batcher. HTTP worker threads serialise their inputs here
// (prepare) and wait for the pooled vectors (infer); one batcher thread runs the forward passes.
// Torch-free header (the Embedder keeps LibTorch behind its pimpl).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "data/serialize.h"
#include "serve/api.h"
#include "serve/embedder.h"

namespace dialtree::serve {

struct ServerOptions;
class Metrics;

/// The answers of one request's inputs, filled by the batcher thread. Row i of `pooled` (and of
/// `probs` when asked for) belongs to input i; `queue_s` and `inference_s` are the longest
/// queue and forward-pass times of its inputs, in seconds.
struct RequestState {
  std::mutex mutex;
  std::condition_variable done;
  std::size_t pending = 0;
  std::vector<std::vector<float>> pooled, probs;
  std::vector<std::vector<std::int32_t>> tag_ids;  ///< with tags: ForwardOutputs::tag_ids
  std::vector<std::vector<float>> tag_scores;      ///< with tags: ForwardOutputs::tag_scores
  std::string error;
  double queue_s = 0.0, inference_s = 0.0;
  std::shared_ptr<const std::atomic<bool>> client_gone;  ///< set when the client disconnects

  /// True when the client of this request has disconnected.
  bool cancelled() const { return client_gone && client_gone->load(); }
};

/// A loaded model behind the server's batcher. Construction loads the bundle (the slow part of
/// start-up) and starts the batcher thread; the destructor stops it after the queued batches.
class Inference {
 public:
  /// Loads `options.model_dir` on `options.device` with the batch limits of `options`;
  /// `metrics` (which must outlive this object) receives queue, batch and input-length figures.
  /// @throws what Embedder's constructor throws (a missing or broken bundle).
  Inference(const ServerOptions& options, Metrics& metrics);
  ~Inference();
  Inference(const Inference&) = delete;
  Inference& operator=(const Inference&) = delete;

  /// The model (tokenizer, limits, labels, hidden size).
  const Embedder& embedder() const;

  /// TEI's `x-compute-type` of this model: "cpu", or "gpu" on a CUDA device (fixed at load).
  const std::string& compute_type() const;

  /// Serialises every input on the calling thread; `field` names the request field in errors
  /// ("inputs", "input[3]"), `truncate` defaults to --auto-truncate, and `tokens` (when given)
  /// receives the total token count.
  /// @throws ApiError (kTooManyInputs beyond --max-client-batch-size, or Embedder::prepare's).
  std::vector<data::SerializedExample> prepare(const std::vector<Input>& inputs,
                                               std::optional<bool> truncate,
                                               TruncationDirection direction, const char* field,
                                               std::size_t* tokens = nullptr);

  /// prepare() for a tagger (Embedder::prepare_words), with the same request limits and
  /// input-length metrics. @throws ApiError as prepare().
  std::vector<WordInput> prepare_words(const std::vector<Input>& inputs,
                                       std::optional<bool> truncate,
                                       TruncationDirection direction, const char* field,
                                       std::size_t* tokens = nullptr);

  /// Queues `examples` and blocks until every one has its vector (and class probabilities when
  /// `want_probs`, the tags of every row when `want_tags`). Inputs still queued when
  /// `client_gone` turns true are skipped. Inputs with and without tags share the batcher and
  /// its limits; a batch runs one forward pass per kind (Embedder::forward).
  /// @throws ApiError kInternal when the forward pass failed.
  std::shared_ptr<RequestState> infer(const std::vector<data::SerializedExample>& examples,
                                      bool want_probs,
                                      std::shared_ptr<const std::atomic<bool>> client_gone = {},
                                      bool want_tags = false);

  /// Inputs waiting for a batch (the /metrics gauge).
  std::size_t queue_depth() const;

  /// Runs every queued input, then stops the batcher thread; infer() afterwards throws
  /// std::logic_error. Idempotent (the destructor calls it).
  void stop();

 private:
  // The loop of prepare() and prepare_words(): the request limit, then `one(input, truncate,
  // param)` per input, its token count (`length`) summed into `tokens` and observed.
  template <class Prepared, class One, class Length>
  std::vector<Prepared> prepare_each(const std::vector<Input>& inputs, std::optional<bool> truncate,
                                     const char* field, std::size_t* tokens, One&& one,
                                     Length&& length);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dialtree::serve
