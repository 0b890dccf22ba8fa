// The settings table of `dialtree embed` (embed_options.h).
#include "cli/embed_options.h"

#include "cli/common_options.h"
#include "common/device_spec.h"

namespace dialtree::cli {

namespace {

std::string input_format_problem(const std::string& value) {
  if (value == "text" || value == "jsonl") return {};
  return "must be text or jsonl, got \"" + value + "\"";
}

}  // namespace

const std::vector<settings::Setting<EmbedArgs>>& embed_settings() {
  using A = EmbedArgs;
  const auto flag = [](std::string name, auto member, std::string help) {
    return settings::field(std::move(name), member, std::move(help)).env();
  };
  static const std::vector<settings::Setting<A>> table = {
      // --help: "Model bundle folder (<this>)"
      flag("model", &A::model, kBundleExample).default_shown("required"),
      flag("input", &A::input, "Input file, one input per line ('-' = stdin)"),
      flag("output", &A::output, "Output JSONL file, one vector per line ('-' = stdout)"),
      flag("input-format", &A::input_format,
           "text: one text per line; jsonl: one JSON input per line (string, {\"turns\":[...]} "
           "or token ids)")
          .checked(&input_format_problem, "text, jsonl"),
      flag("normalize", &A::normalize, "L2-normalise the vectors (true/false)"),
      flag("truncate", &A::truncate, "Cut over-long inputs (true) or fail naming the line (false)"),
      flag("dimensions", &A::dimensions, "Keep the first N dimensions").in(at_least(1)),
      flag("max-input-length", &A::max_input_length,
           "Tokens per serialised input, role markers included")
          .in(at_least(3, "one token and two role markers")),
      flag("batch-size", &A::batch_size, "Inputs per forward pass").in(at_least(1)),
      flag("max-batch-tokens", &A::max_batch_tokens,
           "Padded tokens (longest x inputs) per forward pass")
          .in(at_least(1)),
      flag("num-threads", &A::num_threads, "LibTorch threads (0 = default)")
          .allows("in [0, CPUs] (0 = the default)"),
      flag("device", &A::device, kDeviceHelp)
          .checked(&device_spec_problem, "auto, cpu, cuda, cuda:N"),
  };
  return table;
}

}  // namespace dialtree::cli
