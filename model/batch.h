// The tensors one encoder forward pass takes (docs/method.md §1.2, §1.5). data/ stays torch-free;
// collation of data::SerializedExample batches into these tensors lives in model/.
#pragma once

#include "model/torch_api.h"

namespace dialtree::model {

/// A padded batch of serialised dialog contexts. All tensors are int64, shape [B, L], on the
/// same device; padding is on the right and has input_ids == pad id (0).
struct EncoderInputs {
  torch::Tensor input_ids;       ///< token ids
  torch::Tensor attention_mask;  ///< 1 for real tokens, 0 for padding
  torch::Tensor position_ids;    ///< restart at 0 for every utterance (docs/method.md §1.2)
  torch::Tensor role_ids;        ///< 1 = current speaker's side, 0 = the other (parity rule)
  torch::Tensor turn_ids;        ///< 1 = current utterance, 2 = previous, ...; 0 = padding
};

}  // namespace dialtree::model
