#include "model/encoder.h"

#include "common/check.h"
#include "model/kernels.h"
#include "model/packing.h"

#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace dialtree::model {

/// Where the real rows of a right-padded batch go in the packed layout, and the attention
/// buckets over them. Inputs are ordered shortest first; packed row r holds token t of input
/// order[k], rows of one input consecutive, so each bucket of inputs owns one contiguous range
/// of packed rows.
struct PackedLayout {
  struct Bucket {
    std::int64_t first = 0, last = 0;  // inputs [first, last) in sorted order
    std::int64_t row0 = 0, row1 = 0;   // their packed rows
    std::int64_t length = 0;
    torch::Tensor slots;     // [rows] position of each row in the [count * length] padded layout;
                             // undefined when the bucket has no padding
    torch::Tensor key_bias;  // [count, 1, 1, length]: 0 visible, -1e9 padding
  };
  torch::Tensor rows;        // int64 [N]: packed row -> row b * T + t of the padded [B * T]
  torch::Tensor first_rows;  // int64 [B]: the packed row of each input's token 0, sorted order
  torch::Tensor inverse;     // int64 [B]: input b's place in the sorted order
  std::vector<Bucket> buckets;
};

namespace {

/// Child module `name` of `parent`, created as an empty container when missing. Empty
/// containers reproduce HF's nesting ("attention.self.query") without any forward code.
torch::nn::Module& child(torch::nn::Module& parent, const std::string& name) {
  for (const auto& item : parent.named_children()) {
    if (item.key() == name) return *item.value();
  }
  return *parent.register_module(name, std::make_shared<torch::nn::Module>());
}

/// Registers an uninitialised float parameter at dotted path `path` below `root`
/// (e.g. "encoder.layer.0.attention.self.query.weight") and returns its handle.
torch::Tensor add_param(torch::nn::Module& root, const std::string& path,
                        std::vector<std::int64_t> shape) {
  torch::nn::Module* m = &root;
  std::size_t start = 0;
  for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
    m = &child(*m, path.substr(start, dot - start));
    start = dot + 1;
  }
  return m->register_parameter(path.substr(start), torch::empty(shape, torch::kFloat32));
}

void check_ids(const torch::Tensor& t, const char* name, std::int64_t limit, const char* table) {
  if (t.numel() == 0) return;
  const auto [lo, hi] = torch::aminmax(t);
  const std::int64_t lo_v = lo.item<std::int64_t>(), hi_v = hi.item<std::int64_t>();
  if (lo_v < 0 || hi_v >= limit) {
    std::ostringstream msg;
    msg << "EncoderInputs." << name << ": ids must be in [0, " << limit << ") (" << table
        << "), got range [" << lo_v << ", " << hi_v << "]";
    throw std::invalid_argument(msg.str());
  }
}

void check_inputs(const EncoderInputs& in, const EncoderConfig& c) {
  const std::pair<const char*, const torch::Tensor*> all[] = {
      {"input_ids", &in.input_ids},
      {"attention_mask", &in.attention_mask},
      {"position_ids", &in.position_ids},
      {"role_ids", &in.role_ids},
      {"turn_ids", &in.turn_ids}};
  for (const auto& [name, t] : all) {
    if (!t->defined())
      throw std::invalid_argument(std::string("EncoderInputs.") + name + " is undefined");
    if (t->scalar_type() != torch::kInt64 || t->dim() != 2) {
      std::ostringstream msg;
      msg << "EncoderInputs." << name << ": must be int64 [B, L], got " << t->scalar_type() << " "
          << t->sizes();
      throw std::invalid_argument(msg.str());
    }
    if (t->sizes() != in.input_ids.sizes()) {
      std::ostringstream msg;
      msg << "EncoderInputs." << name << ": shape " << t->sizes() << " differs from input_ids "
          << in.input_ids.sizes();
      throw std::invalid_argument(msg.str());
    }
  }
  check_ids(in.input_ids, "input_ids", c.vocab_size, "vocab_size");
  check_ids(in.position_ids, "position_ids", c.max_position_embeddings, "max_position_embeddings");
  check_ids(in.role_ids, "role_ids", c.type_vocab_size, "type_vocab_size");
  check_ids(in.turn_ids, "turn_ids", c.max_turns + 1, "max_turns + 1");
}

