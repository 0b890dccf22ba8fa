#include "eval/probe_model.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <numeric>
#include <stdexcept>

#include <ATen/autocast_mode.h>
#include "model/torch_api.h"
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/json_util.h"
#include "eval/intent_inputs.h"
#include "eval/tag_mapping.h"
#include "eval/tasks.h"
#include "model/bundle.h"
#include "model/collate.h"
#include "model/device.h"
#include "model/encoder.h"
#include "readers/dialoglue_tasks.h"

namespace dialtree::eval {
namespace {

using Clock = std::chrono::steady_clock;

/// Puts the model in eval mode with bf16 autocast on or off as asked (on the model's device
/// type), and restores the mode and the caller's autocast state on destruction (a pretraining
/// loop may call the probe between training steps, inside or outside its own autocast).
class EvalModeScope {
 public:
  EvalModeScope(model::SpaceModelImpl& net, bool bf16)
      : net_(net),
        was_training_(net.is_training()),
        type_(model::module_device(net).type()),
        autocast_(model::autocast_enabled(type_)) {
    net_.eval();
    model::set_autocast(type_, bf16);
  }
  ~EvalModeScope() {
    model::set_autocast(type_, autocast_);
    at::autocast::clear_cache();
    if (was_training_) net_.train();
  }
  EvalModeScope(const EvalModeScope&) = delete;
  EvalModeScope& operator=(const EvalModeScope&) = delete;

 private:
  model::SpaceModelImpl& net_;
  bool was_training_;
  torch::DeviceType type_;
  bool autocast_;
};

/// Writes one split of a task below options.dump_dir (no-op when it is empty).
void dump(const ProbeOptions& o, const std::string& task, const std::string& name,
          const ProbeMatrix& x, const std::vector<int>& labels,
          const std::vector<std::string>& label_names, const nlohmann::json& extra) {
  if (o.dump_dir.empty()) return;
  const std::filesystem::path dir = std::filesystem::path(o.dump_dir) / task;
  std::filesystem::create_directories(dir);
  nlohmann::json header = extra;
  header["pooling"] = probe_pooling_name(o.pooling);
  write_embeddings((dir / name).string(), x, labels, label_names, header);
}

void check_tasks(const std::vector<std::string>& tasks) {
  if (tasks.empty()) throw std::invalid_argument("probe: no task given");
  for (const auto& t : tasks) {
    if (!readers::is_dialoglue_task(t, readers::TaskSet::Probe)) {
      throw std::invalid_argument(
          "probe: unknown task '" + t + "' (the probe runs on the intent tasks " +
          readers::join_dialoglue_task_names(readers::TaskSet::Intent) + " and the tagging tasks " +
          readers::join_dialoglue_task_names(readers::TaskSet::Tagging) + ")");
    }
  }
}

/// Runs `fn(indices, inputs)` on batches of at most `batch_size` of `xs`, shortest first
/// (length-sorted batches pad less; padding is masked, so the states do not depend on it), in
/// eval mode under InferenceMode with bf16 autocast as asked; `indices` are positions in `xs`.
void for_each_length_batch(
    model::SpaceModelImpl& net, const std::vector<const data::SerializedExample*>& xs,
    int batch_size, bool bf16,
    const std::function<void(const std::vector<std::size_t>&, const model::EncoderInputs&)>& fn) {
  std::vector<std::size_t> order(xs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return xs[a]->input_ids.size() < xs[b]->input_ids.size();
  });
  EvalModeScope mode(net, bf16);
  torch::InferenceMode inference;
  const auto bs = static_cast<std::size_t>(batch_size);
  const torch::Device device = model::module_device(net);
  for (std::size_t b = 0; b < order.size(); b += bs) {
    const std::vector<std::size_t> part(order.begin() + static_cast<std::ptrdiff_t>(b),
                                        order.begin() + static_cast<std::ptrdiff_t>(
                                                            std::min(order.size(), b + bs)));
    std::vector<data::SerializedExample> batch;
    batch.reserve(part.size());
    for (const std::size_t i : part) batch.push_back(*xs[i]);
    fn(part, model::to_device(model::collate(batch), device));
  }
}

/// Moves the model's float states of one batch to a CPU float tensor [B, rows, H].
torch::Tensor to_cpu_float(const torch::Tensor& t) {
  return t.to(torch::kFloat32).to(torch::kCPU).contiguous();
}

/// The token-level probe row of one tagging task (eval/tag_probe.h).
TagProbeRow probe_tagging_task(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                               const std::string& data_dir, const std::string& name,
                               const ProbeOptions& o) {
  const TaggingTask task = load_tagging_task(data_dir, name, Setting::Few);
  const TagMapper mapper(data_dir, task);
  const std::vector<TaggingExample>& scored = o.split == "test" ? task.test : task.val;
  // Test gold: the official key when the folder has it (as `eval dialoglue`), else the file's.
  nlohmann::json gold;
  const std::filesystem::path key = std::filesystem::path(data_dir) / "gt_test.json";
  if (o.split == "test" && std::filesystem::is_regular_file(key)) {
    gold = json_parse_file(key.string());
  } else {
    gold = mapper.gold_submission(scored);
  }
  const auto t = Clock::now();
  const WordVectors train_x = embed_words(net, tok, task.train, o.batch_size, o.max_utt_len, o.bf16);
  const WordVectors scored_x = embed_words(net, tok, scored, o.batch_size, o.max_utt_len, o.bf16);
  const double embed_seconds = seconds_since(t);
  TagProbeRow row = probe_tagging(task, train_x, scored, scored_x, o.split, mapper, gold, o);
  row.embed_seconds = embed_seconds;
  return row;
}

}  // namespace

