// libFuzzer target: the fine-tuning recipe reader (eval/eval_config.h). The input is the YAML
// text, optionally followed by NUL-separated `key=value` overrides. Recipes that load must
// round-trip: written back as YAML from finetune_options_json(), they load to the same options.
#include <cstdlib>
#include <string>
#include <vector>

#include "eval/eval_config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dialtree;
  const fuzz::ConfigInput in = fuzz::split_config_input(fuzz::as_text(data, size));
  fuzz::allow_data_errors([&] {
    const nlohmann::json options = eval::finetune_options_json(
        eval::parse_finetune_options(in.yaml, "fuzz.yaml", in.overrides));
    std::string text;
    for (const auto& [key, value] : options.items()) {
      // JSON's number and boolean texts are YAML 1.2 core scalars; floats keep a dot or exponent.
      std::string v = value.dump();
      if (value.is_number_float() && v.find_first_of(".e") == std::string::npos) v += ".0";
      text += key + ": " + v + "\n";
    }
    if (eval::finetune_options_json(eval::parse_finetune_options(text, "back.yaml")) != options) {
      std::abort();
    }
  });
  return 0;
}
