// The SPACE-2 dialog encoder (docs/method.md §1.1, §1.2) and its heads (§1.6), in LibTorch.
//
// A BERT-style post-LN transformer with SPACE-2's role and turn embeddings and the prepended
// bare [CLS] head vector. Parameter names follow Hugging Face `BertForPreTraining` where the part
// exists in BERT, so importing a BERT checkpoint is a rename table:
//
//   bert.embeddings.{word,position,token_type,turn}_embeddings.weight  (token_type = role table)
//   bert.embeddings.LayerNorm.{weight,bias}
//   bert.encoder.layer.N.attention.self.{query,key,value}.{weight,bias}
//   bert.encoder.layer.N.attention.output.{dense,LayerNorm}.{weight,bias}
//   bert.encoder.layer.N.intermediate.dense.{weight,bias}
//   bert.encoder.layer.N.output.{dense,LayerNorm}.{weight,bias}
//   cls.predictions.transform.{dense,LayerNorm}.{weight,bias}, cls.predictions.bias
//     (the MLM decoder weight is tied to word_embeddings and not stored twice)
//   projection.dense.{weight,bias}
//   intent_classifier.{weight,bias}   (only when num_labels > 0)
//   token_classifier.{weight,bias}    (only when num_tags > 0)
//
// Choices, documented here once:
// * Embedding order is SPACE-2's, not BERT's: sum of the four embeddings, then dropout
//   (embedding_dropout_prob), then the [CLS] vector is prepended (no dropout on it), then
//   LayerNorm over all L+1 rows (docs/method.md §1.2).
// * Attention: Q, K and V come from one fused [3H, H] product (1/sqrt(d) folded into the query
//   rows); padded keys get an additive -1e9 (the mask is extended so [CLS] copies token 0's), so
//   every softmax row is finite, and the context rows of padding queries are zeroed. Real rows
//   never see padding, and padding rows produce no NaN in the forward or the backward pass.
// * Dropout and the fp32 attention products use model/kernels.h (threaded CPU kernels, same
//   contract as torch::dropout / torch::matmul, different random stream for dropout).
// * FFN has SPACE-2's extra dropout after the GELU (ffn_dropout_prob), docs/method.md §1.1.
// * Every matrix product goes through torch::linear / torch::matmul (docs/build.md P5), so the
//   forward pass runs under CPU bf16 autocast; LayerNorm and softmax then run in fp32.
// * Initialisation follows HF BERT: weights and embedding tables N(0, initializer_range),
//   biases 0, LayerNorm gain 1 and shift 0 (uses torch's global RNG; seed it for determinism).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/torch_api.h"

#include "model/batch.h"
#include "model/config.h"

namespace dialtree::model {

struct PackedLayout;  // model/encoder.cpp: the packed rows and attention buckets of a batch

/// Tensors of one transformer block (HF names in the comments, relative to encoder.layer.N).
struct TransformerLayerWeights {
  torch::Tensor query_w, query_b;        ///< attention.self.query   [H, H], [H]
  torch::Tensor key_w, key_b;            ///< attention.self.key     [H, H], [H]
  torch::Tensor value_w, value_b;        ///< attention.self.value   [H, H], [H]
  torch::Tensor attn_out_w, attn_out_b;  ///< attention.output.dense  [H, H], [H]
  torch::Tensor attn_ln_w, attn_ln_b;    ///< attention.output.LayerNorm [H], [H]
  torch::Tensor inter_w, inter_b;        ///< intermediate.dense [F, H], [F]
  torch::Tensor out_w, out_b;            ///< output.dense [H, F], [H]
  torch::Tensor out_ln_w, out_ln_b;      ///< output.LayerNorm [H], [H]
};

/// The encoder body (registered as "bert" inside SpaceModel): embeddings + post-LN blocks.
class DialogEncoderImpl : public torch::nn::Module {
 public:
  /// Builds and initialises the parameters. @throws std::invalid_argument if config is invalid.
  explicit DialogEncoderImpl(EncoderConfig config);

