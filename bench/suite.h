// The list of real data files that the conversion benchmark reads (under ../shared/data).
#pragma once

#include <array>

namespace dialtree::bench {

struct SuiteEntry {
  const char* format;  ///< `dialtree sts convert --format` name
  const char* input;   ///< path under the data folder
  const char* output;  ///< output file name
};

/// Every DialoGLUE split of the six tasks present, the SGD subset and the MLM text.
/// bench/reference/convert.py carries the same list.
inline constexpr std::array<SuiteEntry, 20> kConvertSuite = {{
    {"intent-csv", "dialoglue/banking/train.csv", "banking.train.jsonl"},
    {"intent-csv", "dialoglue/banking/val.csv", "banking.val.jsonl"},
    {"intent-csv", "dialoglue/banking/test.csv", "banking.test.jsonl"},
    {"intent-csv", "dialoglue/clinc/train.csv", "clinc.train.jsonl"},
    {"intent-csv", "dialoglue/clinc/val.csv", "clinc.val.jsonl"},
    {"intent-csv", "dialoglue/clinc/test.csv", "clinc.test.jsonl"},
    {"intent-csv", "dialoglue/hwu/train.csv", "hwu.train.jsonl"},
    {"intent-csv", "dialoglue/hwu/val.csv", "hwu.val.jsonl"},
    {"intent-csv", "dialoglue/hwu/test.csv", "hwu.test.jsonl"},
    {"slot-json", "dialoglue/restaurant8k/train.json", "restaurant8k.train.jsonl"},
    {"slot-json", "dialoglue/restaurant8k/val.json", "restaurant8k.val.jsonl"},
    {"slot-json", "dialoglue/restaurant8k/test.json", "restaurant8k.test.jsonl"},
    {"slot-json", "dialoglue/dstc8_sgd/train.json", "dstc8_sgd.train.jsonl"},
    {"slot-json", "dialoglue/dstc8_sgd/val.json", "dstc8_sgd.val.jsonl"},
    {"slot-json", "dialoglue/dstc8_sgd/test.json", "dstc8_sgd.test.jsonl"},
    {"top", "dialoglue/top/train.txt", "top.train.jsonl"},
    {"top", "dialoglue/top/eval.txt", "top.eval.jsonl"},
    {"top", "dialoglue/top/test.txt", "top.test.jsonl"},
    {"sgd", "pretrain/sgd_train_subset", "sgd.train.jsonl"},
    {"text", "dialoglue/mlm_all_no_multiwoz.txt", "mlm_all.jsonl"},
}};

}  // namespace dialtree::bench
