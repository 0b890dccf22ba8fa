// SentencePiece encode throughput through dialtree's tokenizer (data/sentencepiece_tokenizer):
//   bench_spm_encode TOKENIZER_DIR TEXT_FILE [REPEATS]
// Encodes every non-empty line REPEATS times (default 3) on one thread and prints
// sentences/s, tokens/s and an id checksum that bench/reference/spm_encode.py must match.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "data/tokenizer_factory.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_DIR TEXT_FILE [REPEATS]\n", argv[0]);
    return 2;
  }
  const auto tok = dialtree::data::load_tokenizer(argv[1]);
  const int repeats = argc > 3 ? std::stoi(argv[3]) : 3;
  std::vector<std::string> lines;
  std::ifstream in(argv[2]);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (!l.empty()) lines.push_back(std::move(l));
  }
  std::uint64_t tokens = 0, checksum = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) {
    for (const auto& l : lines) {
      const auto ids = tok->encode(l);
      tokens += ids.size();
      if (r == 0) {
        for (std::size_t i = 0; i < ids.size(); ++i) checksum += (i + 1) * std::uint64_t(ids[i]);
      }
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double n = double(lines.size()) * repeats;
  // Two decimals: a line that takes seconds (bench/run.sh part 2b) still has its digits.
  std::printf("cpp    %zu lines x %d: %.2f sentences/s, %.2f tokens/s, checksum %llu\n",
              lines.size(), repeats, n / s, tokens / s, (unsigned long long)checksum);
  return 0;
}