  /// As above, but the word-embedding table is `shared_word_embeddings` [vocab_size,
  /// hidden_size], another encoder's table: it is read, and gets gradients, through that
  /// encoder's parameter; it is not a parameter of this module (not registered, not
  /// re-initialised, not saved with it). For ELECTRA's generator, which shares the
  /// discriminator's token embeddings (docs/training.md "Replaced-token detection").
  /// @throws std::invalid_argument if config is invalid or the table's shape differs.
  DialogEncoderImpl(EncoderConfig config, torch::Tensor shared_word_embeddings);

  /// Final hidden states, float [B, L+1, H] with prepend_cls (row 0 = the [CLS] head vector's
  /// state, the "mask encoder" of docs/method.md §1.2) or [B, L, H] without (the "plain encoder",
  /// used for the MLM pass). Float32, or bf16 pieces under autocast (the LayerNorm output is
  /// fp32). Rows of padding positions are finite but meaningless.
  /// @throws std::invalid_argument naming the tensor if an input is not int64 [B, L], shapes
  ///   differ, or an id is outside its table (vocab, position, role, turn).
  torch::Tensor forward(const EncoderInputs& inputs, bool prepend_cls = true);

  /// The final state of the [CLS] head vector alone, float [B, H]: row 0 of
  /// forward(inputs, true) (equal up to float rounding of the smaller products), for inference
  /// that needs only the dialog vector (embeddings, intent prediction). The last block computes
  /// keys and values for every row but its query, attention row, output projection and
  /// feed-forward for [CLS] only, which saves about 10/12 of one block's matrix work. Used for
  /// inference and for the contrastive pass of training (differentiable like forward()). With
  /// padding_free() (the default), inputs that are right-padded (every mask a prefix of ones,
  /// none empty: what collate() makes) run packed: projections and feed-forward see only real
  /// tokens, and attention pads per bucket of similar lengths (forward_cls_packed), so a batch of
  /// mixed lengths costs about what its real tokens cost. Other masks take the padded path.
  /// @throws as forward().
  torch::Tensor forward_cls(const EncoderInputs& inputs);

  /// The plain encoder's final states (forward(inputs, false), no [CLS]) of the rows `targets`
  /// selects, float [N, H] (N = targets' true count), in row-major order:
  /// forward(inputs, false).index({targets}) up to float rounding. The last block computes
  /// attention for every row but its output projection and feed-forward (about 70 % of its
  /// matrix work) for the selected rows only. For the MLM pass, whose loss reads the ~15 %
  /// masked rows (docs/performance.md "The MLM pass"). Packed like forward() for right-padded
  /// inputs; with dropout > 0 the last block draws masks for the selected rows only, so the
  /// random stream differs from forward()'s. `targets`: bool [B, L].
  /// @throws as forward(); std::invalid_argument if `targets` is not bool [B, L] or selects a
  ///   padding position.
  torch::Tensor forward_rows(const EncoderInputs& inputs, const torch::Tensor& targets);

  /// The embedding output that enters block 0 (after dropout and LayerNorm), same shapes as
  /// forward(). @throws as forward().
  torch::Tensor embed(const EncoderInputs& inputs, bool prepend_cls = true);

  /// Padding-free forward() (docs/performance.md "Padding-free batches"), on by default: for
  /// right-padded inputs (what collate() makes) the blocks run on the real rows only, packed
  /// [N, H] (N = Σ lengths), and attention pads per bucket of similar lengths, as in
  /// forward_cls(). Real rows get the padded path's values up to float rounding, padding rows
  /// are 0, and every loss over real rows keeps its value and gradient; dropout draws its
  /// masks over the packed rows, so with dropout > 0 the random stream differs. Off: every
  /// forward pads to the longest input (the reference for tests and benchmarks).
  void set_padding_free(bool on) { padding_free_ = on; }
  bool padding_free() const { return padding_free_; }

  /// Word-embedding table [V, H] (also the tied MLM decoder weight).
  const torch::Tensor& word_embeddings() const { return word_; }
  const EncoderConfig& config() const { return config_; }
  /// Re-draws every parameter with the HF BERT initialisation (see file comment).
  void reset_parameters();

