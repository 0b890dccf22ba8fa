#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "common/utf8.h"

namespace dialtree::eval {

namespace {

// Lengths must match and the set must not be empty (DialoGLUE divides by the gold count).
void check_sizes(std::size_t predicted, std::size_t gold, const char* metric) {
  if (predicted != gold) {
    throw std::invalid_argument(std::string(metric) + ": " + std::to_string(predicted) +
                                " predictions for " + std::to_string(gold) +
                                " gold examples; the counts must be equal");
  }
  if (gold == 0) throw std::invalid_argument(std::string(metric) + ": no examples to score");
}

// The slot type of a span "k:start-end": evaluate.py's `slot.split(":")[0]`, the part before the
// FIRST ':'. (For the spans DialoGLUE writes, k never holds a ':', so this is also the part before
// the last ':'.)
std::string span_type(const std::string& span) {
  return span.substr(0, span.find(':'));
}

// Spans of `spans` that contain `type` as a substring (DialoGLUE's `slot_type in p`).
SpanList keep_containing(const SpanList& spans, const std::string& type) {
  SpanList kept;
  for (const auto& s : spans) {
    if (s.find(type) != std::string::npos) kept.push_back(s);
  }
  return kept;
}

// ---- TripPy value normalisation -----------------------------------------------------------------

// Python's str.isspace() for the code points that can plausibly occur.
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// Python's Unicode `\w` (isalnum() or '_'), exact for ASCII and Latin-1, approximate beyond.
bool is_word_char(char32_t c) {
  if (c < 0x80) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  if (c <= 0xBF) {
    // U+0080..U+00BF: only ª ² ³ µ ¹ º ¼ ½ ¾ are alphanumeric.
    return c == 0xAA || c == 0xB2 || c == 0xB3 || c == 0xB5 || c == 0xB9 || c == 0xBA ||
           (c >= 0xBC && c <= 0xBE);
  }
  if (c == 0xD7 || c == 0xF7) return false;        // × ÷
  if (c >= 0x2000 && c <= 0x206F) return false;    // General Punctuation
  if (c >= 0x20A0 && c <= 0x20CF) return false;    // currency symbols
  if (c >= 0x2190 && c <= 0x23FF) return false;    // arrows, mathematical operators, technical
  if (c >= 0x25A0 && c <= 0x26FF) return false;    // shapes, miscellaneous symbols
  if (c >= 0x3000 && c <= 0x3003) return false;    // ideographic space and punctuation
  if (c >= 0x1F300 && c <= 0x1FAFF) return false;  // pictographs, emoji
  return true;
}

// One code point (or one invalid byte, as a non-word character) at s[i]; advances i.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  const std::size_t n = utf8::sequence_length(s, i);
  if (n == 0) {
    ++i;
    return 0xFFFD;  // not a word character, not a space
  }
  const std::u32string cp = utf8::decode(s.substr(i, n));
  i += n;
  return cp.empty() ? 0xFFFD : cp[0];
}

// Python str.strip(): removes leading and trailing whitespace code points.
std::string python_strip(std::string_view s) {
  std::size_t begin = s.size(), end = 0;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t at = i;
    if (!is_python_space(next_code_point(s, i))) {
      begin = std::min(begin, at);
      end = i;
    }
  }
  return begin >= end ? std::string() : std::string(s.substr(begin, end - begin));
}

// `re.split("(\W+)", text)`, each piece stripped, empty pieces dropped.
std::vector<std::string> trippy_pieces(std::string_view text) {
  std::vector<std::string> pieces;
  std::size_t run_start = 0;
  bool run_is_word = false;
  auto flush = [&](std::size_t end) {
    if (end > run_start) {
      std::string piece = python_strip(text.substr(run_start, end - run_start));
      if (!piece.empty()) pieces.push_back(std::move(piece));
    }
    run_start = end;
  };
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t at = i;
    const bool word = is_word_char(next_code_point(text, i));
    if (at == 0) {
      run_is_word = word;
    } else if (word != run_is_word) {
      flush(at);
      run_is_word = word;
    }
  }
  flush(text.size());
  return pieces;
}

// TripPy's is_in_list(tok, value): the word list of `value` occurs contiguously in that of `tok`
// (an empty `value` always does).
bool is_in_list(std::string_view tok, std::string_view value) {
  const auto t = trippy_pieces(tok), v = trippy_pieces(value);
  if (v.size() > t.size()) return false;
  for (std::size_t i = 0; i + v.size() <= t.size(); ++i) {
    if (std::equal(v.begin(), v.end(), t.begin() + static_cast<std::ptrdiff_t>(i))) return true;
  }
  return false;
}

