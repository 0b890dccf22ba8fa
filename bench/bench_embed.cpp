// In-process timing of `dialtree embed` (bench/serve.sh): the bundle is loaded once, then every
// input of the file goes through the same steps as cli/embed_cmd.cpp (Embedder::prepare, longest
// first, batches of --batch-size within --max-batch-tokens, Embedder::forward, normalisation)
// in 1 untimed warm-up pass and --passes timed ones. Model loading and file reading are not
// timed; tokenisation is (for text inputs). Prints one `RESULT key=value ...` line with the
// median pass time and the sentences/s it gives.
//
//   usage: bench_embed --model BUNDLE --input FILE [--input-format text|jsonl] [--passes 3]
//                      [--batch-size 64] [--max-batch-tokens 16384] [--threads 2]
//                      [--order longest|input] [--write-ids FILE]
// --order input keeps the file's order (batches of mixed lengths, as a server sees them)
// instead of longest first.
// --write-ids writes each text's sub-word ids (the bundle's tokenizer, no role markers, not
// truncated) as one JSON array per line: the input of bench/reference/embed.py and of
// `dialtree embed --input-format jsonl`.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/torch_api.h"
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "common/blas_kernels.h"
#include "serve/api.h"
#include "serve/embedder.h"

namespace {

/// Command-line settings.
struct EmbedBenchOptions {
  std::string model, input, input_format = "text", write_ids, order = "longest";
  int passes = 3, threads = 2;
  std::size_t batch_size = 64, max_batch_tokens = 16384;
};

/// Parses argv. @throws std::invalid_argument on an unknown or bad flag.
EmbedBenchOptions parse_args(int argc, char** argv) {
  EmbedBenchOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--model") {
      o.model = value;
    } else if (flag == "--input") {
      o.input = value;
    } else if (flag == "--input-format") {
      o.input_format = value;
    } else if (flag == "--order") {
      o.order = value;
    } else if (flag == "--write-ids") {
      o.write_ids = value;
    } else if (flag == "--passes") {
      o.passes = std::stoi(value);
    } else if (flag == "--threads") {
      o.threads = std::stoi(value);
    } else if (flag == "--batch-size") {
      o.batch_size = std::stoul(value);
    } else if (flag == "--max-batch-tokens") {
      o.max_batch_tokens = std::stoul(value);
    } else {
      throw std::invalid_argument("unknown flag " + flag);
    }
  }
  if (o.model.empty() || o.input.empty() || o.passes < 1 || o.threads < 1 || o.batch_size < 1 ||
      (o.input_format != "text" && o.input_format != "jsonl") ||
      (o.order != "longest" && o.order != "input")) {
    throw std::invalid_argument(
        "need --model, --input, --passes >= 1, --input-format text|jsonl, --order longest|input");
  }
  return o;
}

/// Every non-empty line of the file as a server input (a text, or any JSON input for jsonl).
/// @throws std::runtime_error if the file cannot be read; ApiError on a bad input.
std::vector<dialtree::serve::Input> read_inputs(const EmbedBenchOptions& o) {
  std::ifstream in(o.input, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + o.input);
  std::vector<dialtree::serve::Input> inputs;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    inputs.push_back(o.input_format == "text"
                         ? dialtree::serve::parse_input(nlohmann::json(line), "text")
                         : dialtree::serve::parse_input(nlohmann::json::parse(line), "input"));
  }
  return inputs;
}

/// One pass of cli/embed_cmd.cpp over `inputs`; returns the number of padded tokens.
std::size_t embed_pass(const dialtree::serve::Embedder& embedder,
                       const std::vector<dialtree::serve::Input>& inputs,
                       const EmbedBenchOptions& o) {
  using dialtree::serve::TruncationDirection;
  std::vector<dialtree::data::SerializedExample> examples;
  examples.reserve(inputs.size());
  for (const auto& in : inputs) {
    examples.push_back(embedder.prepare(in, true, TruncationDirection::kRight, "input"));
  }
  std::size_t padded = 0;
  for (auto& v : dialtree::serve::embed_batched(
           embedder, examples, {o.batch_size, o.max_batch_tokens, o.order == "longest"}, &padded)) {
    v = dialtree::serve::finish_embedding(std::move(v), std::nullopt, true);
  }
  return padded;
}

/// Writes the sub-word ids of every text input (see --write-ids).
/// @throws std::runtime_error if the file cannot be written or an input is not a text.
void write_ids(const dialtree::serve::Embedder& embedder,
               const std::vector<dialtree::serve::Input>& inputs, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path);
  for (const auto& in : inputs) {
    if (in.turns.size() != 1) throw std::runtime_error("--write-ids needs one text per line");
    out << nlohmann::json(embedder.tokenizer().encode(in.turns[0].text)).dump() << '\n';
  }
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  // The BLAS kernels dialtree itself would run with (docs/performance.md): re-executes once
  // with OPENBLAS_CORETYPE set when OpenBLAS chose narrower ones than the CPU has.
  dialtree::ensure_blas_kernels(argv);
  namespace bench = dialtree::bench;
  try {
    const EmbedBenchOptions o = parse_args(argc, argv);
    at::set_num_threads(o.threads);
    const std::vector<dialtree::serve::Input> inputs = read_inputs(o);
    const auto t_load = bench::Clock::now();
    dialtree::serve::Embedder embedder(o.model, 256);
    const double load_s = bench::seconds_since(t_load);
    if (!o.write_ids.empty()) write_ids(embedder, inputs, o.write_ids);
    embed_pass(embedder, inputs, o);  // warm-up
    std::vector<double> times;
    std::size_t padded = 0;
    for (int p = 0; p < o.passes; ++p) {
      const auto t0 = bench::Clock::now();
      padded = embed_pass(embedder, inputs, o);
      times.push_back(bench::seconds_since(t0));
    }
    const double med = bench::median(times);
    std::printf(
        "RESULT impl=cpp inputs=%zu padded_tokens=%zu threads=%d load_s=%.3f pass_s=%.3f "
        "sent_s=%.1f\n",
        inputs.size(), padded, o.threads, load_s, med, static_cast<double>(inputs.size()) / med);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_embed: %s\n", e.what());
    return 2;
  }
}
