// DialoGLUE's bert-base-uncased WordPiece tokenizer, loaded once for the data tests.
#pragma once

#include "data/wordpiece.h"
#include "test_data.h"

namespace dialtree::testing {

/// The WordPiece tokenizer of DialoGLUE's bert-base-uncased vocabulary (lower-casing).
inline const data::WordPieceTokenizer& bert() {
  static const auto* tok = new data::WordPieceTokenizer(bert_vocab());
  return *tok;
}

}  // namespace dialtree::testing