 private:
  /// Additive key bias [B, 1, 1, T] (0 visible, -1e9 padding), query keep float [B, T, 1] and
  /// the visible rows, bool [B, T].
  struct Masks {
    torch::Tensor key_bias, query_keep, visible;
  };
  Masks masks(const EncoderInputs& inputs, bool prepend_cls, const torch::Tensor& x) const;

  /// The fused query/key/value projection of block `w`: weight [3H, H], bias [3H], with
  /// 1/sqrt(head_dim) folded into the query rows.
  std::pair<torch::Tensor, torch::Tensor> fused_qkv(const TransformerLayerWeights& w) const;
  /// Scaled dot-product attention of projected queries `q` [B, Tq, H] over keys/values `k`, `v`
  /// [B, T, H] with `key_bias` [B, 1, 1, T] -> context [B, Tq, H] (heads merged).
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                       const torch::Tensor& key_bias);
  /// Self-attention of block `w` for the query rows `xq` [B, Tq, H] over the rows of `x`
  /// [B, T, H] (xq is x, or its leading rows); `query_keep` [B, Tq, 1]. -> context [B, Tq, H].
  torch::Tensor attention_block(const TransformerLayerWeights& w, const torch::Tensor& xq,
                                const torch::Tensor& x, const torch::Tensor& key_bias,
                                const torch::Tensor& query_keep);
  /// The rest of a post-LN block after attention: output projection, residual + LayerNorm,
  /// feed-forward, residual + LayerNorm. `xq` and `context` [..., H] -> [..., H].
  torch::Tensor block_output(const TransformerLayerWeights& w, const torch::Tensor& xq,
                             const torch::Tensor& context);
  /// One post-LN transformer block for the query rows `xq` over `x` -> [B, Tq, H].
  torch::Tensor block(const TransformerLayerWeights& w, const torch::Tensor& xq,
                      const torch::Tensor& x, const torch::Tensor& key_bias,
                      const torch::Tensor& query_keep);
  /// forward_cls() for right-padded inputs: `x` is embed()'s output [B, T, H] and `lengths`
  /// (B values >= 1) the visible rows of each input. Runs on the real rows only, packed
  /// [N, H] (N = Σ lengths), shortest input first; attention pads per bucket of similar
  /// lengths (plan_length_buckets). -> [B, H] in the inputs' order.
  torch::Tensor forward_cls_packed(const torch::Tensor& x,
                                   const std::vector<std::int64_t>& lengths);
  /// forward_rows() for right-padded inputs: `x` is embed()'s output [B, T, H], `lengths` the
  /// visible rows of each input, `targets` bool [B, T]. -> [N, H] in row-major target order.
  torch::Tensor forward_rows_packed(const torch::Tensor& x, const std::vector<std::int64_t>& lengths,
                                    const torch::Tensor& targets);
  /// Block `w`'s self-attention context of the packed rows `xp` [N, H] of layout `lay` (fused
  /// QKV, attention per length bucket): of every row -> [N, H], or with `cls_only` of each
  /// input's first row ([CLS]) alone, in sorted order -> [B, H]; block_output() completes the
  /// block.
  torch::Tensor packed_self_attention(const PackedLayout& lay, const TransformerLayerWeights& w,
                                      const torch::Tensor& xp, bool cls_only = false);
  /// Blocks [0, count) on the packed rows `xp` [N, H] of layout `lay` -> [N, H].
  torch::Tensor packed_blocks(const PackedLayout& lay, torch::Tensor xp, std::size_t count);
  /// forward() for right-padded inputs, padding-free: every block on the packed real rows of
  /// `x` (embed()'s output [B, T, H]), attention per length bucket. -> [B, T, H] with the real
  /// rows in place and zeros on padding.
  torch::Tensor forward_packed(const torch::Tensor& x, const std::vector<std::int64_t>& lengths);

  EncoderConfig config_;
  torch::Tensor word_, position_, role_, turn_, emb_ln_w_, emb_ln_b_;
  std::vector<TransformerLayerWeights> layers_;
  bool padding_free_ = true;
};
TORCH_MODULE(DialogEncoder);

