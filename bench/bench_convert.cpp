// Readers + STS conversion throughput on the real data, in one process (no start-up cost):
//   bench_convert DATA_DIR OUT_DIR
// Prints one line per file (records, seconds, records/s) and the total. Compare with
// `python3 bench/reference/convert.py --all DATA_DIR OUT_DIR` (bench/run.sh does both).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "bench/suite.h"
#include "sts/convert.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DATA_DIR OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path data = argv[1], out = argv[2];
  std::filesystem::create_directories(out);
  std::size_t total = 0;
  double total_s = 0;
  for (const auto& e : dialtree::bench::kConvertSuite) {
    const auto t0 = std::chrono::steady_clock::now();
    dialtree::sts::ConvertReport rep;
    const auto dialogs = dialtree::sts::convert(dialtree::sts::parse_source_format(e.format),
                                                (data / e.input).string(), {}, &rep);
    dialtree::sts::write_jsonl((out / e.output).string(), dialogs);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-36s %8zu records %7.3f s %10.0f records/s\n", e.input, rep.records, s,
                rep.records / s);
    total += rep.records;
    total_s += s;
  }
  std::printf("%-36s %8zu records %7.3f s %10.0f records/s\n", "TOTAL", total, total_s,
              total / total_s);
  return 0;
}
