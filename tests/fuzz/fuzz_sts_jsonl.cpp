// libFuzzer target: the sts/1 JSON-lines reader (sts/format.h, docs/sts-format.md); every dialog
// read is written back, which must not throw.
#include <sstream>

#include "sts/format.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dialtree;
  static const fuzz::InputFile file("dialogs.jsonl");
  const std::string& path = file.write(fuzz::as_text(data, size));
  std::vector<sts::Dialog> dialogs;
  fuzz::allow_data_errors([&] { dialogs = sts::read_jsonl(path); });
  std::ostringstream out;
  sts::write_jsonl(out, dialogs);
  return 0;
}