ProbeMatrix embed_texts(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                        const std::vector<std::string>& texts, int batch_size, int max_utt_len,
                        bool bf16, ProbePooling pooling) {
  if (batch_size < 1 || max_utt_len < 1) {
    throw std::invalid_argument("embed_texts: batch_size and max_utt_len must be >= 1");
  }
  const std::vector<data::SerializedExample> xs =
      serialize_texts(texts, tok, net.config(), max_utt_len);
  const auto hidden = static_cast<Eigen::Index>(net.config().hidden_size);
  ProbeMatrix out(static_cast<Eigen::Index>(xs.size()), hidden);
  std::vector<const data::SerializedExample*> ptrs;
  for (const auto& x : xs) ptrs.push_back(&x);
  for_each_length_batch(net, ptrs, batch_size, bf16,
                        [&](const std::vector<std::size_t>& part, const model::EncoderInputs& in) {
    torch::Tensor v;
    if (pooling == ProbePooling::Cls) {
      v = net.forward_cls(in).to(torch::kFloat32).contiguous();
    } else {
      // Rows 1.. are the tokens (row 0 is [CLS]); padding rows are masked out of the mean.
      const torch::Tensor tokens = net.forward(in).slice(1, 1).to(torch::kFloat32);
      const torch::Tensor mask = in.attention_mask.to(torch::kFloat32).unsqueeze(-1);
      v = ((tokens * mask).sum(1) / mask.sum(1).clamp_min(1.0)).contiguous();
    }
    v = v.to(torch::kCPU);
    const float* p = v.data_ptr<float>();
    for (const std::size_t i : part) {
      out.row(static_cast<Eigen::Index>(i)) =
          Eigen::Map<const Eigen::RowVectorXf>(p, hidden).cast<double>();
      p += hidden;
    }
  });
  return out;
}

WordVectors embed_words(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                        const std::vector<TaggingExample>& examples, int batch_size,
                        int max_utt_len, bool bf16) {
  if (batch_size < 1 || max_utt_len < 1) {
    throw std::invalid_argument("embed_words: batch_size and max_utt_len must be >= 1");
  }
  const data::SerializeOptions so = single_turn(net.config(), max_utt_len);
  std::vector<TaggedInput> xs;
  xs.reserve(examples.size());
  for (const auto& ex : examples) xs.push_back(encode_words(ex.words, tok, so));
  // Rows of `words` are numbered in example order, so that they do not depend on batching.
  WordVectors out;
  out.rows.resize(xs.size());
  Eigen::Index n_words = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    for (const std::int64_t r : xs[i].first_row) out.rows[i].push_back(r < 0 ? -1 : n_words++);
  }
  const auto hidden = static_cast<Eigen::Index>(net.config().hidden_size);
  out.words.resize(n_words, hidden);
  out.cls.resize(static_cast<Eigen::Index>(xs.size()), hidden);
  std::vector<const data::SerializedExample*> ptrs;
  for (const auto& x : xs) ptrs.push_back(&x.input);
  for_each_length_batch(net, ptrs, batch_size, bf16,
                        [&](const std::vector<std::size_t>& part, const model::EncoderInputs& in) {
    const torch::Tensor states = to_cpu_float(net.forward(in));  // [B, L+1, H], row 0 [CLS]
    const std::int64_t width = states.size(1);
    const float* p = states.data_ptr<float>();
    for (std::size_t k = 0; k < part.size(); ++k) {
      const std::size_t x = part[k];
      const float* base = p + static_cast<std::int64_t>(k) * width * hidden;
      out.cls.row(static_cast<Eigen::Index>(x)) =
          Eigen::Map<const Eigen::RowVectorXf>(base, hidden).cast<double>();
      for (std::size_t w = 0; w < xs[x].first_row.size(); ++w) {
        const std::int64_t r = xs[x].first_row[w];
        if (r < 0) continue;
        out.words.row(out.rows[x][w]) =
            Eigen::Map<const Eigen::RowVectorXf>(base + r * hidden, hidden).cast<double>();
      }
    }
  });
  return out;
}

