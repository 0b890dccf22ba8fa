#include "plot/figures.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <fmt/core.h>

namespace dialtree::plot {

namespace {

// Okabe-Ito colours (distinguishable with colour-blindness), then black and grey.
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#000000", "#999999"};
constexpr int kColours = static_cast<int>(sizeof kPalette / sizeof kPalette[0]);
// Series with at most this many points get point markers too (a single point draws no line).
constexpr std::size_t kMarkersUpTo = 25;

// `reset` plus the settings every figure shares: line colours, grid, no enhanced-text markup
// (run and key names hold underscores).
std::string preamble() {
  std::string s = "reset\nset encoding utf8\n";
  for (int i = 0; i < kColours; ++i) {
    s += fmt::format("set linetype {} lc rgb '{}' lw 2 pt 7 ps 0.7\n", i + 1, kPalette[i]);
  }
  s += fmt::format("set linetype cycle {}\n", kColours);
  s += "set grid lc rgb '#dddddd' lw 1\nset border lc rgb '#444444'\n";
  return s;
}

std::string points_text(const std::vector<Point>& points) {
  std::string s;
  for (const auto& p : points) s += fmt::format("{} {}\n", p.x, p.y);
  return s;
}

struct PanelText {
  std::string title, ylabel;
};

// Titles of the known metrics.jsonl keys (docs/training.md, "Run directory").
PanelText panel_text(const std::string& key) {
  if (key == "loss") return {"loss (weighted total)", "loss"};
  if (key == "contrastive") return {"contrastive (labelled, tree views)", "loss"};
  if (key == "self_supervised") return {"self_supervised (unlabelled, NT-Xent)", "loss"};
  if (key == "mlm_labelled") return {"mlm_labelled (MLM, labelled batch)", "loss"};
  if (key == "mlm_unlabelled") return {"mlm_unlabelled (MLM, unlabelled batch)", "loss"};
  if (key == "grad_norm") return {"grad_norm (before clipping)", "gradient norm"};
  if (key == "learning_rate") return {"learning rate", "learning rate"};
  if (key.rfind("eval_", 0) == 0) {
    const auto us = key.rfind('_');
    return {key, key.substr(us + 1)};  // eval_probe_banking_accuracy -> "accuracy"
  }
  return {key, key};
}

const std::vector<std::string> kLossOrder = {"loss",         "contrastive",    "self_supervised",
                                             "mlm_labelled", "mlm_unlabelled", "grad_norm"};
const std::set<std::string> kNotLosses = {
    "epoch",         "learning_rate",  "examples_per_second", "padded_token_fraction",
    "train_seconds", "resident_set_mb"};

// eval_seconds (the time an evaluation took) is logged with the figures but is not one.
bool is_timing(const std::string& key) {
  return key.size() >= 8 && key.compare(key.size() - 8, 8, "_seconds") == 0;
}

// One `plot` clause for a data file: lines, with markers for short series. Line `index` (the
// run or model) also sets the width: earlier lines are drawn wider, so that identical curves
// (runs with one learning-rate schedule) stay visible under the later ones.
std::string curve(const std::string& file, std::size_t points, std::size_t index, int dashtype,
                  const std::string& title) {
  const double width = 3.0 - 0.6 * static_cast<double>(std::min<std::size_t>(index, 3));
  return fmt::format("'{}' using 1:2 with {} lt {} lw {:.1f} dt {} title {}", file,
                     points <= kMarkersUpTo ? "linespoints" : "lines", index + 1, width, dashtype,
                     gnuplot_quote(title));
}

constexpr const char* kAutoscaleY = "set autoscale y\n";

// The y range of a panel: autoscaled, except around a constant (an MLM-only run's contrastive
// loss is 0 throughout), where gnuplot would warn about an empty range.
std::string y_range(const std::vector<const std::vector<Point>*>& curves) {
  double lo = 0, hi = 0;
  bool any = false;
  for (const auto* c : curves) {
    for (const auto& p : *c) {
      lo = any ? std::min(lo, p.y) : p.y;
      hi = any ? std::max(hi, p.y) : p.y;
      any = true;
    }
  }
  if (!any || lo != hi) return kAutoscaleY;
  const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
  return fmt::format("set yrange [{}:{}]\n", lo - pad, lo + pad);
}

// Legends of more lines than this go below their panel.
constexpr std::size_t kLegendInside = 4;

// Where a panel's legend of `entries` lines goes: inside, in the top corner on `side` ("right"
// above falling curves, "left" above rising ones), with room made above the curves (on an
// autoscaled axis) so that it covers none; below the panel when it is longer than that.
std::string legend(std::size_t entries, const char* side) {
  if (entries > kLegendInside) {
    return "set key outside below center horizontal noopaque\nset offsets 0, 0, 0, 0\n";
  }
  return fmt::format("set key inside top {} vertical opaque\nset offsets 0, 0, graph {:.2f}, 0\n",
                     side, 0.05 + 0.07 * static_cast<double>(entries));
}

// Extra figure height for legends below the panels: `rows` rows of panels whose longest legend
// has `entries` lines, laid out about two to a line.
int legend_height(int rows, std::size_t entries) {
  return entries > kLegendInside ? rows * 20 * static_cast<int>((entries + 1) / 2) : 0;
}

// Sorts task names (and their metrics, kept parallel) by name: every chart shows the tasks in
// one order, whatever order the inputs list them in.
void sort_tasks(std::vector<std::string>& tasks, std::vector<std::string>& metrics) {
  std::vector<std::pair<std::string, std::string>> both;
  for (std::size_t i = 0; i < tasks.size(); ++i) both.emplace_back(tasks[i], metrics[i]);
  std::sort(both.begin(), both.end());
  for (std::size_t i = 0; i < both.size(); ++i)
    tasks[i] = both[i].first, metrics[i] = both[i].second;
}

// Rows x columns for n panels.
std::pair<int, int> layout(std::size_t n) {
  const int cols = n <= 1 ? 1 : n <= 4 ? 2 : 3;
  const int rows =
      static_cast<int>((n + static_cast<std::size_t>(cols) - 1) / static_cast<std::size_t>(cols));
  return {rows, cols};
}

}  // namespace

std::string gnuplot_tic_label(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    escaped += c;
    if (c == '%') escaped += '%';
  }
  return gnuplot_quote(escaped);
}

