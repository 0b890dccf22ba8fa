// `dialtree plot RUN_DIR... --out DIR [--format png,svg] [--x steps|minutes]`: training curves of
// pretraining runs and score charts of eval folders, drawn with gnuplot (plot/,
// docs/plotting.md).
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "plot/figures.h"
#include "plot/inputs.h"
#include "plot/render.h"

namespace dialtree::cli {

namespace {

struct PlotArgs {
  std::vector<std::string> inputs;
  std::string out, formats = "png,svg", x = "steps";
};

// "png,svg" -> the options; std::invalid_argument (exit 2) for anything else.
plot::RenderOptions parse_formats(const std::string& list) {
  plot::RenderOptions o;
  o.png = o.svg = false;
  std::stringstream in(list);
  std::string f;
  while (std::getline(in, f, ',')) {
    if (f == "png") {
      o.png = true;
    } else if (f == "svg") {
      o.svg = true;
    } else {
      throw std::invalid_argument("--format: unknown format '" + f + "' (known: png, svg)");
    }
  }
  if (!o.png && !o.svg) throw std::invalid_argument("--format: give png, svg or png,svg");
  return o;
}

// "steps" or "minutes" -> the x axis of the runs' curves; std::invalid_argument (exit 2) for
// anything else.
plot::XAxis parse_x_axis(const std::string& x) {
  if (x == "steps") return plot::XAxis::steps;
  if (x == "minutes") return plot::XAxis::minutes;
  throw std::invalid_argument("--x: unknown value '" + x + "' (known: steps, minutes)");
}

void run_plot(const PlotArgs& a) {
  if (a.out.empty()) throw std::invalid_argument("--out must not be empty");
  const plot::RenderOptions options = parse_formats(a.formats);
  const plot::XAxis x = parse_x_axis(a.x);
  const plot::Inputs inputs = plot::load_inputs(a.inputs, x);  // DataError (exit 2) on bad input
  for (const auto& run : inputs.runs) {
    if (run.unfinished_line != 0) {
      fmt::print(stderr, "warning: {}: line {} is unfinished (no newline, not JSON): skipped\n",
                 run.path, run.unfinished_line);
    }
    if (run.step_restarts != 0) {
      fmt::print(stderr,
                 "warning: {}: the logged steps go back {} time(s), first to step {} after step "
                 "{} (a resumed run appended to the file?): a step logged twice is drawn with "
                 "its later value\n",
                 run.path, run.step_restarts, run.first_restart_step, run.first_restart_after);
    }
  }
  const std::vector<plot::Figure> figures = plot::all_figures(inputs);
  if (figures.empty()) {
    throw std::invalid_argument("nothing to plot: the inputs hold no numeric series or scores");
  }
  for (const auto& figure : figures) {
    const plot::Rendered r = plot::render(figure, a.out, options);
    std::istringstream warnings(r.warnings);  // what gnuplot printed although it succeeded
    for (std::string line; std::getline(warnings, line);) {
      if (!line.empty()) fmt::print(stderr, "warning: gnuplot ({}): {}\n", figure.name, line);
    }
    for (const auto& f : r.files) fmt::print("{}\n", f.string());
  }
}

}  // namespace

void register_plot(CLI::App& app) {
  auto args = std::make_shared<PlotArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plot",
      "Draw training curves (pretraining run folders: losses, learning rate, eval_* keys) and "
      "score charts (eval dialoglue --out folders or results files: test bars, val curves) "
      "as PNG and SVG with gnuplot");
  cmd->add_option("inputs", args->inputs,
                  "run folders (metrics.jsonl), eval folders (results.json), or such files; "
                  "several are drawn together, named by their folder")
      ->required();
  add_out_option(cmd, args->out, OutputKind::Folder, "the figures; created");
  cmd->add_option("--format", args->formats, "png, svg or png,svg")->capture_default_str();
  cmd->add_option("--x", args->x,
                  "x axis of the pretraining runs' curves: steps, or minutes (train_seconds / 60: "
                  "optimisation time, evaluation excluded)")
      ->capture_default_str();
  cmd->callback([args] { run_plot(*args); });
}

}  // namespace dialtree::cli