ProbeReport run_probe(model::SpaceModelImpl& net, const data::Tokenizer& tok,
                      const std::string& data_dir, const std::vector<std::string>& tasks,
                      const ProbeOptions& options) {
  check_probe_options(options);
  check_tasks(tasks);
  const auto t_run = Clock::now();
  ProbeOptions o = options;
  if (o.threads == 0) o.threads = at::get_num_threads();
  o.bf16 = model::effective_bf16(model::module_device(net), o.bf16);
  ProbeReport report;
  report.data_dir = data_dir;
  report.options = o;
  auto embed = [&](const std::vector<std::string>& texts, double& seconds) {
    const auto t = Clock::now();
    ProbeMatrix x = embed_texts(net, tok, texts, o.batch_size, o.max_utt_len, o.bf16, o.pooling);
    seconds += seconds_since(t);
    return x;
  };
  for (const auto& task : tasks) {
    if (is_tagging_task(task)) {
      report.tag_rows.push_back(probe_tagging_task(net, tok, data_dir, task, o));
      continue;
    }
    const IntentTask few = load_intent_task(data_dir, task, Setting::Few);
    const IntentSplit& scored = o.split == "test" ? few.test : few.val;
    double pending = 0;  // embedding time not yet charged to a row
    const ProbeMatrix scored_x = embed(scored.texts, pending);
    dump(o, task, o.split, scored_x, scored.labels, few.labels, {{"task", task}});
    for (const ProbeProtocol protocol : o.protocols) {
      ProbeRow row;
      if (protocol == ProbeProtocol::DialoglueFew) {
        const ProbeMatrix train_x = embed(few.train.texts, pending);
        dump(o, task, "train_10", train_x, few.train.labels, few.labels, {{"task", task}});
        row = probe_dialoglue_few(task, train_x, few.train.labels, scored_x, scored.labels, o);
      } else {
        const IntentTask full = load_intent_task(data_dir, task, Setting::Full);
        const auto draws =
            mteb_draws(full.train.labels, o.mteb_draws, o.mteb_per_label, o.mteb_seed);
        // Embed only the rows some draw uses; re-index the draws into them.
        std::vector<std::size_t> used;
        for (const auto& d : draws) used.insert(used.end(), d.begin(), d.end());
        std::sort(used.begin(), used.end());
        used.erase(std::unique(used.begin(), used.end()), used.end());
        std::vector<std::string> texts;
        std::vector<int> labels;
        for (const std::size_t i : used) {
          texts.push_back(full.train.texts[i]);
          labels.push_back(full.train.labels[i]);
        }
        std::vector<std::vector<std::size_t>> local = draws;
        for (auto& d : local) {
          for (auto& i : d)
            i = static_cast<std::size_t>(std::lower_bound(used.begin(), used.end(), i) -
                                         used.begin());
        }
        const ProbeMatrix train_x = embed(texts, pending);
        if (!o.dump_dir.empty()) {
          dump(o, task, "train", train_x, labels, few.labels,
               {{"task", task}, {"source_rows", used}});
          const nlohmann::json d = {{"train", "train"},
                                    {"draws", local},
                                    {"seed", o.mteb_seed},
                                    {"per_label", o.mteb_per_label},
                                    {"note",
                                     "draws index the rows of train.f32; source_rows in "
                                     "train.json maps them to train.csv rows"}};
          write_file_atomic(std::filesystem::path(o.dump_dir) / task / "mteb_draws.json",
                            d.dump() + "\n");
        }
        row = probe_mteb(task, train_x, labels, local, scored_x, scored.labels, o);
      }
      row.embed_seconds = pending;
      pending = 0;
      report.rows.push_back(std::move(row));
    }
  }
  report.seconds = seconds_since(t_run);
  return report;
}

ProbeReport run_probe(const std::string& bundle_dir, const std::string& data_dir,
                      const std::vector<std::string>& tasks, const ProbeOptions& options) {
  check_probe_options(options);
  check_tasks(tasks);
  const auto t = Clock::now();
  model::LoadedBundle bundle = model::load_bundle(bundle_dir);
  if (options.from_scratch_seed >= 0) {
    torch::manual_seed(static_cast<std::uint64_t>(options.from_scratch_seed));
    bundle.model->reset_parameters();
  }
  bundle.model->to(model::resolve_device(options.device, "device"));
  ProbeReport report = run_probe(*bundle.model, *bundle.tokenizer, data_dir, tasks, options);
  report.model = bundle_dir;
  report.seconds = seconds_since(t);
  return report;
}

}  // namespace dialtree::eval
