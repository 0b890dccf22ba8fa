#include "data/tokenizer.h"

#include <initializer_list>
#include <string>

#include "common/error.h"

namespace dialtree::data {

bool is_special_id(const SpecialTokens& s, std::int32_t id) {
  for (const std::int32_t k : {s.pad, s.unk, s.cls, s.sep, s.mask, s.sos_u, s.eos_u, s.sos_r, s.eos_r}) {
    if (id == k) return true;
  }
  return false;
}

std::vector<std::string> Tokenizer::decode_batch(
    const std::vector<std::vector<std::int32_t>>& rows) const {
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    try {
      out.push_back(decode(rows[r]));
    } catch (const TokenizerError& e) {
      // Same rejection as the single-row path, plus the row index (docs/failure-cases.md C14).
      throw TokenizerError("decode_batch: row " + std::to_string(r) + ": " + e.what());
    }
  }
  return out;
}

}  // namespace dialtree::data
