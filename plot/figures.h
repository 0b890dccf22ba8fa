// The figures of `dialtree plot` as gnuplot programs (docs/plotting.md): pure functions from the
// inputs (plot/inputs.h) to a gnuplot script plus the data files it reads, so what is drawn can
// be tested without running gnuplot. plot/render.h runs them.
#pragma once

#include <string>
#include <vector>

#include "plot/inputs.h"

namespace dialtree::plot {

/// A data file a figure's script reads (by its bare name, from the folder the script runs in).
struct DataFile {
  std::string name;     ///< e.g. "losses-0-1.dat"
  std::string content;  ///< whitespace-separated columns, one point per line
};

/// One figure: the gnuplot commands that draw it on the current terminal and output (no `set
/// terminal` / `set output`: the renderer adds those per format), and its data.
struct Figure {
  std::string name;  ///< output file stem, e.g. "losses"
  int width = 800;   ///< size in pixels (PNG) / SVG user units
  int height = 600;
  std::string script;  ///< starts with `reset`
  std::vector<DataFile> data;
};

/// `text` as a gnuplot single-quoted string: quotes doubled, control characters replaced by
/// '?', so any run name is safe inside a script.
std::string gnuplot_quote(const std::string& text);

/// `text` as a label of an explicit tic list (`set xtics ('label' x, ...)`), where gnuplot reads
/// the label as a printf format of the tic's value: gnuplot_quote with each '%' doubled, so that
/// a name such as "main job, 15 %" is drawn as written instead of failing with "Bad format
/// character".
std::string gnuplot_tic_label(const std::string& text);

/// The keys of metrics.jsonl drawn in losses.png: every numeric key except `epoch`,
/// `learning_rate`, `examples_per_second` and the `eval_*` keys, the known ones first in a fixed
/// order (loss, contrastive, self_supervised, mlm_labelled, mlm_unlabelled, grad_norm), then any
/// other (sorted by name, run after run). Keys that no run has are left out.
std::vector<std::string> loss_keys(const std::vector<RunMetrics>& runs);

/// The `eval_*` keys of any run (sorted by name, run after run), except timings such as
/// `eval_seconds` (keys ending in `_seconds`).
std::vector<std::string> eval_keys(const std::vector<RunMetrics>& runs);

/// One panel per key, each with every run that logged it as one line (legend: run name; run i
/// gets colour i) against the runs' x: step, or minutes of training, as RunMetrics::x of the
/// first run says (the runs of one figure share it, as load_inputs reads them; x_axis_label
/// names the axis). `title` heads the figure; each panel is titled after its key
/// (docs/training.md's meaning of the known keys). Empty script when `keys` is empty.
Figure panels_figure(const std::string& name, const std::string& title,
                     const std::vector<RunMetrics>& runs, const std::vector<std::string>& keys);

/// losses.png: panels_figure of loss_keys(). Empty script when no run has such a key.
Figure losses_figure(const std::vector<RunMetrics>& runs);
/// learning_rate.png: the learning rate against the runs' x, one line per run.
Figure learning_rate_figure(const std::vector<RunMetrics>& runs);
/// eval.png: one panel per `eval_*` key. Empty script when no run has one.
Figure eval_figure(const std::vector<RunMetrics>& runs);

/// results.png: one panel per task (sorted by name), each model a dot at its mean test score
/// with a ±std whisker and the mean printed above it, and each seed's score as a circle beside
/// it; each panel's axis fits its task's points (not 0 to 100), so the 1-2 point differences
/// between models show. Data files results-<task>.dat ("model mean std label") and
/// results-seeds-<task>.dat ("x score").
Figure results_figure(const std::vector<ModelScores>& models);
/// val_curves.png: one panel per task (sorted by name), the val score against epoch of every model and seed that
/// recorded a curve (colour per model, dash pattern per seed). Empty script when none did.
Figure val_curves_figure(const std::vector<ModelScores>& models);

/// Every figure that the inputs allow, in the order above (figures with an empty script are
/// left out).
std::vector<Figure> all_figures(const Inputs& inputs);

}  // namespace dialtree::plot
