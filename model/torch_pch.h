#pragma once
/// The LibTorch headers precompiled once by dialtree_model and loaded by every LibTorch target
/// when the build uses precompiled headers (clang; `DIALTREE_TORCH_PCH`, docs/build.md P14).
/// Never included by code: each file still includes what it uses, so the build is the same
/// without precompiled headers. Adding a header here costs only its one-time precompilation.

#include "model/torch_api.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>
