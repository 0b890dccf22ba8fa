// `dialtree sts convert` and `dialtree sts score`.
#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_util.h"
#include "sts/convert.h"
#include "sts/score.h"

namespace dialtree::cli {

namespace {

namespace fs = std::filesystem;

struct ConvertArgs {
  std::string format, input, out, source, domain, categories;
  std::vector<std::string> exclude_services;
  bool has_source = false, has_domain = false, has_categories = false;
};

// Refuses an --out that is one of the files the conversion reads (std::invalid_argument, exit 2):
// --input itself, a dialogue file of an SGD input folder, or the categories file.
void check_out_is_not_an_input(const ConvertArgs& a, sts::SourceFormat format) {
  std::vector<std::pair<std::string, std::string>> inputs = {{"--input", a.input}};
  std::error_code ec;
  if (fs::is_directory(a.input, ec)) {
    for (const auto& e : fs::directory_iterator(a.input, ec)) {
      inputs.emplace_back("a file of --input", e.path().string());
    }
  }
  if (format == sts::SourceFormat::IntentCsv) {
    inputs.emplace_back("--categories",
                        a.has_categories
                            ? a.categories
                            : (fs::path(a.input).parent_path() / "categories.json").string());
  }
  for (const auto& [what, path] : inputs) refuse_overwriting_input("--out", a.out, what, path);
}

void run_convert(const ConvertArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  if (a.out.empty()) throw std::invalid_argument("--out must not be empty");
  const sts::SourceFormat format = sts::parse_source_format(a.format);
  sts::ConvertOptions opt;
  if (a.has_source) opt.source = a.source;  // "" is rejected by sts::convert
  if (a.has_domain) opt.domain = a.domain;
  if (a.has_categories) opt.categories = a.categories;
  for (std::string s : a.exclude_services) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    if (s.empty()) throw std::invalid_argument("--exclude-services: an empty service name");
    if (s == "dstc8") {
      const auto& d = sts::dstc8_services();
      opt.exclude_services.insert(opt.exclude_services.end(), d.begin(), d.end());
    } else {
      opt.exclude_services.push_back(s);
    }
  }
  check_out_is_not_an_input(a, format);
  // Opened first, so that an unusable --out (a device, a folder, no such folder) fails before a
  // long conversion; the temporary file is removed if the conversion fails or is interrupted.
  AtomicFile out(a.out);
  sts::ConvertReport rep;
  const auto dialogs = sts::convert(format, a.input, opt, &rep);
  sts::write_jsonl(out.stream(), dialogs);
  out.commit();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& w : rep.warnings) fmt::print(stderr, "warning: {}\n", w);
  fmt::print(
      "{}: {} records -> {} dialogs, {} turns ({} labelled, {} empty labels), "
      "{} span mismatches dropped{} -> {} in {:.2f} s\n",
      a.input, rep.records, rep.dialogs, rep.turns, rep.labelled_turns, rep.empty_labels,
      rep.value_mismatch,
      a.exclude_services.empty()
          ? std::string()
          : fmt::format(", {} dialogs of excluded services left out", rep.excluded_dialogs),
      a.out, secs);
}

// Reads what `sts score` compares: a label tree in the nested sts form, or one whole turn
// ({"text", "label", "role"?, "extra"?}) whose spans are checked against its text.
sts::Tree read_tree(const std::string& path) {
  const json j = json_parse_file(path);
  if (j.is_object()) {
    const auto has_string = [&](const char* key) {
      const auto it = j.find(key);
      return it != j.end() && it->is_string();
    };
    if (has_string("format")) {
      throw DataError(path, "", "",
                      "this is an sts/1 dialog record; pass a label tree or one turn "
                      "({\"text\": ..., \"label\": {...}})");
    }
    if (has_string("text") || has_string("role")) {
      sts::Turn turn = sts::turn_from_json(j, path, "", "", /*require_role=*/false);
      if (!turn.label) {
        throw DataError(path, "", "",
                        "this turn has no label; pass a label tree or a turn with \"label\"");
      }
      return std::move(*turn.label);
    }
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
  conv->add_option("--input", args->input, "Source file (sgd: a file or a directory)")->required();
  add_out_option(conv, args->out, OutputKind::File,
                 ".jsonl, written atomically; a symbolic link is followed, a device, FIFO or "
                 "folder is refused, and it must not be one of the inputs");
  CLI::Option* source = conv->add_option(
      "--source", args->source,
      "Dataset name for ids and `source`, not empty. Default: intent-csv, slot-json, top: the "
      "name of the folder holding --input (however the path is spelled); text: the file's stem; "
      "sgd: \"sgd\"; multiwoz: \"multiwoz\"");
  CLI::Option* domain = conv->add_option(
      "--domain", args->domain,
      "Domain node for intent-csv, slot-json and top, not empty (default DEFAULT_DOMAIN); "
      "rejected for sgd and multiwoz (their own domains) and text (unlabelled)");
  CLI::Option* categories =
      conv->add_option("--categories", args->categories,
                       "intent-csv only: categories.json (default: beside the CSV)");
  conv->add_option("--exclude-services", args->exclude_services,
                   "sgd only: comma-separated services whose dialogues are left out whole; "
                   "`dstc8` names the four DialoGLUE's dstc8 task comes from (Buses_1, Events_1, "
                   "Homes_1, RentalCars_1), which a few-shot dstc8 figure must not see labelled")
      ->delimiter(',');
  conv->callback([args, source, domain, categories] {
    args->has_source = source->count() > 0;
    args->has_domain = domain->count() > 0;
    args->has_categories = categories->count() > 0;
    run_convert(*args);
  });

  auto a = std::make_shared<std::string>(), b = std::make_shared<std::string>();
  CLI::App* score = sts->add_subcommand(
      "score",
      "Multi-view score of two label trees (SPACE-2 §3): 10 Jaccard views + combined. Each file "
      "holds a label tree {domain: {intent: {slot: [values]}}} (values are strings, numbers or "
      "{\"value\", \"span\"}) or one turn {\"text\", \"label\"} whose spans are checked against "
      "its text. An empty tree (also one that fix-up empties) scores 0 against every tree, "
      "itself included; only in a batch is the diagonal 1 (docs/method.md §3.4).");
  score->add_option("--a", *a, "Label tree or turn JSON")->required();
  score->add_option("--b", *b, "Label tree or turn JSON")->required();
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
