// libFuzzer target: the HTTP request bodies of `dialtree serve` (serve/api.h): parse_body, then
// every route's request parser; an ApiError is the documented outcome, and its error body must
// be valid JSON.
#include <nlohmann/json.hpp>

#include "serve/api.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

template <typename Fn>
void allow_api_errors(Fn&& fn) {
  try {
    fn();
  } catch (const dialtree::serve::ApiError& e) {
    (void)nlohmann::json::parse(dialtree::serve::error_body(e));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dialtree::serve;
  nlohmann::json body;
  bool parsed = false;
  allow_api_errors([&] {
    body = parse_body(dialtree::fuzz::as_text(data, size));
    parsed = true;
  });
  if (!parsed) return 0;
  allow_api_errors([&] { parse_openai_embeddings(body); });
  allow_api_errors([&] { parse_tei_embed(body); });
  allow_api_errors([&] { parse_classify(body); });
  allow_api_errors([&] { parse_tokenize(body); });
  return 0;
}
