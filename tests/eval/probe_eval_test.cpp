// eval/probe_eval: the probe's figures under the names pretraining logs (docs/training.md).
#include <gtest/gtest.h>

#include "eval/probe_eval.h"

namespace dialtree::eval {
namespace {

ProbeRow row(const std::string& task, ProbeProtocol p, double std_acc, double raw, double ncc,
             double rank) {
  ProbeRow r;
  r.task = task;
  r.protocol = p;
  r.lr_standardized_accuracy.mean = std_acc;
  r.lr_accuracy.mean = raw;
  r.ncc_accuracy.mean = ncc;
  r.effective_rank = rank;
  return r;
}

TEST(ProbeEvalFigures, NamesEachTasksFiguresAndTheMeanOfTheStandardizedAccuracies) {
  ProbeReport report;
  report.rows = {row("banking", ProbeProtocol::DialoglueFew, 0.5, 0.25, 0.125, 40),
                 row("banking", ProbeProtocol::Mteb, 0.9, 0.9, 0.9, 1),  // left out
                 row("hwu", ProbeProtocol::DialoglueFew, 0.75, 0.5, 0.375, 12.5)};
  const auto f = probe_eval_figures(report);
  const std::vector<std::pair<std::string, double>> want = {
      {"eval_probe_banking_accuracy", 0.5},       {"eval_probe_banking_lr_accuracy", 0.25},
      {"eval_probe_banking_ncc_accuracy", 0.125}, {"eval_probe_banking_effective_rank", 40},
      {"eval_probe_hwu_accuracy", 0.75},          {"eval_probe_hwu_lr_accuracy", 0.5},
      {"eval_probe_hwu_ncc_accuracy", 0.375},     {"eval_probe_hwu_effective_rank", 12.5},
      {"eval_probe_mean_accuracy", 0.625}};
  EXPECT_EQ(f, want);
  report.rows = {row("banking", ProbeProtocol::Mteb, 0.9, 0.9, 0.9, 1)};
  EXPECT_THROW(probe_eval_figures(report), std::invalid_argument);
}

TEST(ProbeEvalFigures, TaggingRowsGiveTheirDialoglueScoreTagAccuracyAndTheirMean) {
  ProbeReport report;
  TagProbeRow slot;
  slot.task = "restaurant8k";
  slot.score = 0.5;
  slot.tag_accuracy = 0.875;
  TagProbeRow top;
  top.task = "top";
  top.score = 0.25;
  top.tag_accuracy = 0.75;
  top.intent_accuracy = 0.625;
  report.tag_rows = {slot, top};
  const std::vector<std::pair<std::string, double>> want = {
      {"eval_probe_restaurant8k_slot_f1", 0.5}, {"eval_probe_restaurant8k_tag_accuracy", 0.875},
      {"eval_probe_top_exact_match", 0.25},     {"eval_probe_top_tag_accuracy", 0.75},
      {"eval_probe_top_intent_accuracy", 0.625}, {"eval_probe_mean_tagging", 0.375}};
  EXPECT_EQ(probe_eval_figures(report), want);  // no intent row: no eval_probe_mean_accuracy
}

}  // namespace
}  // namespace dialtree::eval
