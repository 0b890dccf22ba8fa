#include "trainer/step_stats.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dialtree::trainer {

namespace {

constexpr std::size_t kStepStatsScalars = 11;  // the 9 loss parts, tokens, real_tokens

}  // namespace

StepStats::StepStats(int world) {
  if (world < 1) throw std::invalid_argument("StepStats: world must be >= 1");
  rank_compute.assign(static_cast<std::size_t>(world), 0.0);
  rank_collective.assign(static_cast<std::size_t>(world), 0.0);
}

void StepStats::add_micro_batch(const StepLosses& l, std::int64_t micro_batches) {
  const auto n = static_cast<double>(micro_batches);
  losses.total += l.total / n;
  losses.sup += l.sup / n;
  losses.self += l.self / n;
  losses.mlm_l += l.mlm_l / n;
  losses.mlm_u += l.mlm_u / n;
  losses.generator_mlm += l.generator_mlm / n;
  losses.replaced_token += l.replaced_token / n;
  losses.encoder_mlm += l.encoder_mlm / n;
  losses.token_contrastive += l.token_contrastive / n;
}

void StepStats::set_rank_seconds(int rank, double compute, double collective) {
  rank_compute.at(static_cast<std::size_t>(rank)) = compute;
  rank_collective.at(static_cast<std::size_t>(rank)) = collective;
}

std::vector<double> StepStats::to_vector() const {
  std::vector<double> v = {losses.total,
                           losses.sup,
                           losses.self,
                           losses.mlm_l,
                           losses.mlm_u,
                           losses.generator_mlm,
                           losses.replaced_token,
                           losses.encoder_mlm,
                           losses.token_contrastive,
                           tokens,
                           real_tokens};
  v.insert(v.end(), rank_compute.begin(), rank_compute.end());
  v.insert(v.end(), rank_collective.begin(), rank_collective.end());
  return v;
}

StepStats StepStats::from_vector(const std::vector<double>& v, int world) {
  StepStats s(world);
  const auto w = static_cast<std::size_t>(world);
  if (v.size() != kStepStatsScalars + 2 * w) {
    throw std::invalid_argument("StepStats::from_vector: " + std::to_string(v.size()) +
                                " values for " + std::to_string(world) + " ranks (expected " +
                                std::to_string(kStepStatsScalars + 2 * w) + ")");
  }
  s.losses = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
  s.tokens = v[9];
  s.real_tokens = v[10];
  const auto ranks = v.begin() + static_cast<std::ptrdiff_t>(kStepStatsScalars);
  std::copy(ranks, ranks + static_cast<std::ptrdiff_t>(w), s.rank_compute.begin());
  std::copy(ranks + static_cast<std::ptrdiff_t>(w), v.end(), s.rank_collective.begin());
  return s;
}

void StepStats::average_losses_over_ranks() {
  const auto n = static_cast<double>(world());
  for (double* part : {&losses.total, &losses.sup, &losses.self, &losses.mlm_l, &losses.mlm_u,
                       &losses.generator_mlm, &losses.replaced_token, &losses.encoder_mlm,
                       &losses.token_contrastive}) {
    *part /= n;
  }
}

double StepStats::slowest_compute() const {
  return *std::max_element(rank_compute.begin(), rank_compute.end());
}

}  // namespace dialtree::trainer
