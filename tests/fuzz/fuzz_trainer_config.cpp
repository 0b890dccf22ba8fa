// libFuzzer target: the pretraining YAML config reader (trainer/config.h). The input is the YAML
// text, optionally followed by NUL-separated `key=value` overrides. A config that loads must dump
// to YAML that loads back equal (dump_config's documented round trip).
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "trainer/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dialtree;
  const fuzz::ConfigInput in = fuzz::split_config_input(fuzz::as_text(data, size));
  fuzz::allow_data_errors([&] {
    const trainer::PretrainConfig config =
        trainer::parse_config(in.yaml, "fuzz.yaml", in.overrides);
    const trainer::PretrainConfig back =
        trainer::parse_config(trainer::dump_config(config), "dump.yaml");
    if (back != config) std::abort();
  });
  return 0;
}