std::string gnuplot_quote(const std::string& text) {
  std::string s = "'";
  for (const char c : text) {
    if (c == '\'') {
      s += "''";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      s += '?';
    } else {
      s += c;
    }
  }
  return s + "'";
}

std::vector<std::string> loss_keys(const std::vector<RunMetrics>& runs) {
  std::vector<std::string> keys;
  for (const auto& k : kLossOrder) {
    if (std::any_of(runs.begin(), runs.end(), [&](const RunMetrics& r) { return r.find(k); })) {
      keys.push_back(k);
    }
  }
  for (const auto& r : runs) {
    for (const auto& s : r.series) {
      if (kNotLosses.count(s.key) || is_eval_key(s.key)) continue;
      if (std::find(keys.begin(), keys.end(), s.key) == keys.end()) keys.push_back(s.key);
    }
  }
  return keys;
}

std::vector<std::string> eval_keys(const std::vector<RunMetrics>& runs) {
  std::vector<std::string> keys;
  for (const auto& r : runs) {
    for (const auto& s : r.series) {
      if (is_eval_key(s.key) && !is_timing(s.key) &&
          std::find(keys.begin(), keys.end(), s.key) == keys.end()) {
        keys.push_back(s.key);
      }
    }
  }
  return keys;
}

Figure panels_figure(const std::string& name, const std::string& title,
                     const std::vector<RunMetrics>& runs, const std::vector<std::string>& keys) {
  Figure f;
  f.name = name;
  if (keys.empty()) return f;
  const auto [rows, cols] = layout(keys.size());
  f.width = std::max(720, 520 * cols);
  f.height = 390 * rows + 50;
  std::string& s = f.script;
  s = preamble();
  const bool rising = name == "eval";  // accuracies rise: keep the key out of their way
  std::size_t longest = 0;             // the longest legend
  s += fmt::format("set xlabel {}\n",
                   gnuplot_quote(x_axis_label(runs.empty() ? XAxis::steps : runs.front().x)));
  if (keys.size() > 1) {
    s += fmt::format("set multiplot layout {},{} title {} font ',13'\n", rows, cols,
                     gnuplot_quote(title));
  }
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const PanelText text = panel_text(keys[k]);
    s += fmt::format("set title {} font ',{}'\nset ylabel {}\n",
                     gnuplot_quote(keys.size() > 1 ? text.title : title), keys.size() > 1 ? 10 : 13,
                     gnuplot_quote(text.ylabel));
    std::vector<std::string> clauses;
    std::vector<const std::vector<Point>*> curves;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const Series* series = runs[r].find(keys[k]);
      if (!series || series->points.empty()) continue;
      curves.push_back(&series->points);
      const std::string file = fmt::format("{}-{}-{}.dat", name, k, r);
      f.data.push_back({file, points_text(series->points)});
      clauses.push_back(
          curve(file, series->points.size(), r, static_cast<int>(r % 5) + 1, runs[r].name));
    }
    const bool lr = keys[k] == "learning_rate";
    s += lr ? "set format y '%.1e'\n" : "set format y '% h'\n";
    const std::string range = y_range(curves);
    // The learning rate starts from 0 (warm-up): show that axis from 0.
    s += lr && range == kAutoscaleY ? "set yrange [0:*]\n" : range;
    s += legend(clauses.size(), rising ? "left" : "right");
    longest = std::max(longest, clauses.size());
    s += "plot ";
    for (std::size_t c = 0; c < clauses.size(); ++c) s += (c ? ", \\\n     " : "") + clauses[c];
    s += "\n";
  }
  if (keys.size() > 1) s += "unset multiplot\n";
  f.height += legend_height(rows, longest);
  return f;
}

