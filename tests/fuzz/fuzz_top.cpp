// libFuzzer target: the DialoGLUE TOP bracket-free format and one-entry-per-line vocabularies
// (readers/top.h).
#include "readers/top.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dialtree;
  static const fuzz::InputFile file("train.txt");
  const std::string& path = file.write(fuzz::as_text(data, size));
  fuzz::allow_data_errors([&] {
    const auto examples = readers::read_top(path);
    readers::top_intent_vocab(examples);
    readers::top_tag_vocab(examples);
  });
  fuzz::allow_data_errors([&] { readers::read_vocab_lines(path); });
  return 0;
}
