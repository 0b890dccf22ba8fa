// Where tensors live (docs/gpu.md): turning a device spelling (common/device_spec.h) into a
// torch::Device on the running machine, moving batches there, and bf16 autocast for either device
// type. The autocast calls differ between LibTorch 1.13 and 2.x; this is the one place that
// knows both (docs/gpu.md "LibTorch versions").
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>  // host_environment(); device.cpp includes json.hpp

#include "model/torch_api.h"

#include "common/device_spec.h"
#include "model/batch.h"
#include "model/collate.h"

namespace dialtree::model {

/// The device `spec` names on this machine: "auto" is cuda:0 when LibTorch sees a CUDA device,
/// else cpu; "cuda" is cuda:0.
/// @param origin where the spelling came from, for the message (e.g. "--device",
///   "DIALTREE_DEVICE", "config.yaml: line 4: device")
/// @throws DataError(origin) when `spec` is not a device spelling, when it names CUDA and this
///   LibTorch has no CUDA or sees no GPU, or when N is not below the number of GPUs it sees.
torch::Device resolve_device(const std::string& spec, const std::string& origin);

/// `t` on `device`: the same tensor when already there or undefined. With `non_blocking` and a
/// CUDA target, a pinned host copy is made first so that the copy can overlap the previous
/// step's kernels.
torch::Tensor to_device(const torch::Tensor& t, const torch::Device& device,
                        bool non_blocking = false);

/// to_device() of every tensor of `in`.
EncoderInputs to_device(const EncoderInputs& in, const torch::Device& device,
                        bool non_blocking = false);

/// to_device() of the inputs and the MLM labels (left undefined when undefined).
CollatedBatch to_device(const CollatedBatch& batch, const torch::Device& device,
                        bool non_blocking = false);

/// The device of the first parameter of `module` (cpu for a module without parameters).
torch::Device module_device(const torch::nn::Module& module);

/// Whether forward passes on `device` run under bf16 autocast when `requested`: on CUDA always
/// (bf16 tensor cores from Ampere on), on the CPU only with native bf16 (common/cpu_features.h
/// effective_bf16, which explains a refusal in `note`).
bool effective_bf16(const torch::Device& device, bool requested, std::string* note = nullptr);

/// What a run's speed depends on, for the records a run writes (`train`'s env.json,
/// `eval dialoglue`'s results.json "env"): "libtorch" (version), "intra_op_threads",
/// "inter_op_threads", "cpu_model", "cpu_flags" (those of avx2, avx512f, avx512_bf16, amx_bf16,
/// amx_tile the CPU has), "blas", "blas_kernels", "blas_threads", "blas_kernel_choice" (the
/// launcher's reason, docs/performance.md) and "malloc" (common/malloc_info.h). Never throws.
nlohmann::json host_environment();

/// Whether bf16 autocast is on for `type` (kCPU or kCUDA) in this thread.
bool autocast_enabled(torch::DeviceType type);

/// Turns autocast for `type` on (in bf16) or off in this thread. Turning it off does not
/// clear the weight-cast cache; AutocastScope does when it ends.
void set_autocast(torch::DeviceType type, bool on);

/// RAII: bf16 autocast on `type` for the forward pass while alive (weights stay fp32; on CPU
/// only where the CPU has native bf16, docs/build.md); a no-op when constructed with `on` false.
/// Restores the previous state and clears autocast's weight-cast cache on exit.
class AutocastScope {
 public:
  explicit AutocastScope(bool on, torch::DeviceType type = torch::kCPU);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool on_;
  bool was_on_ = false;
  torch::DeviceType type_;
};

/// RAII: autocast off for `type` while alive (fp32 islands inside an autocast region, e.g. the
/// contrastive head at τ = 0.07), restored on exit.
class AutocastOff {
 public:
  explicit AutocastOff(torch::DeviceType type);
  ~AutocastOff();
  AutocastOff(const AutocastOff&) = delete;
  AutocastOff& operator=(const AutocastOff&) = delete;

 private:
  torch::DeviceType type_;
  bool was_on_;
};

}  // namespace dialtree::model
