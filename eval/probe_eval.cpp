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
  if (n > 0) out.emplace_back("eval_probe_mean_accuracy", sum / n);
  double tag_sum = 0;
  for (const TagProbeRow& row : report.tag_rows) {
    const std::string key = "eval_probe_" + row.task + "_";
    out.emplace_back(key + (row.task == "top" ? "exact_match" : "slot_f1"), row.score);
    out.emplace_back(key + "tag_accuracy", row.tag_accuracy);
    if (row.intent_accuracy >= 0) out.emplace_back(key + "intent_accuracy", row.intent_accuracy);
    tag_sum += row.score;
  }
  if (!report.tag_rows.empty()) {
    out.emplace_back("eval_probe_mean_tagging",
                     tag_sum / static_cast<double>(report.tag_rows.size()));
  }
  if (out.empty()) {
    throw std::invalid_argument(
        "probe_eval_figures: the report has neither a dialoglue-few row nor a tagging row");
  }
  return out;
}

}  // namespace dialtree::eval
