#include "serve/inference.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "serve/batcher.h"
#include "serve/metrics.h"
#include "serve/server.h"

namespace dialtree::serve {
// Job is a member type of Inference::Impl's batcher, so it has linkage (in an anonymous namespace
// GCC warns -Wsubobject-linkage once this file is compiled inside a unity batch).
namespace inference_detail {

using Clock = std::chrono::steady_clock;

// One queued input.
struct Job {
  const data::SerializedExample* example = nullptr;
  std::size_t tokens = 0;
  std::shared_ptr<RequestState> state;
  std::size_t index = 0;
  bool want_probs = false;
  bool want_tags = false;
  Clock::time_point enqueued;
};

}  // namespace inference_detail

namespace {

using inference_detail::Clock;
using inference_detail::Job;

// Hands row `row` of `out` (or `error`) to the request of `job`; wakes it when it was the
// request's last input.
void deliver(Job& job, const std::string& error, ForwardOutputs& out, std::size_t row,
             Clock::time_point t_batch, double inference_s) {
  RequestState& state = *job.state;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (!error.empty()) {
      state.error = error;
    } else {
      state.pooled[job.index] = std::move(out.pooled[row]);
      if (job.want_probs && !out.probs.empty()) state.probs[job.index] = std::move(out.probs[row]);
      if (job.want_tags) {
        state.tag_ids[job.index] = std::move(out.tag_ids[row]);
        state.tag_scores[job.index] = std::move(out.tag_scores[row]);
      }
    }
    state.queue_s =
        std::max(state.queue_s, std::chrono::duration<double>(t_batch - job.enqueued).count());
    state.inference_s = std::max(state.inference_s, inference_s);
    last = --state.pending == 0;
  }
  if (last) state.done.notify_all();
}

}  // namespace

struct Inference::Impl {
  std::size_t max_client_batch_size;
  bool auto_truncate;
  Metrics& metrics;
  Embedder embedder;
  const std::string compute_type = embedder.device() == "cpu" ? "cpu" : "gpu";
  // Last, so destroyed first: its thread calls run_batch.
  std::unique_ptr<Batcher<Job>> batcher;

  Impl(const ServerOptions& o, Metrics& m)
      : max_client_batch_size(o.max_client_batch_size),
        auto_truncate(o.auto_truncate),
        metrics(m),
        embedder(o.model_dir, o.max_input_length, o.device, o.bf16) {
    BatchLimits limits;
    limits.max_batch_tokens = o.max_batch_tokens;
    limits.max_batch_requests = o.max_batch_requests;
    limits.max_wait = std::chrono::microseconds(static_cast<long long>(o.max_wait_ms * 1000));
    // docs/serving.md "Inference workers": several workers, each running whole batches on its
    // share of the threads, instead of one whose threads meet at a barrier after every op.
    const int threads = std::max(1, Embedder::intra_op_threads());
    const std::size_t workers = o.inference_workers;
    const int per_worker =
        workers > 1 ? std::max(1, threads / static_cast<int>(workers)) : threads;
    if (workers > 1) embedder.set_threads_per_forward(per_worker);
    spdlog::info("inference: {} worker(s), {} LibTorch thread(s) each", workers, per_worker);
    batcher = std::make_unique<Batcher<Job>>(
        limits, [this](std::vector<Job>& b) { run_batch(b); }, workers);
  }

  // Runs one batch from the batcher: one forward pass for the inputs without tags and one for
  // those with (the full encoder). Mixed lengths cost little: the [CLS] pass runs packed
  // (DialogEncoder::forward_cls), padding only attention, per length bucket. Inputs whose
  // client has disconnected are dropped before the forward pass.
  void run_batch(std::vector<Job>& batch) {
    const auto t_batch = Clock::now();
    std::vector<Job*> plain, tagged, gone;
    std::size_t longest = 0;
    for (Job& job : batch) {
      metrics.observe_queue_time(std::chrono::duration<double>(t_batch - job.enqueued).count());
      if (job.state->cancelled()) {
        gone.push_back(&job);
        continue;
      }
      (job.want_tags ? tagged : plain).push_back(&job);
      longest = std::max(longest, job.tokens);
    }
    const std::size_t live = plain.size() + tagged.size();
    double inference_s = 0.0;
    for (std::vector<Job*>* group : {&plain, &tagged}) {
      if (group->empty()) continue;
      std::vector<const data::SerializedExample*> examples;
      examples.reserve(group->size());
      bool want_probs = false;
      for (const Job* job : *group) {
        examples.push_back(job->example);
        want_probs = want_probs || job->want_probs;
      }
      ForwardOutputs out;
      std::string error;
      try {
        out = embedder.forward(examples, want_probs, group == &tagged);
      } catch (const std::exception& e) {
        error = e.what();
        spdlog::error("inference failed on a batch of {}: {}", group->size(), error);
      }
      inference_s = seconds_since(t_batch);
      for (std::size_t k = 0; k < group->size(); ++k) {
        deliver(*(*group)[k], error, out, k, t_batch, inference_s);
      }
    }
    if (live > 0) metrics.observe_batch(live, longest * live, inference_s);
    ForwardOutputs none;
    if (!gone.empty()) metrics.count_cancelled(gone.size());
    for (Job* job : gone) deliver(*job, "the client disconnected", none, 0, t_batch, 0.0);
  }
};

