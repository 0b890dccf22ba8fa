#include "model/device.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include "common/blas_kernels.h"
#include "common/cpu_features.h"
#include "common/error.h"
#include "common/malloc_info.h"

// LibTorch 2.4 replaced the per-device autocast functions (set_cpu_enabled, set_enabled for
// CUDA, set_autocast_gpu_dtype...) by ones that take the device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define DIALTREE_AUTOCAST_BY_DEVICE_TYPE 1
#else
#define DIALTREE_AUTOCAST_BY_DEVICE_TYPE 0
#endif

namespace dialtree::model {

torch::Device resolve_device(const std::string& spec, const std::string& origin) {
  const std::optional<DeviceSpec> parsed = parse_device_spec(spec);
  if (!parsed) throw DataError(origin, "", "", device_spec_problem(spec));
  const bool has_cuda = torch::cuda::is_available();
  const auto gpus = has_cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
  switch (parsed->kind) {
    case DeviceSpec::Kind::Cpu:
      return torch::Device(torch::kCPU);
    case DeviceSpec::Kind::Auto:
      return gpus > 0 ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    case DeviceSpec::Kind::Cuda:
      break;
  }
  if (gpus == 0) {
    throw DataError(
        origin, "", "",
        "\"" + spec + "\": " +
            (torch::hasCUDA() ? std::string("this LibTorch has CUDA but sees no GPU "
                                            "(check CUDA_VISIBLE_DEVICES and the driver)")
                              : std::string("this build's LibTorch has no CUDA "
                                            "(build against a CUDA LibTorch: "
                                            "docs/gpu.md)")) +
            "; use cpu or auto");
  }
  const int index = parsed->index.value_or(0);
  if (index >= gpus) {
    throw DataError(origin, "", "",
                    "\"" + spec + "\": LibTorch sees " + std::to_string(gpus) + " GPU" +
                        (gpus == 1 ? "" : "s") + " (cuda:0 to cuda:" + std::to_string(gpus - 1) +
                        ")");
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

torch::Tensor to_device(const torch::Tensor& t, const torch::Device& device, bool non_blocking) {
  if (!t.defined() || t.device() == device) return t;
  if (non_blocking && device.is_cuda() && t.is_cpu()) return t.pin_memory().to(device, true);
  return t.to(device);
}

EncoderInputs to_device(const EncoderInputs& in, const torch::Device& device, bool non_blocking) {
  auto move = [&](const torch::Tensor& t) { return to_device(t, device, non_blocking); };
  return {move(in.input_ids), move(in.attention_mask), move(in.position_ids), move(in.role_ids),
          move(in.turn_ids)};
}

CollatedBatch to_device(const CollatedBatch& batch, const torch::Device& device,
                        bool non_blocking) {
  return {to_device(batch.inputs, device, non_blocking),
          to_device(batch.mlm_labels, device, non_blocking)};
}

torch::Device module_device(const torch::nn::Module& module) {
  for (const auto& p : module.parameters()) return p.device();
  return torch::Device(torch::kCPU);
}

bool effective_bf16(const torch::Device& device, bool requested, std::string* note) {
  if (device.is_cuda()) return requested;
  return dialtree::effective_bf16(requested, note);
}

bool autocast_enabled(torch::DeviceType type) {
#if DIALTREE_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(type);
#else
  return type == torch::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

void set_autocast(torch::DeviceType type, bool on) {
#if DIALTREE_AUTOCAST_BY_DEVICE_TYPE
  if (on) at::autocast::set_autocast_dtype(type, at::kBFloat16);
  at::autocast::set_autocast_enabled(type, on);
#else
  if (type == torch::kCUDA) {
    if (on) at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(on);
  } else {
    if (on) at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(on);
  }
#endif
}

AutocastScope::AutocastScope(bool on, torch::DeviceType type) : on_(on), type_(type) {
  if (on_) {
    was_on_ = autocast_enabled(type_);
    set_autocast(type_, true);
  }
}

AutocastScope::~AutocastScope() {
  if (on_) {
    set_autocast(type_, was_on_);
    if (!was_on_) at::autocast::clear_cache();
  }
}

AutocastOff::AutocastOff(torch::DeviceType type) : type_(type), was_on_(autocast_enabled(type)) {
  if (was_on_) set_autocast(type_, false);
}

AutocastOff::~AutocastOff() {
  if (was_on_) set_autocast(type_, true);
}

nlohmann::json host_environment() {
  const CpuInfo& cpu = host_cpu();
  nlohmann::json cpu_flags = nlohmann::json::array();
  for (const char* f : {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}) {
    if (cpu.has(f)) cpu_flags.push_back(f);
  }
  // First: LibTorch applies its thread count to this thread's OpenMP on first use, and the
  // OpenMP OpenBLAS's count (blas_threads) follows it.
  const int intra_op_threads = at::get_num_threads();
  const BlasRuntime blas = inspect_loaded_blas();
  const char* choice = std::getenv(kBlasDecisionEnv);
  return {{"libtorch", TORCH_VERSION},
          {"intra_op_threads", intra_op_threads},
          {"inter_op_threads", at::get_num_interop_threads()},
          {"cpu_model", cpu.model_name},
          {"cpu_flags", cpu_flags},
          {"blas", blas.library},
          {"blas_kernels", blas.corename},
          {"blas_threads", blas.num_threads},
          {"blas_kernel_choice", choice != nullptr ? choice : ""},
          {"malloc", malloc_implementation()}};
}

}  // namespace dialtree::model
