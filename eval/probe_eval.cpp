#include "eval/probe_eval.h"

#include <stdexcept>

namespace dialtree::eval {

std::vector<std::pair<std::string, double>> probe_eval_figures(const ProbeReport& report) {
  std::vector<std::pair<std::string, double>> out;
  double sum = 0;
  int n = 0;
  for (const ProbeRow& row : report.rows) {
    if (row.protocol != ProbeProtocol::DialoglueFew) continue;
    const std::string key = "eval_probe_" + row.task + "_";
    out.emplace_back(key + "accuracy", row.lr_standardized_accuracy.mean);
    out.emplace_back(key + "lr_accuracy", row.lr_accuracy.mean);
    out.emplace_back(key + "ncc_accuracy", row.ncc_accuracy.mean);
    out.emplace_back(key + "effective_rank", row.effective_rank);
    sum += row.lr_standardized_accuracy.mean;
    ++n;
  }
  if (n == 0)
    throw std::invalid_argument("probe_eval_figures: the report has no dialoglue-few row");
  out.emplace_back("eval_probe_mean_accuracy", sum / n);
  return out;
}

}  // namespace dialtree::eval
