// libFuzzer target: the DialoGLUE intent CSV reader (readers/intent_csv.h), both with a fixed
// label set and with the file's own labels.
#include "readers/intent_csv.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dialtree;
  static const fuzz::InputFile file("train.csv");
  static const readers::LabelMap labels({"balance", "transfer", "oos"}, "categories.json");
  const std::string& path = file.write(fuzz::as_text(data, size));
  fuzz::allow_data_errors([&] { readers::read_intent_csv(path, labels); });
  readers::IntentCsvOptions unknown_as_oos;
  unknown_as_oos.unknown_label_as = "oos";
  fuzz::allow_data_errors([&] { readers::read_intent_csv(path, labels, unknown_as_oos); });
  readers::IntentCsvOptions own_labels;
  own_labels.labels_from_file = true;
  fuzz::allow_data_errors([&] { readers::read_intent_csv(path, labels, own_labels); });
  return 0;
}
