// libFuzzer target: the DialoGLUE slot JSON readers (readers/slot_json.h: examples, vocab.txt,
// and the BIO vocabulary built from them) and categories.json (readers/intent_csv.h), all JSON.
#include "readers/intent_csv.h"
#include "readers/slot_json.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dialtree;
  static const fuzz::InputFile file("train.json");
  const std::string& path = file.write(fuzz::as_text(data, size));
  fuzz::allow_data_errors([&] { readers::build_slot_vocab(readers::read_slot_json(path)); });
  fuzz::allow_data_errors([&] { readers::read_slot_vocab(path); });
  fuzz::allow_data_errors([&] { readers::LabelMap::from_categories_json(path); });
  return 0;
}