/// LayerNorm in the parameters' dtype. Under CPU autocast (LibTorch 1.13 does not list
/// layer_norm) a bf16 input meets fp32 weights, which the kernel rejects; normalising in fp32 is
/// also the accurate choice.
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                         double eps) {
  const torch::Tensor in = x.scalar_type() == w.scalar_type() ? x : x.to(w.scalar_type());
  return torch::layer_norm(in, {w.size(0)}, w, b, eps);
}

/// The visible length of each row when `visible` (bool [B, T]) is right-padded (every row a
/// prefix of ones, none empty: what collate() makes); nullopt otherwise or for an empty batch.
std::optional<std::vector<std::int64_t>> right_padded_lengths(const torch::Tensor& visible) {
  const std::int64_t B = visible.size(0), T = visible.size(1);
  if (B == 0 || T == 0) return std::nullopt;
  const torch::Tensor v = visible.to(torch::kCPU);
  const torch::Tensor lengths = v.sum(1);
  if (lengths.min().item<std::int64_t>() < 1 ||
      !v.equal(torch::arange(T).unsqueeze(0) < lengths.unsqueeze(1)))
    return std::nullopt;
  return std::vector<std::int64_t>(lengths.data_ptr<std::int64_t>(),
                                   lengths.data_ptr<std::int64_t>() + B);
}

/// The packed layout of a batch of `lengths` (B values >= 1) padded to T, on `device`.
PackedLayout packed_layout(const std::vector<std::int64_t>& lengths, std::int64_t T,
                           const torch::Device& device) {
  const auto index_opts = torch::TensorOptions().dtype(torch::kLong);
  std::vector<std::int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return lengths[a] < lengths[b]; });
  std::vector<std::int64_t> sorted_lengths, rows, first_rows, inverse(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::int64_t e = order[k], len = lengths[static_cast<std::size_t>(e)];
    sorted_lengths.push_back(len);
    first_rows.push_back(static_cast<std::int64_t>(rows.size()));
    inverse[static_cast<std::size_t>(e)] = static_cast<std::int64_t>(k);
    for (std::int64_t t = 0; t < len; ++t) rows.push_back(e * T + t);
  }
  PackedLayout lay;
  for (const LengthBucket& lb : plan_length_buckets(sorted_lengths, kAttentionBucketOverhead)) {
    PackedLayout::Bucket b;
    b.first = static_cast<std::int64_t>(lb.begin), b.last = static_cast<std::int64_t>(lb.end);
    b.row0 = first_rows[lb.begin];
    b.row1 =
        lb.end < first_rows.size() ? first_rows[lb.end] : static_cast<std::int64_t>(rows.size());
    b.length = lb.length;
    std::vector<std::int64_t> slots;
    std::vector<float> bias;
    for (std::size_t k = lb.begin; k < lb.end; ++k) {
      const std::int64_t base = static_cast<std::int64_t>(k - lb.begin) * lb.length;
      for (std::int64_t t = 0; t < lb.length; ++t) {
        if (t < sorted_lengths[k]) slots.push_back(base + t);
        bias.push_back(t < sorted_lengths[k] ? 0.0f : -1e9f);
      }
    }
    const std::int64_t count = b.last - b.first;
    if (b.row1 - b.row0 < count * lb.length) b.slots = torch::tensor(slots, index_opts).to(device);
    b.key_bias = torch::tensor(bias).view({count, 1, 1, lb.length}).to(device);
    lay.buckets.push_back(std::move(b));
  }
  lay.rows = torch::tensor(rows, index_opts).to(device);
  lay.first_rows = torch::tensor(first_rows, index_opts).to(device);
  lay.inverse = torch::tensor(inverse, index_opts).to(device);
  return lay;
}