Figure losses_figure(const std::vector<RunMetrics>& runs) {
  return panels_figure("losses", "pretraining losses (means over each logging window)", runs,
                       loss_keys(runs));
}

Figure learning_rate_figure(const std::vector<RunMetrics>& runs) {
  const bool any = std::any_of(runs.begin(), runs.end(),
                               [](const RunMetrics& r) { return r.find("learning_rate"); });
  if (!any) return Figure{"learning_rate", 800, 600, "", {}};
  Figure f = panels_figure("learning_rate", "learning rate", runs, {"learning_rate"});
  f.width = 800, f.height = 500;
  return f;
}

Figure eval_figure(const std::vector<RunMetrics>& runs) {
  return panels_figure("eval", "evaluation during pretraining", runs, eval_keys(runs));
}

Figure results_figure(const std::vector<ModelScores>& models) {
  Figure f;
  f.name = "results";
  std::vector<std::string> tasks, metrics;
  for (const auto& m : models) {
    for (const auto& t : m.tasks) {
      if (std::find(tasks.begin(), tasks.end(), t.task) == tasks.end()) {
        tasks.push_back(t.task);
        metrics.push_back(t.metric);
      }
    }
  }
  if (tasks.empty()) return f;
  sort_tasks(tasks, metrics);
  const auto n = static_cast<double>(models.size());
  f.width = std::clamp(160 + static_cast<int>(tasks.size()) * (120 + 40 * static_cast<int>(n)), 700,
                       2000);
  f.height = 560;
  std::string& s = f.script;
  s = preamble();
  s += fmt::format("set multiplot layout 1,{} title {} font ',13'\n", tasks.size(),
                   gnuplot_quote("DialoGLUE test: mean ± std (whisker), seeds (circles)"));
  // The models name the x axis of every panel (a key would not fit one panel's width).
  s += "set grid noxtics ytics\nset bmargin 9\nunset key\n";
  s += fmt::format("set xrange [-0.6:{}]\n", n - 0.4);
  s += "set xtics rotate by 35 right font ',9' scale 0 (";
  for (std::size_t i = 0; i < models.size(); ++i) {
    s += fmt::format("{}{} {}", i ? ", " : "", gnuplot_tic_label(models[i].name), i);
  }
  s += ")\n";
  for (std::size_t j = 0; j < tasks.size(); ++j) {
    // The axis fits the task's points, so a 1-point difference is visible (it never starts at
    // 0 for its own sake).
    double lo = 1e300, hi = -1e300;
    std::string means, seeds;
    for (std::size_t i = 0; i < models.size(); ++i) {
      for (const auto& t : models[i].tasks) {
        if (t.task != tasks[j]) continue;
        lo = std::min(lo, t.mean - t.std);
        hi = std::max(hi, t.mean + t.std);
        means += fmt::format("{} {} {} {:.2f}\n", i, t.mean, t.std, t.mean);
        for (const SeedRun& r : t.runs) {
          seeds += fmt::format("{} {}\n", static_cast<double>(i) + 0.22, r.test);
          lo = std::min(lo, r.test);
          hi = std::max(hi, r.test);
        }
      }
    }
    const double pad = std::max(0.5, 0.12 * (hi - lo));
    f.data.push_back({fmt::format("results-{}.dat", j), means});
    f.data.push_back({fmt::format("results-seeds-{}.dat", j), seeds.empty() ? "0 NaN\n" : seeds});
    s +=
        fmt::format("set title {} font ',11'\n", gnuplot_quote(tasks[j] + " (" + metrics[j] + ")"));
    s += fmt::format("set yrange [{}:{}]\n", lo - pad, hi + 1.8 * pad);
    s += j == 0 ? "set ylabel 'test score (%)'\n" : "unset ylabel\n";
    std::vector<std::string> clauses;
    for (std::size_t i = 0; i < models.size(); ++i) {
      const int lt = static_cast<int>(i) + 1;
      clauses.push_back(fmt::format(
          "'results-{}.dat' using ($1=={} ? $1 : NaN):2:3 with yerrorbars lt {} lc {} pt 7 ps 1.4 "
          "title {}",
          j, i, lt, lt, gnuplot_quote(models[i].name)));
    }
    clauses.push_back(fmt::format(
        "'results-seeds-{}.dat' using 1:2 with points pt 6 ps 0.8 lc rgb '#555555' notitle", j));
    clauses.push_back(fmt::format(
        "'results-{}.dat' using 1:($2+$3):4 with labels offset 0,0.9 font ',9' tc rgb '#222222' "
        "notitle",
        j));
    s += "plot ";
    for (std::size_t c = 0; c < clauses.size(); ++c) s += (c ? ", \\\n     " : "") + clauses[c];
    s += "\n";
  }
  s += "unset multiplot\n";
  return f;
}

