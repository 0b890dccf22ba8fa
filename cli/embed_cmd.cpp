// `dialtree embed --model DIR [--input FILE] [--output FILE]`: offline batch embeddings with the
// server's Embedder (serve/embedder.h), so the vectors equal `dialtree serve`'s for the same
// inputs. Input: one text per line (--input-format text) or one JSON input per line (jsonl: a
// string, a dialog {"turns": [...]} or token ids). Output: one JSON array of floats per line, in
// input order.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/embed_options.h"
#include "common/atomic_file.h"
#include "common/batching.h"
#include "common/device_spec.h"
#include "common/error.h"
#include "common/settings.h"
#include "common/utf8.h"
#include "common/value_range.h"
#include "serve/api.h"
#include "serve/embedder.h"

namespace dialtree::cli {
namespace {

// A DataError at `name`, `where` for an API error: the message without the "<param>: " it
// starts with, which DataError's "field '<param>'" already says.
DataError input_error(const std::string& name, const std::string& where, const serve::ApiError& e) {
  std::string message = e.what();
  const std::string prefix = e.param() + ": ";
  if (!e.param().empty() && message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  return DataError(name, where, e.param(), message);
}

// Reads every input; errors name the file and the 1-based line.
std::vector<serve::Input> read_inputs(const EmbedArgs& a) {
  std::ifstream file;
  std::istream* in = &std::cin;
  const std::string name = a.input == "-" ? "<stdin>" : a.input;
  if (a.input != "-") {
    file.open(a.input, std::ios::binary);
    if (!file) throw DataError(a.input, "", "", "cannot open the input file");
    in = &file;
  }
  std::vector<serve::Input> inputs;
  std::string line;
  std::size_t n = 0;
  while (std::getline(*in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = "line " + std::to_string(n);
    try {
      if (a.input_format == "text") {
        inputs.push_back(serve::parse_input(nlohmann::json(line), "text"));
      } else {
        if (!utf8::is_valid(line)) throw DataError(name, where, "", "not valid UTF-8");
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded()) throw DataError(name, where, "", "not a JSON value");
        inputs.push_back(serve::parse_input(j, "input"));
      }
    } catch (const serve::ApiError& e) {
      throw input_error(name, where, e);
    } catch (const nlohmann::json::exception& e) {
      // A text line with invalid UTF-8 cannot become a JSON string.
      throw DataError(name, where, "", "not valid UTF-8");
    }
  }
  if (in->bad()) throw DataError(name, "", "", "read error");
  return inputs;
}

void run_embed(const EmbedArgs& a) {
  log_to_stderr();
  settings::check_flags(settings::view(embed_settings(), a));
  const long long cpus = std::max(1u, std::thread::hardware_concurrency());
  if (const std::string p = integer_range_problem(a.num_threads, 0, cpus,
                                                  "0 = the default; at most this machine's CPUs");
      !p.empty()) {
    throw std::invalid_argument("--num-threads: " + p);
  }
  if (const std::string p = input_length_problem(a.max_input_length, a.max_batch_tokens);
      !p.empty()) {
    throw std::invalid_argument("--max-input-length: " + p);
  }
  // The vectors replace --output as a whole once every input is read; with --input as --output
  // that would lose the inputs (as sts convert and tokenizer train, status 2).
  if (a.input != "-" && a.output != "-") {
    refuse_overwriting_input("--output", a.output, "--input", a.input);
  }
  if (a.num_threads > 0) set_num_threads(a.num_threads);
  const std::vector<serve::Input> inputs = read_inputs(a);
  serve::Embedder embedder(a.model, a.max_input_length, a.device);
  const std::string name = a.input == "-" ? "<stdin>" : a.input;
  std::vector<data::SerializedExample> examples;
  examples.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    try {
      examples.push_back(
          embedder.prepare(inputs[i], a.truncate, serve::TruncationDirection::kRight, "input"));
    } catch (const serve::ApiError& e) {
      throw input_error(name, "line " + std::to_string(i + 1), e);
    }
  }
  // Longest first, so each batch pads little; results come back in input order.
  std::vector<std::vector<float>> vectors =
      serve::embed_batched(embedder, examples, {a.batch_size, a.max_batch_tokens});
  for (auto& v : vectors) v = serve::finish_embedding(std::move(v), a.dimensions, a.normalize);
  std::string text;
  for (const auto& v : vectors) {
    serve::append_float_array(text, v.data(), v.size());
    text.push_back('\n');
  }
  if (a.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    write_file_atomic(a.output, text);
  }
  spdlog::info("embedded {} inputs with {} (hidden_size {})", vectors.size(), a.model,
               embedder.hidden_size());
}

}  // namespace

void register_embed(CLI::App& app) {
  auto a = std::make_shared<EmbedArgs>();
  CLI::App* cmd = app.add_subcommand(
      "embed", "Embed texts or dialogs offline with a model bundle (same vectors as serve)");
  add_setting_flags(cmd, embed_settings(), *a);  // --model, --device: their helpers
  cmd->callback([a] { run_embed(*a); });
}

}  // namespace dialtree::cli
