// CPU kernels the encoder uses instead of the stock ATen ones where those are slow on our
// stack (bench/README.md, "where the time goes"):
//  * dropout_threads(): torch::dropout's CPU bernoulli_ draws one element after another (~6 ns
//  each,
//    a third of a bf16 training step); this one hashes (seed, element index) on all threads.
//  * bmm_threads(): at::bmm without MKL runs the B small GEMMs one after another, each split
//    across all threads; this one runs one single-threaded GEMM per slice, slices spread over
//    the threads.
// Both are differentiable (autograd) and deterministic for a given torch generator state.
#pragma once

#include "model/torch_api.h"

namespace dialtree::model {

/// Inverted dropout: during training each element of `x` is zeroed with probability `p` and the
/// rest are scaled by 1/(1-p); identity when `train` is false or p == 0. Same contract as
/// torch::dropout, different random stream: the 64-bit seed is drawn from torch's default CPU
/// generator (so torch::manual_seed and saved RNG states govern it) and element i is kept iff
/// the top 24 bits of splitmix64(seed + i) are >= p·2^24. Works on any dtype (the scale is
/// applied in x's dtype) and on non-contiguous x (the mask follows x's logical order).
/// Off the CPU (CUDA) it is torch::dropout itself.
/// @throws std::invalid_argument unless 0 <= p < 1.
torch::Tensor dropout_threads(const torch::Tensor& x, double p, bool train);

/// Batched matrix product out[i] = a[i] · b[i]: a [N, M, K], b [N, K, P] -> [N, M, P], any
/// strides (transposed views are passed to BLAS without copies). Slices run in parallel over
/// torch's intra-op threads, one single-threaded GEMM each. Differentiable: the backward pass
/// is two more bmm_threads calls (grad·bᵀ and aᵀ·grad). Only for two fp32 CPU operands outside
/// CPU autocast; otherwise it is torch::matmul (autocast's casts and the device's kernels).
/// @throws std::invalid_argument if the shapes do not match as above.
torch::Tensor bmm_threads(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace dialtree::model