Figure val_curves_figure(const std::vector<ModelScores>& models) {
  Figure f;
  f.name = "val_curves";
  std::vector<std::string> tasks, metrics;
  for (const auto& m : models) {
    for (const auto& t : m.tasks) {
      const bool curves = std::any_of(t.runs.begin(), t.runs.end(),
                                      [](const SeedRun& r) { return !r.val_curve.empty(); });
      if (curves && std::find(tasks.begin(), tasks.end(), t.task) == tasks.end()) {
        tasks.push_back(t.task);
        metrics.push_back(t.metric);
      }
    }
  }
  if (tasks.empty()) return f;
  sort_tasks(tasks, metrics);
  const auto [rows, cols] = layout(tasks.size());
  f.width = std::max(720, 520 * cols);
  f.height = 420 * rows + 50;
  std::string& s = f.script;
  s = preamble();
  s += "set xlabel 'epoch'\n";
  std::size_t longest = 0;  // the longest legend
  const std::string title = "val score per epoch of each fine-tuning run";
  if (tasks.size() > 1) {
    s += fmt::format("set multiplot layout {},{} title {} font ',13'\n", rows, cols,
                     gnuplot_quote(title));
  }
  for (std::size_t j = 0; j < tasks.size(); ++j) {
    s += fmt::format("set title {} font ',{}'\nset ylabel {}\n",
                     gnuplot_quote(tasks.size() > 1 ? tasks[j] : title + ": " + tasks[j]),
                     tasks.size() > 1 ? 11 : 13, gnuplot_quote("val " + metrics[j] + " (%)"));
    std::vector<std::string> clauses;
    std::vector<const std::vector<Point>*> curves;
    for (std::size_t i = 0; i < models.size(); ++i) {
      for (const auto& t : models[i].tasks) {
        if (t.task != tasks[j]) continue;
        for (std::size_t r = 0; r < t.runs.size(); ++r) {
          if (t.runs[r].val_curve.empty()) continue;
          curves.push_back(&t.runs[r].val_curve);
          const std::string file = fmt::format("val_curves-{}-{}-{}.dat", j, i, r);
          f.data.push_back({file, points_text(t.runs[r].val_curve)});
          clauses.push_back(curve(file, t.runs[r].val_curve.size(), i, static_cast<int>(r % 5) + 1,
                                  fmt::format("{} seed {}", models[i].name, t.runs[r].seed)));
        }
      }
    }
    double last_epoch = 0;
    for (const auto* c : curves) last_epoch = std::max(last_epoch, c->back().x);
    s += last_epoch <= 20 ? "set xtics 1\n" : "set xtics autofreq\n";
    s += y_range(curves) + legend(clauses.size(), "left") + "plot ";
    longest = std::max(longest, clauses.size());
    for (std::size_t c = 0; c < clauses.size(); ++c) s += (c ? ", \\\n     " : "") + clauses[c];
    s += "\n";
  }
  if (tasks.size() > 1) s += "unset multiplot\n";
  f.height += legend_height(rows, longest);
  return f;
}

std::vector<Figure> all_figures(const Inputs& inputs) {
  std::vector<Figure> all;
  if (!inputs.runs.empty()) {
    all.push_back(losses_figure(inputs.runs));
    all.push_back(learning_rate_figure(inputs.runs));
    all.push_back(eval_figure(inputs.runs));
  }
  if (!inputs.models.empty()) {
    all.push_back(results_figure(inputs.models));
    all.push_back(val_curves_figure(inputs.models));
  }
  all.erase(
      std::remove_if(all.begin(), all.end(), [](const Figure& f) { return f.script.empty(); }),
      all.end());
  return all;
}

}  // namespace dialtree::plot