/// Attention over packed rows, bucket by bucket, with `attend` (DialogEncoderImpl::attend).
/// k, v: [N, H] packed rows; q: [N, H] packed rows (all queries) or, with `cls_only`, [B, H]
/// in sorted order (one [CLS] query per input). -> context shaped like q.
template <class Attend>
torch::Tensor packed_attend(const PackedLayout& lay, const torch::Tensor& q, const torch::Tensor& k,
                            const torch::Tensor& v, bool cls_only, Attend&& attend) {
  const std::int64_t H = k.size(1);
  // Each bucket's rows (its inputs, for cls_only queries) as one split of q, k and v: a split's
  // gradient is one cat of the pieces', where a slice per bucket would zero-fill a gradient of
  // the whole tensor and add it up, bucket by bucket (bench/README.md "What a bf16 step spends
  // its time on"). The buckets cover the rows in order, so the sizes add up to the row count.
  std::vector<std::int64_t> row_sizes, input_sizes;
  for (const PackedLayout::Bucket& b : lay.buckets) {
    row_sizes.push_back(b.row1 - b.row0);
    input_sizes.push_back(b.last - b.first);
  }
  const std::vector<torch::Tensor> q_parts = q.split_with_sizes(cls_only ? input_sizes : row_sizes);
  const std::vector<torch::Tensor> k_parts = k.split_with_sizes(row_sizes);
  const std::vector<torch::Tensor> v_parts = v.split_with_sizes(row_sizes);
  std::vector<torch::Tensor> pieces;
  for (std::size_t i = 0; i < lay.buckets.size(); ++i) {
    const PackedLayout::Bucket& b = lay.buckets[i];
    const std::int64_t count = b.last - b.first;
    auto padded = [&](const torch::Tensor& part) {
      if (!b.slots.defined()) return part.view({count, b.length, H});
      return torch::zeros({count * b.length, H}, part.options())
          .index_copy(0, b.slots, part)
          .view({count, b.length, H});
    };
    const torch::Tensor qb = cls_only ? q_parts[i].view({count, 1, H}) : padded(q_parts[i]);
    const torch::Tensor context = attend(qb, padded(k_parts[i]), padded(v_parts[i]), b.key_bias);
    if (cls_only) {
      pieces.push_back(context.view({count, H}));
    } else {
      const torch::Tensor flat = context.reshape({count * b.length, H});
      pieces.push_back(b.slots.defined() ? flat.index_select(0, b.slots) : flat);
    }
  }
  return pieces.size() == 1 ? pieces[0] : torch::cat(pieces, 0);
}

/// q, k and v [..., H] each from the fused projection qkv_w [3H, H], qkv_b [3H] (fused_qkv):
/// one product split in three when xq is x, else q from xq and k, v from x. split, not slice: a
/// split's gradient is one cat, a slice's a zero-filled whole (packed_attend).
std::vector<torch::Tensor> project_qkv(const torch::Tensor& xq, const torch::Tensor& x,
                                       const torch::Tensor& qkv_w, const torch::Tensor& qkv_b) {
  const std::int64_t H = qkv_w.size(1);
  if (xq.is_same(x)) return torch::linear(x, qkv_w, qkv_b).split(H, -1);
  const std::vector<torch::Tensor> w_parts = qkv_w.split_with_sizes({H, 2 * H});
  const std::vector<torch::Tensor> b_parts = qkv_b.split_with_sizes({H, 2 * H});
  std::vector<torch::Tensor> qkv = torch::linear(x, w_parts[1], b_parts[1]).split(H, -1);
  qkv.insert(qkv.begin(), torch::linear(xq, w_parts[0], b_parts[0]));
  return qkv;
}

}  // namespace