// TripPy's check_slot_inform(value_label, inform_label, label_maps): the gold value when the
// informed value matches it (equal, one word list inside the other, or through a variant),
// otherwise the informed value.
std::string check_slot_inform(const std::string& value_label, const std::string& inform_label,
                              const LabelMaps& label_maps) {
  if (value_label == inform_label || is_in_list(inform_label, value_label) ||
      is_in_list(value_label, inform_label)) {
    return value_label;
  }
  if (auto it = label_maps.find(inform_label); it != label_maps.end()) {
    for (const auto& variant : it->second) {
      if (value_label == variant || is_in_list(variant, value_label) ||
          is_in_list(value_label, variant)) {
        return value_label;
      }
    }
  } else if (auto jt = label_maps.find(value_label); jt != label_maps.end()) {
    for (const auto& variant : jt->second) {
      if (variant == inform_label || is_in_list(inform_label, variant) ||
          is_in_list(variant, inform_label)) {
        return value_label;
      }
    }
  }
  return inform_label;
}

const std::string kNone = "none";

// Index of class `name` in `types`, or -1.
int class_index(const std::vector<std::string>& types, const char* name) {
  const auto it = std::find(types.begin(), types.end(), name);
  return it == types.end() ? -1 : static_cast<int>(it - types.begin());
}

std::string record_slot(std::size_t record, const std::string& slot) {
  return "record " + std::to_string(record) + ": slot '" + slot + "'";
}

}  // namespace

MeanStd mean_std(const std::vector<double>& v) {
  if (v.empty()) throw std::invalid_argument("mean_std: no values");
  MeanStd r;
  for (double x : v) r.mean += x;
  r.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - r.mean) * (x - r.mean);
    r.std = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return r;
}

double intent_accuracy(const std::vector<std::string>& predicted,
                       const std::vector<std::string>& gold) {
  check_sizes(predicted.size(), gold.size(), "intent accuracy");
  std::size_t correct = 0;
  for (std::size_t i = 0; i < gold.size(); ++i) correct += predicted[i] == gold[i];
  return static_cast<double>(correct) / static_cast<double>(gold.size());
}

SlotF1 slot_f1_details(const std::vector<SpanList>& predicted, const std::vector<SpanList>& gold) {
  check_sizes(predicted.size(), gold.size(), "slot F1");
  std::set<std::string> types;
  for (const auto& row : gold) {
    for (const auto& span : row) types.insert(span_type(span));
  }
  SlotF1 out;
  double sum = 0;
  for (const auto& type : types) {
    SlotTypeScore s{type, 0, 0, 0, 0, 0, 0};
    for (std::size_t i = 0; i < gold.size(); ++i) {
      const SpanList p = keep_containing(predicted[i], type);
      const SpanList g = keep_containing(gold[i], type);
      s.predicted += !p.empty();
      s.to_recall += !g.empty();
      s.true_positives += !p.empty() && p == g;
    }
    const double tp = static_cast<double>(s.true_positives);
    s.precision = tp / (1e-5 + static_cast<double>(s.predicted));
    s.recall = tp / (1e-5 + static_cast<double>(s.to_recall));
    s.f1 = 2 * s.precision * s.recall / (1e-5 + s.precision + s.recall);
    sum += s.f1;
    out.types.push_back(std::move(s));
  }
  out.score = types.empty() ? 0.0 : sum / static_cast<double>(types.size());
  return out;
}

double slot_f1(const std::vector<SpanList>& predicted, const std::vector<SpanList>& gold) {
  return slot_f1_details(predicted, gold).score;
}

double top_exact_match(const std::vector<TopParse>& predicted, const std::vector<TopParse>& gold) {
  check_sizes(predicted.size(), gold.size(), "TOP exact match");
  std::size_t correct = 0;
  for (std::size_t i = 0; i < gold.size(); ++i) correct += predicted[i] == gold[i];
  return static_cast<double>(correct) / static_cast<double>(gold.size());
}

std::string trippy_normalize_value(std::string_view value) {
  static const std::string kG = "\xC4\xA0";  // U+0120
  std::string text(value);
  if (text.find(kG) != std::string::npos) {
    std::string t;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == ' ') continue;
      if (text.compare(i, kG.size(), kG) == 0) {
        t += ' ';
        ++i;
        continue;
      }
      t += text[i];
    }
    text = python_strip(t);
  }
  std::string out;
  for (const auto& piece : trippy_pieces(text)) {
    if (!out.empty()) out += ' ';
    out += piece;
  }
  return out;
}

LabelMaps normalize_label_maps(const std::map<std::string, std::vector<std::string>>& raw) {
  LabelMaps out;
  for (const auto& [key, variants] : raw) {
    std::vector<std::string> norm;
    norm.reserve(variants.size());
    for (const auto& v : variants) norm.push_back(trippy_normalize_value(v));
    out[trippy_normalize_value(key)] = std::move(norm);
  }
  return out;
}

bool dst_value_correct(std::string_view predicted, std::string_view gold,
                       const LabelMaps& label_maps) {
  const std::string p = trippy_normalize_value(predicted), g = trippy_normalize_value(gold);
  if (p == g) return true;
  if (g == "none" || g == "dontcare" || g == "true" || g == "false") return false;
  const auto it = label_maps.find(g);
  if (it == label_maps.end()) return false;
  return std::find(it->second.begin(), it->second.end(), p) != it->second.end();
}

