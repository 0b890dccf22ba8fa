#include "trainer/view_stats.h"

#include <algorithm>
#include <stdexcept>

#include "sts/score.h"
#include "sts/views.h"
#include "trainer/batching.h"

namespace dialtree::trainer {

BatchViewStats batch_view_stats(const std::vector<PretrainDataset>& datasets,
                                std::size_t batch_size, std::size_t shard_size,
                                std::size_t batches, std::uint64_t seed,
                                const Grouping& grouping) {
  if (batches == 0) throw std::invalid_argument("batch_view_stats: batches must be >= 1");
  BatchStream stream(dataset_sizes(datasets), batch_size, seed, grouping);
  BatchViewStats out;
  out.views.resize(sts::kNumViews);
  for (std::size_t k = 0; k < sts::kNumViews; ++k) out.views[k].view = sts::view_names()[k];
  std::size_t shards = 0;
  for (std::size_t b = 0; b < batches; ++b) {
    const BatchRef batch = stream.next();
    const auto& examples = datasets[batch.dataset].examples;
    const std::size_t n = batch.examples.size();
    const std::size_t step = shard_size == 0 ? n : shard_size;
    for (std::size_t start = 0; start < n; start += step) {
      const std::size_t end = std::min(n, start + step);
      std::vector<sts::ViewSets> sets;
      for (std::size_t i = start; i < end; ++i) sets.push_back(examples[batch.examples[i]].views);
      const sts::BatchScores scores = sts::batch_scores(sets);
      ++shards;
      for (std::size_t i = 0; i < sets.size(); ++i) {
        ++out.anchors;
        for (std::size_t k = 0; k < sts::kNumViews; ++k) {
          ViewStats& v = out.views[k];
          std::size_t positives = 0;
          double mass = 0;
          for (std::size_t j = 0; j < sets.size(); ++j) {
            if (j == i) continue;
            const float s = scores.views[k](static_cast<Eigen::Index>(i),
                                            static_cast<Eigen::Index>(j));
            positives += s > 0 ? 1 : 0;
            mass += s;
          }
          v.positives_per_anchor += static_cast<double>(positives);
          v.target_mass += mass;
          v.anchors_without_positive += positives == 0 ? 1 : 0;
          v.empty_sets += sets[i].sets[k].empty() ? 1 : 0;
        }
      }
    }
  }
  const auto anchors = static_cast<double>(out.anchors);
  for (ViewStats& v : out.views) {
    v.positives_per_anchor /= anchors;
    v.target_mass /= anchors;
    v.anchors_without_positive /= anchors;
    v.empty_sets /= anchors;
  }
  out.batches = batches;
  out.mean_shard_size = anchors / static_cast<double>(shards);
  return out;
}

}  // namespace dialtree::trainer