void init_bert_style(torch::nn::Module& module, double std) {
  torch::NoGradGuard no_grad;
  for (auto& item : module.named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    const bool ln_gain = name.size() >= 16 && name.rfind("LayerNorm.weight") == name.size() - 16;
    if (ln_gain) {
      p.fill_(1.0);
    } else if (p.dim() >= 2) {
      p.normal_(0.0, std);
    } else {
      p.zero_();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// DialogEncoder

DialogEncoderImpl::DialogEncoderImpl(EncoderConfig config)
    : DialogEncoderImpl(std::move(config), torch::Tensor()) {}

DialogEncoderImpl::DialogEncoderImpl(EncoderConfig config, torch::Tensor shared_word_embeddings)
    : config_(std::move(config)) {
  config_.validate();
  const std::int64_t H = config_.hidden_size, F = config_.intermediate_size;
  if (shared_word_embeddings.defined()) {
    if (shared_word_embeddings.sizes() != torch::IntArrayRef({config_.vocab_size, H})) {
      std::ostringstream msg;
      msg << "DialogEncoder: the shared word-embedding table is " << shared_word_embeddings.sizes()
          << ", the config needs [" << config_.vocab_size << ", " << H << "]";
      throw std::invalid_argument(msg.str());
    }
    word_ = std::move(shared_word_embeddings);
  } else {
    word_ = add_param(*this, "embeddings.word_embeddings.weight", {config_.vocab_size, H});
  }
  position_ = add_param(*this, "embeddings.position_embeddings.weight",
                        {config_.max_position_embeddings, H});
  role_ = add_param(*this, "embeddings.token_type_embeddings.weight", {config_.type_vocab_size, H});
  turn_ = add_param(*this, "embeddings.turn_embeddings.weight", {config_.max_turns + 1, H});
  emb_ln_w_ = add_param(*this, "embeddings.LayerNorm.weight", {H});
  emb_ln_b_ = add_param(*this, "embeddings.LayerNorm.bias", {H});
  for (std::int64_t n = 0; n < config_.num_hidden_layers; ++n) {
    const std::string p = "encoder.layer." + std::to_string(n) + ".";
    TransformerLayerWeights w;
    w.query_w = add_param(*this, p + "attention.self.query.weight", {H, H});
    w.query_b = add_param(*this, p + "attention.self.query.bias", {H});
    w.key_w = add_param(*this, p + "attention.self.key.weight", {H, H});
    w.key_b = add_param(*this, p + "attention.self.key.bias", {H});
    w.value_w = add_param(*this, p + "attention.self.value.weight", {H, H});
    w.value_b = add_param(*this, p + "attention.self.value.bias", {H});
    w.attn_out_w = add_param(*this, p + "attention.output.dense.weight", {H, H});
    w.attn_out_b = add_param(*this, p + "attention.output.dense.bias", {H});
    w.attn_ln_w = add_param(*this, p + "attention.output.LayerNorm.weight", {H});
    w.attn_ln_b = add_param(*this, p + "attention.output.LayerNorm.bias", {H});
    w.inter_w = add_param(*this, p + "intermediate.dense.weight", {F, H});
    w.inter_b = add_param(*this, p + "intermediate.dense.bias", {F});
    w.out_w = add_param(*this, p + "output.dense.weight", {H, F});
    w.out_b = add_param(*this, p + "output.dense.bias", {H});
    w.out_ln_w = add_param(*this, p + "output.LayerNorm.weight", {H});
    w.out_ln_b = add_param(*this, p + "output.LayerNorm.bias", {H});
    layers_.push_back(std::move(w));
  }
  reset_parameters();
}

void DialogEncoderImpl::reset_parameters() {
  init_bert_style(*this, config_.initializer_range);
}

torch::Tensor DialogEncoderImpl::embed(const EncoderInputs& in, bool prepend_cls) {
  check_inputs(in, config_);
  torch::Tensor e = torch::embedding(word_, in.input_ids) +
                    torch::embedding(position_, in.position_ids) +
                    torch::embedding(role_, in.role_ids) + torch::embedding(turn_, in.turn_ids);
  e = dropout_threads(e, config_.embedding_dropout_prob, is_training());
  if (prepend_cls) {
    const std::int64_t B = in.input_ids.size(0);
    // The bare [CLS] head vector: the raw word-embedding row, no position/role/turn, no dropout.
    const torch::Tensor head = word_[config_.cls_token_id].view({1, 1, -1}).expand({B, 1, -1});
    e = torch::cat({head.to(e.scalar_type()), e}, 1);
  }
  return layer_norm(e, emb_ln_w_, emb_ln_b_, config_.layer_norm_eps);
}

std::pair<torch::Tensor, torch::Tensor> DialogEncoderImpl::fused_qkv(
    const TransformerLayerWeights& w) const {
  const double scale = 1.0 / std::sqrt(static_cast<double>(config_.head_dim()));
  return {torch::cat({w.query_w * scale, w.key_w, w.value_w}),
          torch::cat({w.query_b * scale, w.key_b, w.value_b})};
}

torch::Tensor DialogEncoderImpl::attend(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v, const torch::Tensor& key_bias) {
  const std::int64_t B = k.size(0), T = k.size(1), Tq = q.size(1), nh = config_.num_attention_heads,
                     d = config_.head_dim(), H = nh * d;
  // [B, rows, H] -> [B*nh, rows, d], one slice per (example, head).
  auto heads = [&](const torch::Tensor& t, std::int64_t rows) {
    return t.view({B, rows, nh, d}).transpose(1, 2).reshape({B * nh, rows, d});
  };
  // [B*nh, Tq, T] scores; padded keys get -1e9, so every row has a finite softmax.
  const torch::Tensor scores =
      bmm_threads(heads(q, Tq), heads(k, T).transpose(1, 2)).view({B, nh, Tq, T}) + key_bias;
  torch::Tensor probs = torch::softmax(scores, -1);
  probs = dropout_threads(probs, config_.attention_probs_dropout_prob, is_training());
  const torch::Tensor context =
      bmm_threads(probs.reshape({B * nh, Tq, T}).to(v.scalar_type()), heads(v, T));
  return context.view({B, nh, Tq, d}).transpose(1, 2).reshape({B, Tq, H});
}

torch::Tensor DialogEncoderImpl::attention_block(const TransformerLayerWeights& w,
                                                 const torch::Tensor& xq, const torch::Tensor& x,
                                                 const torch::Tensor& key_bias,
                                                 const torch::Tensor& query_keep) {
  // Projections [B, Tq, H] for the queries and [B, T, H] each for keys and values. When xq is
  // x, one [3H, H] product gives all three (1/sqrt(d) folded into the query rows).
  const auto [qkv_w, qkv_b] = fused_qkv(w);
  const std::vector<torch::Tensor> qkv = project_qkv(xq, x, qkv_w, qkv_b);
  const torch::Tensor context = attend(qkv[0], qkv[1], qkv[2], key_bias);
  // Padding query rows are meaningless; zero them so they carry nothing forward.
  return context * query_keep.to(context.scalar_type());
}

torch::Tensor DialogEncoderImpl::block_output(const TransformerLayerWeights& w,
                                              const torch::Tensor& xq,
                                              const torch::Tensor& context) {
  const double eps = config_.layer_norm_eps;
  const double p_hidden = config_.hidden_dropout_prob, p_ffn = config_.ffn_dropout_prob;
  const bool train = is_training();
  torch::Tensor a = torch::linear(context, w.attn_out_w, w.attn_out_b);
  torch::Tensor y =
      layer_norm(xq + dropout_threads(a, p_hidden, train), w.attn_ln_w, w.attn_ln_b, eps);
  torch::Tensor f =
      dropout_threads(torch::gelu(torch::linear(y, w.inter_w, w.inter_b)), p_ffn, train);
  f = torch::linear(f, w.out_w, w.out_b);
  return layer_norm(y + dropout_threads(f, p_hidden, train), w.out_ln_w, w.out_ln_b, eps);
}

torch::Tensor DialogEncoderImpl::block(const TransformerLayerWeights& w, const torch::Tensor& xq,
                                       const torch::Tensor& x, const torch::Tensor& key_bias,
                                       const torch::Tensor& query_keep) {
  return block_output(w, xq, attention_block(w, xq, x, key_bias, query_keep));
}

DialogEncoderImpl::Masks DialogEncoderImpl::masks(const EncoderInputs& in, bool prepend_cls,
                                                  const torch::Tensor& x) const {
  torch::Tensor m = in.attention_mask.ne(0);  // [B, L] bool
  if (prepend_cls) {
    // [CLS] copies token 0's mask (docs/method.md §1.2); an empty sequence has a masked [CLS].
    const torch::Tensor head =
        m.size(1) > 0 ? m.slice(1, 0, 1) : torch::zeros({m.size(0), 1}, m.options());
    m = torch::cat({head, m}, 1);
  }
  const auto opts = x.options().dtype(torch::kFloat32);
  const std::int64_t B = m.size(0), T = m.size(1);
  // Additive key bias [B, 1, 1, T] (0 visible, -1e9 padding) and query keep [B, T, 1].
  Masks out;
  out.key_bias =
      torch::zeros({B, 1, 1, T}, opts).masked_fill_(m.logical_not().view({B, 1, 1, T}), -1e9);
  out.query_keep = m.to(torch::kFloat32).view({B, T, 1});
  out.visible = m;
  return out;
}

torch::Tensor DialogEncoderImpl::forward(const EncoderInputs& in, bool prepend_cls) {
  torch::Tensor x = embed(in, prepend_cls);
  const Masks mk = masks(in, prepend_cls, x);
  if (padding_free_ && !layers_.empty()) {
    if (const auto lengths = right_padded_lengths(mk.visible)) return forward_packed(x, *lengths);
  }
  for (const auto& w : layers_) x = block(w, x, x, mk.key_bias, mk.query_keep);
  return x;
}

torch::Tensor DialogEncoderImpl::forward_cls(const EncoderInputs& in) {
  torch::Tensor x = embed(in, /*prepend_cls=*/true);
  const Masks mk = masks(in, /*prepend_cls=*/true, x);
  const std::size_t n = layers_.size();
  if (n == 0) return x.select(1, 0);
  if (padding_free_) {
    if (const auto lengths = right_padded_lengths(mk.visible))
      return forward_cls_packed(x, *lengths);
  }
  for (std::size_t i = 0; i + 1 < n; ++i) x = block(layers_[i], x, x, mk.key_bias, mk.query_keep);
  // Only row 0 of the last block's output is wanted: its keys and values still need every row,
  // but its query, attention row, output projection and feed-forward need only [CLS].
  const torch::Tensor cls = x.slice(1, 0, 1);
  return block(layers_[n - 1], cls, x, mk.key_bias, mk.query_keep.slice(1, 0, 1)).select(1, 0);
}

torch::Tensor DialogEncoderImpl::forward_rows(const EncoderInputs& in, const torch::Tensor& targets) {
  torch::Tensor x = embed(in, /*prepend_cls=*/false);
  if (targets.scalar_type() != torch::kBool || !targets.sizes().equals(in.input_ids.sizes())) {
    std::ostringstream msg;
    msg << "forward_rows: targets must be bool " << in.input_ids.sizes() << " like input_ids, got "
        << targets.scalar_type() << " " << targets.sizes();
    throw std::invalid_argument(msg.str());
  }
  const Masks mk = masks(in, /*prepend_cls=*/false, x);
  if (targets.logical_and(mk.visible.logical_not()).any().item<bool>())
    throw std::invalid_argument("forward_rows: targets selects a padding position");
  const std::size_t n = layers_.size();
  if (n == 0) return x.index({targets});
  if (padding_free_) {
    if (const auto lengths = right_padded_lengths(mk.visible))
      return forward_rows_packed(x, *lengths, targets);
  }
  for (std::size_t i = 0; i + 1 < n; ++i) x = block(layers_[i], x, x, mk.key_bias, mk.query_keep);
  // The last block: attention for every row (keys and values need them all, and the queries
  // are a small share of the work), the rest for the selected rows.
  const torch::Tensor context = attention_block(layers_[n - 1], x, x, mk.key_bias, mk.query_keep);
  return block_output(layers_[n - 1], x.index({targets}), context.index({targets}));
}

torch::Tensor DialogEncoderImpl::forward_rows_packed(const torch::Tensor& x,
                                                     const std::vector<std::int64_t>& lengths,
                                                     const torch::Tensor& targets) {
  const std::int64_t B = x.size(0), T = x.size(1), H = x.size(2);
  const PackedLayout lay = packed_layout(lengths, T, x.device());
  const std::size_t n = layers_.size();
  const torch::Tensor xp =
      packed_blocks(lay, x.reshape({B * T, H}).index_select(0, lay.rows), n - 1);
  const torch::Tensor context = packed_self_attention(lay, layers_[n - 1], xp);
  // Packed row of each selected position: `rows` holds the padded flat index of packed row i.
  const auto index_opts = lay.rows.options();
  const torch::Tensor packed_of_flat = torch::full({B * T}, -1, index_opts)
                                           .index_put_({lay.rows},
                                                       torch::arange(lay.rows.size(0), index_opts));
  const torch::Tensor pick =
      packed_of_flat.index_select(0, targets.reshape({B * T}).nonzero().squeeze(1));
  return block_output(layers_[n - 1], xp.index_select(0, pick), context.index_select(0, pick));
}

torch::Tensor DialogEncoderImpl::packed_self_attention(const PackedLayout& lay,
                                                       const TransformerLayerWeights& w,
                                                       const torch::Tensor& xp, bool cls_only) {
  auto attend_fn = [this](const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          const torch::Tensor& bias) { return attend(q, k, v, bias); };
  const auto [qkv_w, qkv_b] = fused_qkv(w);
  // Keys and values for every row; queries for every row, or for [CLS] (row 0 of each input).
  const torch::Tensor queries = cls_only ? xp.index_select(0, lay.first_rows) : xp;
  const std::vector<torch::Tensor> qkv = project_qkv(queries, xp, qkv_w, qkv_b);
  return packed_attend(lay, qkv[0], qkv[1], qkv[2], cls_only, attend_fn);
}

torch::Tensor DialogEncoderImpl::packed_blocks(const PackedLayout& lay, torch::Tensor xp,
                                               std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    xp = block_output(layers_[i], xp, packed_self_attention(lay, layers_[i], xp));
  }
  return xp;
}

torch::Tensor DialogEncoderImpl::forward_packed(const torch::Tensor& x,
                                                const std::vector<std::int64_t>& lengths) {
  const std::int64_t B = x.size(0), T = x.size(1), H = x.size(2);
  const PackedLayout lay = packed_layout(lengths, T, x.device());
  const torch::Tensor xp =
      packed_blocks(lay, x.reshape({B * T, H}).index_select(0, lay.rows), layers_.size());
  // Back to the padded layout (differentiable: the gradient of index_copy's source is the
  // gradient's rows at `rows`).
  return torch::zeros({B * T, H}, xp.options()).index_copy(0, lay.rows, xp).view({B, T, H});
}

torch::Tensor DialogEncoderImpl::forward_cls_packed(const torch::Tensor& x,
                                                    const std::vector<std::int64_t>& lengths) {
  const std::int64_t B = x.size(0), T = x.size(1), H = x.size(2);
  const PackedLayout lay = packed_layout(lengths, T, x.device());
  const std::size_t n = layers_.size();
  const torch::Tensor xp =
      packed_blocks(lay, x.reshape({B * T, H}).index_select(0, lay.rows), n - 1);
  // The last block for [CLS] alone (row 0 of each input), attending to every row.
  const TransformerLayerWeights& w = layers_[n - 1];
  const torch::Tensor cls = xp.index_select(0, lay.first_rows);  // [B, H], sorted order
  const torch::Tensor context = packed_self_attention(lay, w, xp, /*cls_only=*/true);
  return block_output(w, cls, context).index_select(0, lay.inverse);
}

// ---------------------------------------------------------------------------------------------
// SpaceModel

SpaceModelImpl::SpaceModelImpl(EncoderConfig config) {
  config.validate();
  const std::int64_t H = config.hidden_size;
  const std::int64_t K = static_cast<std::int64_t>(config.projection_views.size());
  const std::int64_t P = config.projection_dim;
  const std::int64_t V = config.vocab_size;
  const std::int64_t num_labels = config.num_labels, num_tags = config.num_tags;
  bert_ = register_module("bert", DialogEncoder(std::move(config)));
  mlm_dense_w_ = add_param(*this, "cls.predictions.transform.dense.weight", {H, H});
  mlm_dense_b_ = add_param(*this, "cls.predictions.transform.dense.bias", {H});
  mlm_ln_w_ = add_param(*this, "cls.predictions.transform.LayerNorm.weight", {H});
  mlm_ln_b_ = add_param(*this, "cls.predictions.transform.LayerNorm.bias", {H});
  mlm_bias_ = add_param(*this, "cls.predictions.bias", {V});
  proj_w_ = add_param(*this, "projection.dense.weight", {K * P, H});
  proj_b_ = add_param(*this, "projection.dense.bias", {K * P});
  if (num_labels > 0) {
    intent_w_ = add_param(*this, "intent_classifier.weight", {num_labels, H});
    intent_b_ = add_param(*this, "intent_classifier.bias", {num_labels});
  }
  if (num_tags > 0) {
    tag_w_ = add_param(*this, "token_classifier.weight", {num_tags, H});
    tag_b_ = add_param(*this, "token_classifier.bias", {num_tags});
  }
  reset_parameters();
}

void SpaceModelImpl::reset_parameters() {
  init_bert_style(*this, config().initializer_range);
}

torch::Tensor SpaceModelImpl::cls_vector(const torch::Tensor& hidden) {
  if (hidden.dim() != 3 || hidden.size(1) < 1) {
    std::ostringstream msg;
    msg << "cls_vector: expected hidden states [B, L+1, H], got " << hidden.sizes();
    throw std::invalid_argument(msg.str());
  }
  return hidden.select(1, 0);
}

torch::Tensor SpaceModelImpl::mlm_logits(const torch::Tensor& hidden) {
  torch::Tensor t = torch::gelu(torch::linear(hidden, mlm_dense_w_, mlm_dense_b_));
  t = layer_norm(t, mlm_ln_w_, mlm_ln_b_, config().layer_norm_eps);
  return torch::linear(t, bert_->word_embeddings(), mlm_bias_);
}

torch::Tensor SpaceModelImpl::project(const torch::Tensor& cls) {
  if (cls.dim() != 2 || cls.size(1) != config().hidden_size) {
    std::ostringstream msg;
    msg << "project: expected [B, " << config().hidden_size << "], got " << cls.sizes();
    throw std::invalid_argument(msg.str());
  }
  const std::int64_t K = static_cast<std::int64_t>(config().projection_views.size());
  return torch::tanh(torch::linear(cls, proj_w_, proj_b_))
      .view({cls.size(0), K, config().projection_dim});
}

torch::Tensor SpaceModelImpl::intent_logits(const torch::Tensor& cls) {
  DIALTREE_CHECK(has_intent_head(), "intent_logits: model has no intent head (num_labels = 0)");
  return torch::linear(cls, intent_w_, intent_b_);
}

torch::Tensor SpaceModelImpl::tag_logits(const torch::Tensor& token_hidden) {
  DIALTREE_CHECK(has_tag_head(), "tag_logits: model has no tagger (num_tags = 0)");
  return torch::linear(token_hidden, tag_w_, tag_b_);
}

}  // namespace dialtree::model