double joint_goal_accuracy(const std::vector<BeliefState>& predicted,
                           const std::vector<BeliefState>& gold, const LabelMaps& label_maps) {
  check_sizes(predicted.size(), gold.size(), "joint goal accuracy");
  const auto value = [](const BeliefState& s, const std::string& slot) -> const std::string& {
    const auto it = s.find(slot);
    return it == s.end() ? kNone : it->second;
  };
  std::size_t correct = 0;
  for (std::size_t t = 0; t < gold.size(); ++t) {
    bool turn_ok = true;
    for (const auto* state : {&gold[t], &predicted[t]}) {
      for (const auto& kv : *state) {
        if (!dst_value_correct(value(predicted[t], kv.first), value(gold[t], kv.first),
                               label_maps)) {
          turn_ok = false;
          break;
        }
      }
      if (!turn_ok) break;
    }
    correct += turn_ok;
  }
  return static_cast<double>(correct) / static_cast<double>(gold.size());
}

DstStates trippy_dst_states(const std::vector<TripPyTurn>& records, const TripPyConfig& config) {
  if (records.empty()) throw std::invalid_argument("TripPy predictions: no records to score");
  const auto& types = config.class_types;
  const int c_none = class_index(types, "none"), c_dontcare = class_index(types, "dontcare"),
            c_copy = class_index(types, "copy_value"), c_true = class_index(types, "true"),
            c_false = class_index(types, "false"), c_refer = class_index(types, "refer"),
            c_inform = class_index(types, "inform");
  if (c_none < 0 || c_dontcare < 0 || c_copy < 0) {
    throw std::invalid_argument(
        "TripPy dataset config: class_types must contain \"none\", \"dontcare\" and "
        "\"copy_value\"");
  }
  static const std::string kMark = "\xC2\xA7\xC2\xA7";  // "§§"
  DstStates out;
  out.predicted.resize(records.size());
  out.gold.resize(records.size());
  BeliefState state;  // running predicted state, per slot
  for (std::size_t r = 0; r < records.size(); ++r) {
    const TripPyTurn& rec = records[r];
    const bool first_turn = !rec.guid.empty() && rec.guid.back() == "0";
    if (r == 0 && !first_turn) {
      throw std::invalid_argument(
          "record 0: field 'guid': the first record "
          "must be turn \"0\" of a dialogue (its last guid element)");
    }
    for (const auto& slot : config.slots) {
      const auto it = rec.slots.find(slot);
      if (it == rec.slots.end()) {
        throw std::invalid_argument(record_slot(r, slot) +
                                    ": missing from the record (the dataset config lists it)");
      }
      const TripPySlotPrediction& sp = it->second;
      const std::string gt = trippy_normalize_value(sp.slot_groundtruth);
      const std::string pd = trippy_normalize_value(sp.slot_prediction);
      std::string& joint = state[slot];
      if (first_turn) joint = kNone;
      const int c = sp.class_prediction;
      // "§§ v" / "§§v" -> v through check_slot_inform, unless v is "none" (state kept).
      auto take_marked = [&](std::size_t skip) {
        const std::string v = pd.substr(skip);
        if (v != kNone) joint = check_slot_inform(gt, v, config.label_maps);
      };
      const bool marked_space = pd.compare(0, kMark.size() + 1, kMark + " ") == 0;
      const bool marked = pd.compare(0, kMark.size(), kMark) == 0;
      if (c == c_none) {
      } else if (c == c_dontcare) {
        joint = "dontcare";
      } else if (c == c_copy) {
        joint = pd;
      } else if (c_true >= 0 && c == c_true) {
        joint = "true";
      } else if (c_false >= 0 && c == c_false) {
        joint = "false";
      } else if (c_refer >= 0 && c == c_refer) {
        if (marked_space) {
          take_marked(kMark.size() + 1);
        } else if (marked) {
          take_marked(kMark.size());
        } else if (pd != kNone) {
          joint = pd;
        }
      } else if (c_inform >= 0 && c == c_inform) {
        if (marked_space) {
          take_marked(kMark.size() + 1);
        } else if (marked) {
          take_marked(kMark.size());
        } else {
          throw std::invalid_argument(record_slot(r, slot) +
                                      ": class \"inform\" needs a slot_prediction starting with "
                                      "\"§§\", got '" +
                                      sp.slot_prediction + "'");
        }
      } else {
        throw std::invalid_argument(
            record_slot(r, slot) + ": class_prediction " + std::to_string(c) +
            " is not a known class index (class_types has " + std::to_string(types.size()) + ")");
      }
      out.predicted[r][slot] = joint;
      out.gold[r][slot] = gt;
    }
  }
  return out;
}

double trippy_joint_goal_accuracy(const std::vector<TripPyTurn>& records,
                                  const TripPyConfig& config) {
  const DstStates s = trippy_dst_states(records, config);
  return joint_goal_accuracy(s.predicted, s.gold, config.label_maps);
}

}  // namespace dialtree::eval
