// libFuzzer target: the Schema-Guided Dialogue file reader (readers/sgd.h).
#include "readers/sgd.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dialtree;
  static const fuzz::InputFile file("dialogues_001.json");
  const std::string& path = file.write(fuzz::as_text(data, size));
  readers::SgdLoadReport report;
  fuzz::allow_data_errors([&] { readers::read_sgd_file(path, &report); });
  return 0;
}