/// The full pretraining / fine-tuning model: encoder ("bert") plus the heads of docs/method.md
/// §1.6.
class SpaceModelImpl : public torch::nn::Module {
 public:
  /// Builds and initialises the encoder and heads; the intent head exists iff num_labels > 0,
  /// the tagger iff num_tags > 0. @throws std::invalid_argument if config is invalid.
  explicit SpaceModelImpl(EncoderConfig config);

  /// DialogEncoder::forward(): [B, L+1, H] (prepend_cls) or [B, L, H].
  torch::Tensor forward(const EncoderInputs& inputs, bool prepend_cls = true) {
    return bert_->forward(inputs, prepend_cls);
  }

  /// DialogEncoder::forward_cls(): the [CLS] final state [B, H] without the other rows' last
  /// block. Same values as cls_vector(forward(inputs, true)) up to float rounding.
  torch::Tensor forward_cls(const EncoderInputs& inputs) { return bert_->forward_cls(inputs); }

  /// DialogEncoder::forward_rows(): the plain encoder's final states of the `targets` rows
  /// [N, H], the last block's output projection and feed-forward for those rows only. Same values
  /// as forward(inputs, false).index({targets}) up to float rounding.
  torch::Tensor forward_rows(const EncoderInputs& inputs, const torch::Tensor& targets) {
    return bert_->forward_rows(inputs, targets);
  }

  /// The dialog vector: row 0 of hidden states [B, L+1, H] from forward(prepend_cls=true) ->
  /// [B, H] (keeps B == 1, CASES C35). @throws std::invalid_argument if `hidden` is not 3-D.
  static torch::Tensor cls_vector(const torch::Tensor& hidden);

  /// MLM logits (docs/method.md §1.6): dense -> GELU -> LayerNorm, then h·E_tokᵀ + bias.
  /// `hidden` [..., H] (e.g. the gathered target rows [N, H]) -> [..., V].
  torch::Tensor mlm_logits(const torch::Tensor& hidden);

  /// Per-view projection (docs/method.md §1.6): tanh(Linear(H -> K·P)) reshaped to [B, K, P], view
  /// k = config().projection_views[k]. Not L2-normalised (the loss does that).
  /// `cls` [B, H]. @throws std::invalid_argument if cls is not [B, H].
  torch::Tensor project(const torch::Tensor& cls);

  /// Intent logits [B, num_labels] from the [CLS] state `cls` [B, H].
  /// @throws std::logic_error if the model has no intent head (num_labels == 0).
  torch::Tensor intent_logits(const torch::Tensor& cls);

  /// Tag logits [..., num_tags] from token states [..., H] (for prepended-[CLS] outputs pass
  /// hidden.slice(1, 1) so row j matches input token j).
  /// @throws std::logic_error if the model has no tagger (num_tags == 0).
  torch::Tensor tag_logits(const torch::Tensor& token_hidden);

  DialogEncoder& encoder() { return bert_; }
  const EncoderConfig& config() const { return bert_->config(); }
  bool has_intent_head() const { return config().num_labels > 0; }
  bool has_tag_head() const { return config().num_tags > 0; }
  /// Re-draws every parameter (encoder and heads) with the HF BERT initialisation.
  void reset_parameters();

 private:
  DialogEncoder bert_{nullptr};
  torch::Tensor mlm_dense_w_, mlm_dense_b_, mlm_ln_w_, mlm_ln_b_, mlm_bias_;
  torch::Tensor proj_w_, proj_b_;
  torch::Tensor intent_w_, intent_b_, tag_w_, tag_b_;
};
TORCH_MODULE(SpaceModel);

/// HF-BERT initialisation of every parameter of `module` by name: LayerNorm gains ("...LayerNorm
/// .weight") 1, other 1-D tensors 0, matrices N(0, std). Exposed for the trainer's re-init of
/// new heads.
void init_bert_style(torch::nn::Module& module, double std);

}  // namespace dialtree::model
