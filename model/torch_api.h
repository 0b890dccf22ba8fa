#pragma once
/// The part of LibTorch that dialtree's tensor code uses, included instead of <torch/torch.h>.
///
/// <torch/torch.h> also brings the data loaders, JIT, serialization, every optimiser and every
/// nn layer, which dialtree does not use: parsing it costs a translation unit about 1.6x the time
/// of this set (docs/build.md P12). What is here: tensors and their operators, autograd and its
/// modes (NoGradGuard, InferenceMode, custom autograd functions), torch::nn::Module with
/// TORCH_MODULE, gradient clipping, manual_seed, the CUDA queries and TORCH_VERSION. A file that
/// needs more includes it itself: <torch/optim/adamw.h> (trainer/step.h), <torch/serialize.h>
/// (trainer/pretrain.cpp), <torch/nn/functional/loss.h> (eval/finetune.cpp).

#include <torch/autograd.h>
#include <torch/cuda.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>
