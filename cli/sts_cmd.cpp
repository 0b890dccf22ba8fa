// `dialtree sts convert` and `dialtree sts score`.
#include <chrono>
#include <memory>

#include <fmt/core.h>

#include "cli/commands.h"
#include "common/json_util.h"
#include "sts/convert.h"
#include "sts/score.h"

namespace dialtree::cli {

namespace {

struct ConvertArgs {
  std::string format, input, out, source, domain, categories;
};

void run_convert(const ConvertArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  sts::ConvertOptions opt;
  if (!a.source.empty()) opt.source = a.source;
  if (!a.domain.empty()) opt.domain = a.domain;
  if (!a.categories.empty()) opt.categories = a.categories;
  sts::ConvertReport rep;
  const auto dialogs = sts::convert(sts::parse_source_format(a.format), a.input, opt, &rep);
  sts::write_jsonl(a.out, dialogs);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& w : rep.warnings) fmt::print(stderr, "warning: {}\n", w);
  fmt::print(
      "{}: {} records -> {} dialogs, {} turns ({} labelled, {} empty labels), "
      "{} span mismatches dropped -> {} in {:.2f} s\n",
      a.input, rep.records, rep.dialogs, rep.turns, rep.labelled_turns, rep.empty_labels,
      rep.value_mismatch, a.out, secs);
}

// Reads a label tree in the nested sts form from a JSON file; a whole sts turn
// ({"label": {...}}) is accepted too.
sts::Tree read_tree(const std::string& path) {
  const json j = json_parse_file(path);
  if (j.is_object() && j.contains("label") && j.contains("text")) {
    return sts::tree_from_json(j["label"], path, "", "label");
  }
  return sts::tree_from_json(j, path, "", "");
}

std::string number(double v) {
  return fmt::format("{:.3g}", v);
}

}  // namespace

void register_sts(CLI::App& app) {
  CLI::App* sts = app.add_subcommand("sts", "Semantic tree structure (STS) labels");
  sts->require_subcommand(1);

  auto args = std::make_shared<ConvertArgs>();
  CLI::App* conv = sts->add_subcommand("convert", "Convert a dataset into sts/1 JSONL");
  conv->add_option("--format", args->format, "Source format")
      ->required()
      ->check(CLI::IsMember(sts::source_format_names()));
  conv->add_option("--input", args->input, "Source file (SGD: file or directory)")->required();
  conv->add_option("--out", args->out, "Output .jsonl (written atomically)")->required();
  conv->add_option("--source", args->source,
                   "Dataset name for ids and `source` (default: input's folder name)");
  conv->add_option("--domain", args->domain,
                   "Domain node for sources without one (default DEFAULT_DOMAIN)");
  conv->add_option("--categories", args->categories,
                   "intent-csv: categories.json (default: beside the CSV)");
  conv->callback([args] { run_convert(*args); });

  auto a = std::make_shared<std::string>(), b = std::make_shared<std::string>();
  CLI::App* score = sts->add_subcommand(
      "score", "Multi-view score of two label trees (SPACE-2 §3): 10 Jaccard views + combined");
  score->add_option("--a", *a, "Label tree JSON")->required()->check(CLI::ExistingFile);
  score->add_option("--b", *b, "Label tree JSON")->required()->check(CLI::ExistingFile);
  score->callback([a, b] {
    const sts::ViewSets va = sts::view_sets(read_tree(*a)), vb = sts::view_sets(read_tree(*b));
    const sts::ViewScores s = sts::score_views(va, vb);
    std::string tuple;
    for (std::size_t k = 0; k < sts::kNumViews; ++k) {
      fmt::print("{:<5} {}{}\n", sts::view_names()[k], number(s.jaccard[k]),
                 s.defined[k] ? "" : "  (undefined: both sets empty)");
      tuple += (k ? ", " : "") + number(s.jaccard[k]);
    }
    fmt::print("views (D, I, S, V, DI, IS, SV, DIS, ISV, DISV) = ({})\n", tuple);
    fmt::print("combined {}\n", number(sts::combined_score(va, vb)));
  });
}

}  // namespace dialtree::cli
