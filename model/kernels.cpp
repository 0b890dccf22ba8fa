#include "model/kernels.h"

#include <cstdint>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include "model/device.h"

namespace dialtree::model {
namespace {

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// One draw from torch's default CPU generator (advances it like any other torch random op).
std::uint64_t draw_seed() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
}

torch::Tensor bmm_slices(const torch::Tensor& a, const torch::Tensor& b) {
  const std::int64_t n = a.size(0);
  torch::Tensor out = torch::empty({n, a.size(1), b.size(2)}, a.options());
  // Inside at::parallel_for the GEMMs below run single-threaded (ATen and the OpenMP OpenBLAS
  // both see that they are in a parallel region).
  at::parallel_for(0, n, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      torch::Tensor o = out.select(0, i);
      at::mm_out(o, a.select(0, i), b.select(0, i));
    }
  });
  return out;
}

class ThreadedBmm : public torch::autograd::Function<ThreadedBmm> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a,
                               const torch::Tensor& b) {
    ctx->save_for_backward({a, b});
    return bmm_slices(a, b);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& g = grads[0];
    return {bmm_slices(g, saved[1].transpose(1, 2)), bmm_slices(saved[0].transpose(1, 2), g)};
  }
};

}  // namespace

torch::Tensor dropout_threads(const torch::Tensor& x, double p, bool train) {
  if (!(p >= 0.0 && p < 1.0)) {
    std::ostringstream msg;
    msg << "dropout: probability must be in [0, 1), got " << p;
    throw std::invalid_argument(msg.str());
  }
  if (!train || p == 0.0 || x.numel() == 0) return x;
  // Off the CPU, the device's own dropout kernel (one fused launch) is the fast one.
  if (!x.is_cpu()) return torch::dropout(x, p, train);
  const std::uint64_t seed = draw_seed();
  const auto threshold = static_cast<std::uint64_t>(p * static_cast<double>(1 << 24));
  torch::Tensor mask =
      torch::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kBFloat16, at::kHalf, x.scalar_type(), "dialtree_dropout", [&] {
        const auto keep = static_cast<scalar_t>(1.0 / (1.0 - p));
        const auto drop = static_cast<scalar_t>(0.0);
        scalar_t* m = mask.data_ptr<scalar_t>();
        at::parallel_for(0, mask.numel(), 1 << 15, [&](std::int64_t begin, std::int64_t end) {
          for (std::int64_t i = begin; i < end; ++i) {
            const std::uint64_t r = splitmix64(seed + static_cast<std::uint64_t>(i));
            m[i] = (r >> 40) >= threshold ? keep : drop;
          }
        });
      });
  return x * mask;
}

torch::Tensor bmm_threads(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.dim() != 3 || b.dim() != 3 || a.size(0) != b.size(0) || a.size(2) != b.size(1)) {
    std::ostringstream msg;
    msg << "bmm_threads: expected a [N, M, K] and b [N, K, P], got " << a.scalar_type() << " "
        << a.sizes() << " and " << b.scalar_type() << " " << b.sizes();
    throw std::invalid_argument(msg.str());
  }
  // Under autocast (or for other dtypes, or off the CPU) the stock product keeps autocast's
  // casting rules and the device's batched kernel.
  if (!a.is_cpu() || a.scalar_type() != torch::kFloat32 || b.scalar_type() != torch::kFloat32 ||
      autocast_enabled(torch::kCPU)) {
    return torch::matmul(a, b);
  }
  return ThreadedBmm::apply(a, b);
}

}  // namespace dialtree::model
