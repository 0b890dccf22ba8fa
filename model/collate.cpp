#include "model/collate.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dialtree::model {
namespace {

std::string name_of(const data::SerializedExample& ex, std::size_t b) {
  return "example " + std::to_string(b) + (ex.dialog_id.empty() ? "" : " (" + ex.dialog_id + ")");
}

void fill_row(torch::Tensor& t, std::int64_t b, std::int64_t L,
              const std::vector<std::int32_t>& v) {
  std::int64_t* row = t.data_ptr<std::int64_t>() + b * L;
  std::copy(v.begin(), v.end(), row);
}

}  // namespace

EncoderInputs collate(const std::vector<data::SerializedExample>& examples) {
  std::size_t max_len = 0;
  for (std::size_t b = 0; b < examples.size(); ++b) {
    const auto& ex = examples[b];
    const std::size_t n = ex.input_ids.size();
    if (ex.position_ids.size() != n || ex.role_ids.size() != n || ex.turn_ids.size() != n) {
      throw std::invalid_argument("collate: " + name_of(ex, b) +
                                  ": id arrays differ in length (input " + std::to_string(n) +
                                  ", position " + std::to_string(ex.position_ids.size()) +
                                  ", role " + std::to_string(ex.role_ids.size()) + ", turn " +
                                  std::to_string(ex.turn_ids.size()) + ")");
    }
    max_len = std::max(max_len, n);
  }
  const auto B = static_cast<std::int64_t>(examples.size());
  const auto L = static_cast<std::int64_t>(max_len);
  const auto opts = torch::TensorOptions().dtype(torch::kInt64);
  EncoderInputs in{torch::zeros({B, L}, opts), torch::zeros({B, L}, opts),
                   torch::zeros({B, L}, opts), torch::zeros({B, L}, opts),
                   torch::zeros({B, L}, opts)};
  std::int64_t* mask = in.attention_mask.data_ptr<std::int64_t>();
  for (std::int64_t b = 0; b < B; ++b) {
    const auto& ex = examples[static_cast<std::size_t>(b)];
    fill_row(in.input_ids, b, L, ex.input_ids);
    fill_row(in.position_ids, b, L, ex.position_ids);
    fill_row(in.role_ids, b, L, ex.role_ids);
    fill_row(in.turn_ids, b, L, ex.turn_ids);
    std::fill_n(mask + b * L, ex.input_ids.size(), std::int64_t{1});
  }
  return in;
}

torch::Tensor collate_labels(const std::vector<data::SerializedExample>& examples,
                             const std::vector<std::vector<std::int32_t>>& labels) {
  if (labels.size() != examples.size()) {
    throw std::invalid_argument("collate: " + std::to_string(labels.size()) +
                                " label vectors for " + std::to_string(examples.size()) +
                                " examples");
  }
  std::size_t max_len = 0;
  for (const auto& ex : examples) max_len = std::max(max_len, ex.input_ids.size());
  const auto B = static_cast<std::int64_t>(examples.size());
  const auto L = static_cast<std::int64_t>(max_len);
  torch::Tensor out = torch::full({B, L}, kIgnoreLabel, torch::TensorOptions().dtype(torch::kInt64));
  for (std::int64_t b = 0; b < B; ++b) {
    const auto i = static_cast<std::size_t>(b);
    if (labels[i].size() != examples[i].input_ids.size()) {
      throw std::invalid_argument("collate: " + name_of(examples[i], i) + ": " +
                                  std::to_string(labels[i].size()) + " labels for " +
                                  std::to_string(examples[i].input_ids.size()) + " tokens");
    }
    fill_row(out, b, L, labels[i]);
  }
  return out;
}

CollatedBatch collate(const std::vector<data::SerializedExample>& examples,
                      const std::vector<std::vector<std::int32_t>>& labels) {
  torch::Tensor mlm_labels = collate_labels(examples, labels);  // checks the labels first
  return {collate(examples), std::move(mlm_labels)};
}

}  // namespace dialtree::model
