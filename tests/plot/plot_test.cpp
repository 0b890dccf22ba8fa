// plot/: reading metrics.jsonl and results files into series (known values from
// tests/fixtures/plot), the gnuplot scripts and data files of each figure, errors that name the
// file and line, and rendering with the real gnuplot (skipped only where gnuplot is not
// installed; scripts/setup.sh installs it, so CI runs it).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "common/json_util.h"
#include "plot/figures.h"
#include "plot/inputs.h"
#include "plot/render.h"
#include "test_paths.h"

namespace dialtree::plot {
namespace {

namespace fs = std::filesystem;
using dialtree::testing::fixture;
using dialtree::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<double> xs(const Series& s) {
  std::vector<double> v;
  for (const auto& p : s.points) v.push_back(p.x);
  return v;
}
std::vector<double> ys(const Series& s) {
  std::vector<double> v;
  for (const auto& p : s.points) v.push_back(p.y);
  return v;
}

// The message of the DataError that `fn` throws ("" if none).
template <typename Fn>
std::string data_error(Fn fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

const DataFile* find_data(const Figure& f, const std::string& name) {
  for (const auto& d : f.data) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// "" if `xml` is well nested (every start tag closed by its own end tag, in order; comments,
// declarations and self-closing tags skipped), else what is wrong. Enough to tell a complete
// SVG document from a truncated or garbled one.
std::string xml_nesting_error(const std::string& xml) {
  std::vector<std::string> open;
  std::size_t i = 0, elements = 0;
  while ((i = xml.find('<', i)) != std::string::npos) {
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return "unterminated tag at byte " + std::to_string(i);
    const std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!' || tag.back() == '/') continue;
    const bool closing = tag[0] == '/';
    const std::string name =
        tag.substr(closing ? 1 : 0, tag.find_first_of(" \t\n/", 1) - (closing ? 1 : 0));
    if (!closing) {
      open.push_back(name);
      ++elements;
    } else if (open.empty() || open.back() != name) {
      return "</" + name + "> closes <" + (open.empty() ? std::string() : open.back()) + ">";
    } else {
      open.pop_back();
    }
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return elements ? "" : "no element";
}

bool gnuplot_installed() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((fs::path(dir) / "gnuplot").c_str(), X_OK) == 0) return true;
  }
  return false;
}

TEST(PlotMetrics, SeriesOfEveryNumericKeyAgainstStep) {
  const RunMetrics run = read_metrics(fixture("plot/run-a/metrics.jsonl"), "run-a");
  EXPECT_EQ(run.name, "run-a");
  std::vector<std::string> keys;
  for (const auto& s : run.series) keys.push_back(s.key);
  // Sorted by key; `step` is the x axis; the string and the null value give no series.
  EXPECT_THAT(keys, ElementsAre("contrastive", "epoch", "eval_probe_banking_accuracy",
                                "eval_probe_clinc_accuracy", "eval_seconds", "examples_per_second",
                                "grad_norm", "learning_rate", "loss", "mlm_labelled",
                                "mlm_unlabelled", "self_supervised"));
  ASSERT_NE(run.find("loss"), nullptr);
  EXPECT_THAT(xs(*run.find("loss")), ElementsAre(5, 10, 15, 20));
  EXPECT_THAT(ys(*run.find("loss")), ElementsAre(8.5, 7.25, 6.0, 5.5));
  EXPECT_THAT(ys(*run.find("learning_rate")), ElementsAre(1e-4, 2e-4, 1.5e-4, 1e-4));
  // eval_* keys only at the steps that logged them (line 3 is an evaluation record).
  EXPECT_THAT(xs(*run.find("eval_probe_banking_accuracy")), ElementsAre(10, 20));
  EXPECT_THAT(ys(*run.find("eval_probe_banking_accuracy")), ElementsAre(0.125, 0.375));
  EXPECT_THAT(ys(*run.find("eval_probe_clinc_accuracy")), ElementsAre(0.25, 0.5));
  EXPECT_EQ(run.find("eval_note"), nullptr);
  EXPECT_EQ(run.find("nan_value"), nullptr);
}

TEST(PlotMetrics, SortedByStepAndTheLaterValueOfARepeatedStepWins) {
  TempDir tmp;
  spit(tmp.file("metrics.jsonl"),
       "{\"step\":20,\"loss\":2}\n{\"step\":10,\"loss\":1}\n{\"step\":20,\"loss\":3}\n");
  const RunMetrics run = read_metrics(tmp.file("metrics.jsonl"), "x");
  EXPECT_THAT(xs(*run.find("loss")), ElementsAre(10, 20));
  EXPECT_THAT(ys(*run.find("loss")), ElementsAre(1, 3));
  EXPECT_EQ(run.step_restarts, 1u);  // 20 then 10: the command warns about it
  EXPECT_EQ(run.first_restart_step, 10);
  EXPECT_EQ(run.first_restart_after, 20);
  // A training and an evaluation record of one step (both log "epoch") do not go back.
  spit(tmp.file("metrics.jsonl"),
       "{\"step\":20,\"epoch\":1,\"loss\":2}\n{\"step\":20,\"epoch\":1,\"eval_x\":1}\n"
       "{\"step\":40,\"loss\":1}\n");
  EXPECT_EQ(read_metrics(tmp.file("metrics.jsonl"), "x").step_restarts, 0u);
}

TEST(PlotMetrics, AnUnfinishedLastLineIsSkippedAndReported) {
  // A run still writing, or killed mid-line (a break test, 2026-12-04): the file ends inside a
  // record. That line is skipped; the same text with its newline is an error (next test).
  TempDir tmp;
  spit(tmp.file("metrics.jsonl"),
       "{\"step\":5,\"loss\":2}\n{\"step\":10,\"loss\":1}\n{\"step\":15,\"lo");
  const RunMetrics run = read_metrics(tmp.file("metrics.jsonl"), "x");
  EXPECT_EQ(run.unfinished_line, 3u);
  EXPECT_THAT(xs(*run.find("loss")), ElementsAre(5, 10));
  spit(tmp.file("metrics.jsonl"), "{\"step\":5,\"loss\":2}\n{\"step\":10,\"loss\":1}");
  EXPECT_EQ(read_metrics(tmp.file("metrics.jsonl"), "x").unfinished_line, 0u);  // whole JSON
  EXPECT_THAT(xs(*read_metrics(tmp.file("metrics.jsonl"), "x").find("loss")), ElementsAre(5, 10));
  spit(tmp.file("metrics.jsonl"), "{\"step\":5,\"lo");
  EXPECT_THAT(data_error([&] { read_metrics(tmp.file("metrics.jsonl"), "x"); }),
              HasSubstr("its only line is unfinished"));
  // Readers that do not ask for it (sts/1 files) still stop at such a line.
  spit(tmp.file("metrics.jsonl"), "{\"step\":5}\n{\"st");
  EXPECT_THAT(data_error([&] {
                json_for_each_line(tmp.file("metrics.jsonl"),
                                   [](std::size_t, const nlohmann::json&) {});
              }),
              HasSubstr(": line 2: invalid JSON"));
}

TEST(PlotMetrics, ErrorsNameTheFileAndTheLine) {
  const std::string malformed = fixture("plot/malformed/metrics.jsonl");
  // One place: the file's line and the column in it, not nlohmann's "at line 1" of the line
  // alone (a break test found both, 2026-12-03).
  EXPECT_EQ(data_error([&] { read_metrics(malformed, "m"); }),
            malformed +
                ": line 3: invalid JSON at column 19: syntax error while parsing value - "
                "unexpected end of input; expected '[', '{', or a literal");
  const std::string no_step = fixture("plot/no-step/metrics.jsonl");
  EXPECT_THAT(data_error([&] { read_metrics(no_step, "m"); }), HasSubstr(no_step + ": line 2"));
  EXPECT_THAT(data_error([&] { read_metrics(no_step, "m"); }), HasSubstr("step"));
  TempDir tmp;
  spit(tmp.file("metrics.jsonl"), "{\"step\":5}\n[1, 2]\n");
  EXPECT_THAT(data_error([&] { read_metrics(tmp.file("metrics.jsonl"), "m"); }),
              HasSubstr(tmp.file("metrics.jsonl") + ": line 2"));
  spit(tmp.file("metrics.jsonl"), "{\"step\":\"5\"}\n");
  EXPECT_THAT(data_error([&] { read_metrics(tmp.file("metrics.jsonl"), "m"); }),
              HasSubstr(": line 1: field 'step'"));
  spit(tmp.file("metrics.jsonl"), "\n");
  EXPECT_THAT(data_error([&] { read_metrics(tmp.file("metrics.jsonl"), "m"); }),
              HasSubstr("no logged step"));
}

// --x minutes: a record's x is its train_seconds / 60; an evaluation record without one takes
// the training record's of its step; its own wins over that.
const char* const kTimedMetrics =
    "{\"step\":0,\"epoch\":0,\"eval_probe_x_accuracy\":0.25,\"eval_seconds\":3,"
    "\"train_seconds\":0}\n"
    "{\"step\":100,\"loss\":4,\"learning_rate\":0.5,\"train_seconds\":30}\n"
    "{\"step\":200,\"loss\":3,\"learning_rate\":1,\"train_seconds\":90}\n"
    "{\"step\":200,\"eval_probe_x_accuracy\":0.5,\"eval_seconds\":4}\n"
    "{\"step\":300,\"loss\":2,\"learning_rate\":0.25,\"train_seconds\":150}\n"
    "{\"step\":300,\"eval_probe_x_accuracy\":0.75,\"eval_seconds\":4,\"train_seconds\":153}\n";

TEST(PlotMetrics, MinutesPutEachRecordAtItsTrainSeconds) {
  TempDir tmp;
  spit(tmp.file("metrics.jsonl"), kTimedMetrics);
  const RunMetrics run = read_metrics(tmp.file("metrics.jsonl"), "t", XAxis::minutes);
  EXPECT_EQ(run.x, XAxis::minutes);
  EXPECT_THAT(xs(*run.find("loss")), ElementsAre(0.5, 1.5, 2.5));  // 30, 90, 150 s
  EXPECT_THAT(ys(*run.find("loss")), ElementsAre(4, 3, 2));
  // Step 0 has its own 0 s; step 200's evaluation borrows its training record's 90 s; step
  // 300's has its own 153 s.
  EXPECT_THAT(xs(*run.find("eval_probe_x_accuracy")), ElementsAre(0, 1.5, 153.0 / 60));
  EXPECT_THAT(ys(*run.find("eval_probe_x_accuracy")), ElementsAre(0.25, 0.5, 0.75));
  EXPECT_EQ(run.find("train_seconds"), nullptr);  // the x, not a curve

  // The figures hold those numbers and say what the axis is.
  const Figure losses = losses_figure({run});
  EXPECT_EQ(find_data(losses, "losses-0-0.dat")->content, "0.5 4\n1.5 3\n2.5 2\n");
  EXPECT_THAT(losses.script, HasSubstr("set xlabel 'minutes of training (evaluation excluded)'\n"));
  EXPECT_THAT(losses.script, Not(HasSubstr("set xlabel 'step'")));
  const Figure eval = eval_figure({run});
  EXPECT_EQ(find_data(eval, "eval-0-0.dat")->content, "0 0.25\n1.5 0.5\n2.55 0.75\n");
  EXPECT_THAT(eval.script, HasSubstr("set xlabel 'minutes of training (evaluation excluded)'\n"));
  const Figure lr = learning_rate_figure({run});
  EXPECT_EQ(find_data(lr, "learning_rate-0-0.dat")->content, "0.5 0.5\n1.5 1\n2.5 0.25\n");

  // The default is steps, as before: train_seconds is a curve like any other key.
  const RunMetrics by_step = read_metrics(tmp.file("metrics.jsonl"), "t");
  EXPECT_EQ(by_step.x, XAxis::steps);
  EXPECT_THAT(xs(*by_step.find("loss")), ElementsAre(100, 200, 300));
  EXPECT_THAT(xs(*by_step.find("eval_probe_x_accuracy")), ElementsAre(0, 200, 300));
  // (step 300's evaluation record logs it after the training record: the later value wins)
  EXPECT_THAT(ys(*by_step.find("train_seconds")), ElementsAre(0, 30, 90, 153));
  EXPECT_THAT(losses_figure({by_step}).script, HasSubstr("set xlabel 'step'\n"));

  // load_inputs reads the runs in minutes; eval folders and results files ignore it. The file
  // that scripts/add-train-seconds.py writes is named after its folder, as metrics.jsonl is.
  const Inputs in = load_inputs({tmp.path().string(), fixture("plot/eval-a")}, XAxis::minutes);
  ASSERT_EQ(in.runs.size(), 1u);
  EXPECT_THAT(xs(*in.runs[0].find("loss")), ElementsAre(0.5, 1.5, 2.5));
  EXPECT_EQ(in.models.size(), 1u);
  fs::create_directory(tmp.path() / "old-run");
  spit(tmp.path() / "old-run" / "metrics-with-train-seconds.jsonl", kTimedMetrics);
  const Inputs converted = load_inputs(
      {(tmp.path() / "old-run" / "metrics-with-train-seconds.jsonl").string()}, XAxis::minutes);
  EXPECT_EQ(converted.runs.at(0).name, "old-run");
}

TEST(PlotMetrics, MinutesOfARunWithoutTrainSecondsIsAnError) {
  // run-a was logged before train_seconds existed.
  const std::string old = fixture("plot/run-a/metrics.jsonl");
  EXPECT_EQ(data_error([&] { read_metrics(old, "a", XAxis::minutes); }),
            old +
                ": no record has train_seconds: the run was logged before train_seconds existed, "
                "so --x minutes cannot draw it; scripts/add-train-seconds.py RUN_DIR writes "
                "RUN_DIR/metrics-with-train-seconds.jsonl with it (plot that file)");
  EXPECT_THAT(data_error([&] { load_inputs({fixture("plot/run-a")}, XAxis::minutes); }),
              HasSubstr(old + ": no record has train_seconds"));
  EXPECT_EQ(data_error([&] { read_metrics(old, "a"); }), "");  // steps need none

  // A record left without an x, in a run that has train_seconds, names its line.
  TempDir tmp;
  spit(tmp.file("metrics.jsonl"),
       "{\"step\":100,\"loss\":4,\"train_seconds\":30}\n{\"step\":200,\"loss\":3}\n");
  EXPECT_THAT(data_error([&] { read_metrics(tmp.file("metrics.jsonl"), "t", XAxis::minutes); }),
              HasSubstr(": line 2: field 'train_seconds': is missing (other records have it)"));
  spit(tmp.file("metrics.jsonl"),
       "{\"step\":100,\"loss\":4,\"train_seconds\":30}\n{\"step\":150,\"eval_probe_x_accuracy\":1}"
       "\n");
  EXPECT_THAT(data_error([&] { read_metrics(tmp.file("metrics.jsonl"), "t", XAxis::minutes); }),
              HasSubstr(": line 2: field 'train_seconds': is missing, and no training record of "
                        "step 150 has it"));
}

TEST(PlotInputs, ClassifiesFoldersAndFilesAndNamesThem) {
  const Inputs in = load_inputs({fixture("plot/run-a"), fixture("plot/run-b/metrics.jsonl"),
                                 fixture("plot/eval-a/"), fixture("plot/tfidf.json")});
  ASSERT_EQ(in.runs.size(), 2u);
  EXPECT_EQ(in.runs[0].name, "run-a");
  EXPECT_EQ(in.runs[1].name, "run-b");
  ASSERT_EQ(in.models.size(), 3u);
  EXPECT_EQ(in.models[0].name, "eval-a");
  EXPECT_EQ(in.models[1].name, "tfidf-char-2-5");
  EXPECT_EQ(in.models[2].name, "tfidf-word-1-2");
  EXPECT_NEAR(in.models[1].tasks.at(0).mean, 74.71, 0.005);  // banking, char 2-5-grams

  // One folder given twice: both named by the path as given.
  const Inputs twice = load_inputs({fixture("plot/run-a"), fixture("plot/run-a/")});
  EXPECT_EQ(twice.runs[0].name, fixture("plot/run-a"));
  EXPECT_EQ(twice.runs[1].name, fixture("plot/run-a/"));
}

TEST(PlotInputs, EvalFolderWithValCurvesFromRunJson) {
  const ModelScores m = read_eval_dir(fixture("plot/eval-a"), "eval-a");
  ASSERT_EQ(m.tasks.size(), 2u);
  const TaskScores& banking = m.tasks[0];
  EXPECT_EQ(banking.task, "banking");
  EXPECT_EQ(banking.metric, "accuracy");
  EXPECT_DOUBLE_EQ(banking.mean, 11.5);
  EXPECT_DOUBLE_EQ(banking.std, 1.25);
  ASSERT_EQ(banking.runs.size(), 2u);
  EXPECT_EQ(banking.runs[0].seed, 1);
  // banking's results.json records have no curve: it comes from <task>/seed-<s>/run.json
  // (seed 2's is out of order there); clinc's come from results.json itself.
  Series s1{"", banking.runs[0].val_curve}, s2{"", banking.runs[1].val_curve};
  EXPECT_THAT(xs(s1), ElementsAre(1, 2, 3));
  EXPECT_THAT(ys(s1), ElementsAre(4.5, 8.25, 11.0));
  EXPECT_THAT(xs(s2), ElementsAre(1, 2, 3));
  EXPECT_THAT(ys(s2), ElementsAre(6.0, 13.0, 12.75));
  EXPECT_THAT(ys(Series{"", m.tasks[1].runs[0].val_curve}), ElementsAre(10, 20, 26.5));
}

TEST(PlotInputs, BadInputsAreDataErrorsNamingThePlace) {
  EXPECT_THAT(data_error([] { load_inputs({"/nonexistent/run"}); }),
              HasSubstr("/nonexistent/run: no such file or folder"));
  TempDir tmp;
  EXPECT_THAT(data_error([&] { load_inputs({tmp.path().string()}); }),
              HasSubstr("neither metrics.jsonl"));
  const std::string malformed = fixture("plot/malformed");
  EXPECT_THAT(data_error([&] { load_inputs({malformed}); }),
              HasSubstr(malformed + "/metrics.jsonl: line 3"));
  spit(tmp.file("results.json"),
       R"({"tasks": {"banking": {"metric": "accuracy", "mean": "high", "std": 0}}})");
  EXPECT_THAT(data_error([&] { load_inputs({tmp.path().string()}); }),
              HasSubstr("field 'tasks.banking.mean': expected a number, found string"));
  spit(tmp.file("results.json"), "{\"tasks\": {\n  \"banking\": }\n");
  EXPECT_THAT(data_error([&] { load_inputs({tmp.path().string()}); }),
              HasSubstr(tmp.file("results.json") + ": line 2"));
  spit(
      tmp.file("results.json"),
      R"({"tasks": {"hwu": {"mean": 1, "runs": [{"seed": 1, "test": 1, "curve": [{"epoch": 1}]}]}}})");
  EXPECT_THAT(data_error([&] { load_inputs({tmp.path().string()}); }),
              HasSubstr("field 'tasks.hwu.runs[0].curve[0].val': is missing"));
  spit(tmp.file("list.json"), R"([{"model": "a", "tasks": {}}, {"tasks": {}}])");
  EXPECT_THAT(data_error([&] { load_inputs({tmp.file("list.json")}); }),
              HasSubstr("record 1: field 'model'"));
}

TEST(PlotFigures, LossPanelsHoldTheKnownValuesOfEachRun) {
  const std::vector<RunMetrics> runs = {read_metrics(fixture("plot/run-a/metrics.jsonl"), "run-a"),
                                        read_metrics(fixture("plot/run-b/metrics.jsonl"), "run-b")};
  EXPECT_THAT(loss_keys(runs), ElementsAre("loss", "contrastive", "self_supervised", "mlm_labelled",
                                           "mlm_unlabelled", "grad_norm"));
  EXPECT_THAT(eval_keys(runs),
              ElementsAre("eval_probe_banking_accuracy", "eval_probe_clinc_accuracy"));
  const Figure losses = losses_figure(runs);
  EXPECT_EQ(losses.name, "losses");
  ASSERT_NE(find_data(losses, "losses-0-0.dat"), nullptr);  // panel 0 (loss), run 0
  EXPECT_EQ(find_data(losses, "losses-0-0.dat")->content, "5 8.5\n10 7.25\n15 6\n20 5.5\n");
  EXPECT_EQ(find_data(losses, "losses-0-1.dat")->content, "5 18\n10 16\n15 14\n20 13\n");
  EXPECT_EQ(find_data(losses, "losses-5-0.dat")->content, "5 4.5\n10 3.25\n15 2\n20 1.75\n");
  EXPECT_EQ(losses.data.size(), 12u);
  EXPECT_THAT(losses.script, HasSubstr("set multiplot layout 2,3"));
  EXPECT_THAT(losses.script,
              HasSubstr("'losses-0-0.dat' using 1:2 with linespoints lt 1 lw 3.0 dt 1 "
                        "title 'run-a'"));
  EXPECT_THAT(losses.script, HasSubstr("lt 2 lw 2.4 dt 2 title 'run-b'"));
  EXPECT_THAT(losses.script, HasSubstr("set title 'contrastive (labelled, tree views)'"));
  EXPECT_THAT(losses.script, HasSubstr("set xlabel 'step'"));

  const Figure eval = eval_figure(runs);  // run-b has no eval keys: no line for it
  EXPECT_EQ(find_data(eval, "eval-0-0.dat")->content, "10 0.125\n20 0.375\n");
  EXPECT_EQ(find_data(eval, "eval-1-0.dat")->content, "10 0.25\n20 0.5\n");
  EXPECT_EQ(find_data(eval, "eval-0-1.dat"), nullptr);
  EXPECT_THAT(eval.script, HasSubstr("set title 'eval_probe_banking_accuracy'"));
  EXPECT_THAT(eval.script, HasSubstr("set ylabel 'accuracy'"));

  // run-b's contrastive loss is 0 throughout: alone, its panel gets a range around 0 (gnuplot
  // would warn about an empty range), with run-a autoscaled.
  EXPECT_THAT(losses_figure({runs[1]}).script,
              HasSubstr("set title 'contrastive (labelled, tree views)' font ',10'\nset ylabel "
                        "'loss'\nset format y '% h'\nset yrange [-1:1]\n"));
  EXPECT_THAT(losses.script, Not(HasSubstr("set yrange")));

  // Up to 4 runs: the legend inside, with room made above the curves; more: below the panel.
  EXPECT_THAT(losses.script, HasSubstr("set key inside top right vertical opaque\n"
                                       "set offsets 0, 0, graph 0.19, 0"));
  const std::vector<RunMetrics> five(5, runs[1]);
  const Figure crowded = losses_figure(five);
  EXPECT_THAT(crowded.script, HasSubstr("set key outside below center horizontal"));
  EXPECT_THAT(crowded.script, HasSubstr("lt 5 lw 1.2 dt 5 title 'run-b'"));
  EXPECT_EQ(crowded.height, losses.height + 2 * 20 * 3);  // 2 rows of panels, 3 legend lines

  const Figure lr = learning_rate_figure(runs);
  EXPECT_EQ(find_data(lr, "learning_rate-0-0.dat")->content,
            "5 0.0001\n10 0.0002\n15 0.00015\n20 0.0001\n");
  EXPECT_THAT(lr.script, Not(HasSubstr("multiplot")));
  EXPECT_THAT(lr.script, HasSubstr("set yrange [0:*]"));

  // A run without eval keys draws no eval figure.
  const std::vector<Figure> figs = all_figures(Inputs{{runs[1]}, {}});
  ASSERT_EQ(figs.size(), 2u);
  EXPECT_EQ(figs[0].name, "losses");
  EXPECT_EQ(figs[1].name, "learning_rate");
}

TEST(PlotFigures, ResultBarsAndValCurves) {
  const Inputs in = load_inputs({fixture("plot/eval-a"), fixture("plot/tfidf.json")});
  const Figure dots = results_figure(in.models);
  // Three models, tasks banking, clinc, hwu: a panel each, a means file and a seeds file each.
  ASSERT_EQ(dots.data.size(), 6u);
  std::istringstream rows(find_data(dots, "results-0.dat")->content);
  double model = -1, mean = 0, sd = 0;
  std::string label;
  rows >> model >> mean >> sd >> label;
  EXPECT_EQ(model, 0);  // eval-a, banking
  EXPECT_EQ(mean, 11.5);
  EXPECT_EQ(sd, 1.25);
  EXPECT_EQ(label, "11.50");
  EXPECT_THAT(find_data(dots, "results-0.dat")->content, HasSubstr(" 74.7077922077922"));
  EXPECT_THAT(dots.script, HasSubstr("set multiplot layout 1,3"));
  EXPECT_THAT(dots.script, HasSubstr("set title 'banking (accuracy)'"));
  EXPECT_THAT(dots.script, HasSubstr("with yerrorbars lt 1 lc 1 pt 7 ps 1.4 title 'eval-a'"));
  EXPECT_THAT(dots.script, HasSubstr("title 'tfidf-word-1-2'"));
  EXPECT_THAT(dots.script, HasSubstr("set ylabel 'test score (%)'"));
  // The axis fits the task: banking's points lie between 10.25 and 74.7, never from 0 to 100.
  EXPECT_THAT(dots.script, Not(HasSubstr("set yrange [0:")));

  const Figure curves = val_curves_figure(in.models);  // only eval-a has curves
  EXPECT_EQ(find_data(curves, "val_curves-0-0-0.dat")->content, "1 4.5\n2 8.25\n3 11\n");
  EXPECT_EQ(find_data(curves, "val_curves-0-0-1.dat")->content, "1 6\n2 13\n3 12.75\n");
  EXPECT_EQ(find_data(curves, "val_curves-1-0-0.dat")->content, "1 10\n2 20\n3 26.5\n");
  EXPECT_EQ(curves.data.size(), 4u);
  EXPECT_THAT(curves.script, HasSubstr("set multiplot layout 1,2"));
  EXPECT_THAT(curves.script, HasSubstr("title 'eval-a seed 2'"));
  EXPECT_THAT(curves.script, HasSubstr("set xlabel 'epoch'"));
}

TEST(PlotRender, TheSvgCheckCatchesBrokenDocuments) {
  EXPECT_EQ(xml_nesting_error("<?xml v?><svg a='1'><g><path d='x'/></g><text>a</text></svg>"), "");
  EXPECT_NE(xml_nesting_error("<svg><g></svg>"), "");
  EXPECT_NE(xml_nesting_error("<svg><g></g>"), "");
  EXPECT_NE(xml_nesting_error("<svg><g"), "");
}

TEST(PlotFigures, QuotingForGnuplot) {
  EXPECT_EQ(gnuplot_quote("run's \"x\"\n"), "'run''s \"x\"?'");
  EXPECT_EQ(gnuplot_tic_label("main job, 15 % (run's)"), "'main job, 15 %% (run''s)'");
}

TEST(PlotRender, AModelNameWithAPercentSignNamesItsTic) {
  // The scoreboard's row "main job, 15 % (run B)": a tic label is a printf format to gnuplot.
  Inputs in = load_inputs({fixture("plot/eval-a"), fixture("plot/tfidf.json")});
  in.models[0].name = "main job, 15 % (run B)";
  const Figure dots = results_figure(in.models);
  EXPECT_THAT(dots.script, HasSubstr("('main job, 15 %% (run B)' 0, "));
  if (!gnuplot_installed())
    GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  TempDir out;
  const Rendered r = render(dots, out.path(), RenderOptions{});
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_THAT(slurp(out.path() / "results.svg"), HasSubstr(">main job, 15 % (run B)<"));
}

TEST(PlotRender, WritesPngAndSvgWithTheLegendNames) {
  if (!gnuplot_installed())
    GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  TempDir out;
  const Inputs in = load_inputs({fixture("plot/run-a"), fixture("plot/run-b"),
                                 fixture("plot/eval-a"), fixture("plot/tfidf.json")});
  std::vector<std::string> names;
  for (const auto& figure : all_figures(in)) {
    const Rendered r = render(figure, out.path(), RenderOptions{});
    ASSERT_EQ(r.files.size(), 2u);
    names.push_back(figure.name);
  }
  EXPECT_THAT(names, ElementsAre("losses", "learning_rate", "eval", "results", "val_curves"));
  for (const auto& name : names) {
    const std::string png = slurp(out.path() / (name + ".png"));
    ASSERT_GT(png.size(), 1000u) << name;
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << name;
    const std::string svg = slurp(out.path() / (name + ".svg"));
    EXPECT_THAT(svg, HasSubstr("<svg")) << name;
    EXPECT_EQ(xml_nesting_error(svg), "") << name;
  }
  const std::string losses = slurp(out.path() / "losses.svg");
  EXPECT_THAT(losses, HasSubstr(">run-a<"));
  EXPECT_THAT(losses, HasSubstr(">run-b<"));
  EXPECT_THAT(losses, HasSubstr("self_supervised (unlabelled, NT-Xent)"));
  EXPECT_THAT(slurp(out.path() / "eval.svg"), HasSubstr("eval_probe_clinc_accuracy"));
  const std::string results = slurp(out.path() / "results.svg");
  for (const char* legend :
       {">eval-a<", ">tfidf-char-2-5<", ">tfidf-word-1-2<", ">banking (accuracy)<",
        ">hwu (accuracy)<", ">74.71<"}) {
    EXPECT_THAT(results, HasSubstr(legend));
  }
  EXPECT_THAT(slurp(out.path() / "val_curves.svg"), HasSubstr(">eval-a seed 1<"));
  // Nothing but the images is left behind.
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(out.path())) {
    ++entries;
    EXPECT_THAT(e.path().filename().string(), Not(HasSubstr(".plot-")));
  }
  EXPECT_EQ(entries, 10u);
}

TEST(PlotRender, GnuplotErrorsAndAMissingProgramAreReported) {
  TempDir out;
  Figure bad{"bad", 400, 300, "reset\nplot 'missing.dat' using 1:2 with lines\n", {}};
  RenderOptions missing;
  missing.gnuplot = "dialtree-no-such-gnuplot";
  try {
    render(bad, out.path(), missing);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'dialtree-no-such-gnuplot'"));
    EXPECT_THAT(e.what(), HasSubstr("gnuplot-nox"));
  }
  if (!gnuplot_installed())
    GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  try {
    render(bad, out.path(), RenderOptions{});
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("gnuplot failed on figure 'bad'"));
    EXPECT_THAT(e.what(), HasSubstr("missing.dat"));  // gnuplot's own message
  }
  EXPECT_TRUE(fs::is_empty(out.path()));
}

TEST(PlotRender, ProgramSetsEachRequestedTerminal) {
  const Figure f{"x", 640, 480, "reset\nplot 1\n", {}};
  RenderOptions o;
  const std::string both = gnuplot_program(f, o, true);
  EXPECT_THAT(both, HasSubstr("set terminal pngcairo size 640,480"));
  EXPECT_THAT(both, HasSubstr("set output 'x.png'"));
  EXPECT_THAT(both, HasSubstr("set terminal svg size 640,480"));
  EXPECT_THAT(both, HasSubstr("set output 'x.svg'"));
  o.svg = false;
  const std::string png = gnuplot_program(f, o, false);
  EXPECT_THAT(png, HasSubstr("set terminal png size"));
  EXPECT_THAT(png, Not(HasSubstr("svg")));
}

}  // namespace
}  // namespace dialtree::plot
