// libFuzzer target: the pretraining YAML config reader (trainer/config.h). The input is the YAML
// text, optionally followed by NUL-separated `key=value` overrides. A config that loads must dump
// to YAML that loads back equal (dump_config's documented round trip).
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "trainer/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dialtree;
  const std::string_view input = fuzz::as_text(data, size);
  const std::size_t nul = input.find('\0');
  const std::string yaml(input.substr(0, nul));
  std::vector<std::string> overrides;
  for (std::size_t at = nul; at != std::string_view::npos;) {
    const std::size_t next = input.find('\0', at + 1);
    overrides.emplace_back(
        input.substr(at + 1, next == std::string_view::npos ? next : next - at - 1));
    at = next;
  }
  fuzz::allow_data_errors([&] {
    const trainer::PretrainConfig config = trainer::parse_config(yaml, "fuzz.yaml", overrides);
    const trainer::PretrainConfig back =
        trainer::parse_config(trainer::dump_config(config), "dump.yaml");
    if (back != config) std::abort();
  });
  return 0;
}