Inference::Inference(const ServerOptions& options, Metrics& metrics)
    : impl_(std::make_unique<Impl>(options, metrics)) {}

Inference::~Inference() {
  stop();
}

const Embedder& Inference::embedder() const {
  return impl_->embedder;
}

const std::string& Inference::compute_type() const {
  return impl_->compute_type;
}

template <class Prepared, class One, class Length>
std::vector<Prepared> Inference::prepare_each(const std::vector<Input>& inputs,
                                              std::optional<bool> truncate, const char* field,
                                              std::size_t* tokens, One&& one, Length&& length) {
  if (inputs.size() > impl_->max_client_batch_size) {
    throw ApiError(ErrorKind::kTooManyInputs,
                   std::string(field) + ": " + std::to_string(inputs.size()) +
                       " inputs in one request; --max-client-batch-size is " +
                       std::to_string(impl_->max_client_batch_size),
                   field);
  }
  const bool cut = truncate.value_or(impl_->auto_truncate);
  std::vector<Prepared> out;
  out.reserve(inputs.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string param = inputs.size() == 1
                                  ? std::string(field)
                                  : std::string(field) + "[" + std::to_string(i) + "]";
    out.push_back(one(inputs[i], cut, param));
    total += length(out.back());
    impl_->metrics.observe_input_length(length(out.back()));
  }
  if (tokens) *tokens = total;
  return out;
}

std::vector<data::SerializedExample> Inference::prepare(const std::vector<Input>& inputs,
                                                        std::optional<bool> truncate,
                                                        TruncationDirection direction,
                                                        const char* field, std::size_t* tokens) {
  return prepare_each<data::SerializedExample>(
      inputs, truncate, field, tokens,
      [&](const Input& in, bool cut, const std::string& param) {
        return impl_->embedder.prepare(in, cut, direction, param);
      },
      [](const data::SerializedExample& ex) { return ex.input_ids.size(); });
}

std::vector<WordInput> Inference::prepare_words(const std::vector<Input>& inputs,
                                                std::optional<bool> truncate,
                                                TruncationDirection direction, const char* field,
                                                std::size_t* tokens) {
  return prepare_each<WordInput>(
      inputs, truncate, field, tokens,
      [&](const Input& in, bool cut, const std::string& param) {
        return impl_->embedder.prepare_words(in, cut, direction, param);
      },
      [](const WordInput& w) { return w.example.input_ids.size(); });
}

std::shared_ptr<RequestState> Inference::infer(
    const std::vector<data::SerializedExample>& examples, bool want_probs,
    std::shared_ptr<const std::atomic<bool>> client_gone, bool want_tags) {
  auto state = std::make_shared<RequestState>();
  state->client_gone = std::move(client_gone);
  state->pending = examples.size();
  state->pooled.resize(examples.size());
  if (want_probs) state->probs.resize(examples.size());
  if (want_tags) {
    state->tag_ids.resize(examples.size());
    state->tag_scores.resize(examples.size());
  }
  std::vector<Job> jobs;
  jobs.reserve(examples.size());
  const auto now = Clock::now();
  for (std::size_t i = 0; i < examples.size(); ++i) {
    jobs.push_back(
        Job{&examples[i], examples[i].input_ids.size(), state, i, want_probs, want_tags, now});
  }
  impl_->batcher->submit(std::move(jobs));
  std::unique_lock<std::mutex> lock(state->mutex);
  state->done.wait(lock, [&] { return state->pending == 0; });
  if (!state->error.empty()) {
    throw ApiError(ErrorKind::kInternal, "inference failed: " + state->error);
  }
  return state;
}

std::size_t Inference::queue_depth() const {
  return impl_->batcher->queue_depth();
}

void Inference::stop() {
  impl_->batcher->stop();
}

}  // namespace dialtree::serve
