// libFuzzer target: the safetensors header checks (model/safetensors_header.h). The input is a
// whole file: 8-byte length, JSON header, data section.
#include "model/safetensors_header.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dialtree;
  const std::string_view file = fuzz::as_text(data, size);
  fuzz::allow_data_errors([&] {
    const std::uint64_t n = model::parse_safetensors_header_length(file, size, "fuzz.safetensors");
    const model::SafetensorsHeader header =
        model::parse_safetensors_header(file.substr(8, n), size - 8 - n, "fuzz.safetensors");
    // What load_safetensors relies on: the entries tile the data section in order.
    std::uint64_t covered = 0;
    for (const auto& e : header.entries) {
      if (e.begin != covered || e.end < e.begin || model::safetensors_element_size(e.dtype) == 0) {
        std::abort();
      }
      covered = e.end;
    }
    if (covered != size - 8 - n) std::abort();
  });
  return 0;
}
