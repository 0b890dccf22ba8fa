#include "data/masking.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "common/utf8.h"

namespace dialtree::data {

namespace {

/// Uniform double in [0, 1) from the top 53 bits of one draw.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

/// Uniform integer in [0, n), n >= 1, without modulo bias (rejects the lowest 2^64 mod n draws).
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
  for (;;) {
    const std::uint64_t x = rng();
    if (x >= threshold) return x % n;
  }
}

bool is_probability(double p) {
  return std::isfinite(p) && p >= 0.0 && p <= 1.0;
}

void check_options(const MlmMaskingOptions& o) {
  if (!is_probability(o.mask_prob) || !is_probability(o.mask_token) ||
      !is_probability(o.random_token) || o.mask_token + o.random_token > 1.0) {
    throw std::invalid_argument("MlmMaskingOptions: mask_prob (" + std::to_string(o.mask_prob) +
                                "), mask_token (" + std::to_string(o.mask_token) +
                                ") and random_token (" + std::to_string(o.random_token) +
                                ") must be in [0, 1] with mask_token + random_token <= 1");
  }
}

std::size_t common_prefix(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

/// Python's \w, approximately: ASCII letters, digits and '_', and every non-ASCII code point.
bool is_word_char(char32_t c) {
  if (c >= 0x80) return true;
  return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z') || (c >= U'0' && c <= U'9') ||
         c == U'_';
}

std::u32string ascii_lower(std::u32string s) {
  for (char32_t& c : s) {
    if (c >= U'A' && c <= U'Z') c = c - U'A' + U'a';
  }
  return s;
}

}  // namespace

MaskedTokens mask_for_mlm(const SerializedExample& example,
                          const std::vector<std::uint8_t>& span_flags, const SpecialTokens& special,
                          std::int32_t vocab_size, std::mt19937_64& rng,
                          const MlmMaskingOptions& options) {
  check_options(options);
  const std::size_t n = example.input_ids.size();
  if (example.position_ids.size() != n) {
    throw std::invalid_argument("mask_for_mlm: position_ids has " +
                                std::to_string(example.position_ids.size()) +
                                " entries, input_ids " + std::to_string(n));
  }
  if (!span_flags.empty() && span_flags.size() != n) {
    throw std::invalid_argument("mask_for_mlm: span_flags has " +
                                std::to_string(span_flags.size()) + " entries, input_ids " +
                                std::to_string(n));
  }
  if (vocab_size < 2) {
    throw std::invalid_argument("mask_for_mlm: vocab_size must be >= 2, got " +
                                std::to_string(vocab_size));
  }
  const std::vector<std::uint8_t>* continues = options.continues_word.get();
  if (continues && continues->size() != static_cast<std::size_t>(vocab_size)) {
    throw std::invalid_argument("mask_for_mlm: continues_word has " +
                                std::to_string(continues->size()) + " entries, vocab_size is " +
                                std::to_string(vocab_size));
  }
  const auto never_target = [&](std::int32_t id) {
    return id == special.sos_u || id == special.eos_u || id == special.sos_r ||
           id == special.eos_r || id == special.pad;
  };
  const auto flagged = [&](std::size_t k) {
    return !span_flags.empty() && span_flags[k] != 0 && !never_target(example.input_ids[k]);
  };

  MaskedTokens out{example.input_ids, std::vector<std::int32_t>(n, kMlmIgnoreLabel)};
  const double keep_limit = options.mask_token + options.random_token;
  std::size_t begin = 0;
  while (begin < n) {
    std::size_t end = begin + 1;
    while (end < n && example.position_ids[end] != 0) ++end;

    bool has_span = false;
    for (std::size_t k = begin; k < end && !has_span; ++k) has_span = flagged(k);

    bool word_chosen = false;  // whole-word: the draw of the word the last sub-word began
    bool in_word = false;      // whole-word: the previous position was an eligible sub-word
    for (std::size_t k = begin; k < end; ++k) {
      const std::int32_t id = example.input_ids[k];
      if (has_span) {
        if (!flagged(k)) continue;
        out.labels[k] = id;
        out.input_ids[k] = special.mask;
        continue;
      }
      if (never_target(id)) {
        in_word = false;
        continue;
      }
      if (continues) {
        // Ids outside [0, vocab_size) begin a word (the model rejects them later).
        const bool continuation = in_word && id >= 0 && id < vocab_size &&
                                  (*continues)[static_cast<std::size_t>(id)] != 0;
        if (!continuation) word_chosen = uniform01(rng) < options.mask_prob;
        in_word = true;
        if (!word_chosen) continue;
      } else if (uniform01(rng) >= options.mask_prob) {
        continue;
      }
      out.labels[k] = id;
      const double u = uniform01(rng);
      if (u < options.mask_token) {
        out.input_ids[k] = special.mask;
      } else if (u < keep_limit) {
        const auto range = static_cast<std::uint64_t>(vocab_size - 1);
        out.input_ids[k] = static_cast<std::int32_t>(1 + uniform_below(rng, range));
      }  // else: unchanged
    }
    begin = end;
  }
  return out;
}

std::vector<std::uint8_t> word_continuation_flags(const Tokenizer& tokenizer) {
  const std::int32_t n = tokenizer.vocab_size();
  std::vector<std::uint8_t> out(static_cast<std::size_t>(std::max(n, 0)), 0);
  const bool wordpiece = tokenizer.type() == "wordpiece";
  const std::string_view word_start = "\xE2\x96\x81";  // U+2581, SentencePiece's word start
  for (std::int32_t id = 0; id < n; ++id) {
    if (is_special_id(tokenizer.special(), id)) continue;
    const std::string piece = tokenizer.id_to_token(id);
    bool continuation = false;
    if (wordpiece) {
      continuation = piece.size() > 2 && piece.compare(0, 2, "##") == 0;
    } else if (!piece.empty() && piece.compare(0, word_start.size(), word_start) != 0 &&
               !(piece.size() == 6 && piece.compare(0, 3, "<0x") == 0)) {  // byte piece <0xNN>
      continuation = is_word_char(utf8::decode(piece).front());
    }
    out[static_cast<std::size_t>(id)] = continuation ? 1 : 0;
  }
  return out;
}

std::vector<std::uint8_t> value_span_flags(const Tokenizer& tokenizer, std::string_view text,
                                           const std::vector<CharSpan>& spans) {
  const std::vector<std::int32_t> full = tokenizer.encode(text);  // throws on invalid UTF-8
  std::vector<std::uint8_t> flags(full.size(), 0);
  const std::vector<std::size_t> offsets = utf8::codepoint_offsets(text);
  const std::size_t length = offsets.size() - 1;
  for (const auto& [s, e] : spans) {
    if (s > e || e > length) {
      throw std::out_of_range("value_span_flags: span [" + std::to_string(s) + ", " +
                              std::to_string(e) + ") outside a text of " + std::to_string(length) +
                              " code points");
    }
    if (s == e) continue;
    // First token: the first full-text token not reproduced by encoding text[0, s). If the
    // prefix is reproduced entirely, that token starts at s; otherwise it straddles s.
    std::size_t first = 0;
    if (s > 0) first = common_prefix(tokenizer.encode(text.substr(0, offsets[s])), full);
    // One past the last token: likewise for text[0, e), plus the straddling token if any.
    std::size_t last = full.size();
    if (e < length) {
      const std::vector<std::int32_t> prefix = tokenizer.encode(text.substr(0, offsets[e]));
      const std::size_t common = common_prefix(prefix, full);
      last = common == prefix.size() ? common : std::min(common + 1, full.size());
    }
    for (std::size_t k = first; k < last; ++k) flags[k] = 1;
  }
  return flags;
}

std::vector<std::pair<std::string, std::vector<CharSpan>>> label_mention_spans_by_slot(
    std::string_view text, const sts::Tree& label) {
  const std::u32string original = utf8::decode(text);
  const std::u32string lowered = ascii_lower(original);
  const std::size_t n = lowered.size();
  const auto boundary = [&](std::size_t i) {  // may a mention start or end at i?
    return i == 0 || i == n || !(is_word_char(lowered[i - 1]) && is_word_char(lowered[i]));
  };

  std::map<std::string, std::vector<CharSpan>> by_slot;
  for (const auto& [domain, intents] : label.domains) {
    for (const auto& [intent, slots] : intents) {
      for (const auto& [slot, values] : slots) {
        std::vector<CharSpan>& out = by_slot[slot];
        for (const sts::Value& v : values) {
          std::u32string mention;
          if (v.span) {
            const auto [s, e] = *v.span;
            if (s > e || e > n) {
              throw std::out_of_range("label_mention_spans: span [" + std::to_string(s) + ", " +
                                      std::to_string(e) + ") of value '" + v.value +
                                      "' outside a text of " + std::to_string(n) + " code points");
            }
            if (s == e) continue;
            out.emplace_back(s, e);
            mention = lowered.substr(s, e - s);
          } else {
            if (!utf8::is_valid(v.value)) continue;
            mention = ascii_lower(utf8::decode(v.value));
          }
          if (mention.empty()) continue;
          for (std::size_t pos = lowered.find(mention); pos != std::u32string::npos;
               pos = lowered.find(mention, pos + 1)) {
            if (boundary(pos) && boundary(pos + mention.size())) {
              out.emplace_back(pos, pos + mention.size());
            }
          }
        }
      }
    }
  }
  std::vector<std::pair<std::string, std::vector<CharSpan>>> result;
  for (auto& [slot, spans] : by_slot) {
    std::sort(spans.begin(), spans.end());
    spans.erase(std::unique(spans.begin(), spans.end()), spans.end());
    if (!spans.empty()) result.emplace_back(slot, std::move(spans));
  }
  return result;
}

std::vector<CharSpan> label_mention_spans(std::string_view text, const sts::Tree& label) {
  std::vector<CharSpan> out;
  for (auto& [slot, spans] : label_mention_spans_by_slot(text, label)) {
    out.insert(out.end(), spans.begin(), spans.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {
// Mirrors serialize_context() for per-token values: same utterances, same truncations, `marker`
// at the two role markers of each utterance (docs/method.md §1.5 steps 1-6).
template <typename T>
std::vector<T> align_context(const std::vector<std::vector<T>>& per_utterance,
                             const SerializeOptions& options, T marker, const char* fn) {
  if (options.max_len == 0 || options.max_ctx_turn == 0 || options.max_utt_len == 0) {
    throw std::invalid_argument(std::string(fn) +
                                ": max_len, max_ctx_turn and max_utt_len must all be >= 1");
  }
  if (per_utterance.empty()) throw std::invalid_argument(std::string(fn) + ": no utterance");
  const std::size_t count = per_utterance.size();
  const std::size_t first = count > options.max_ctx_turn ? count - options.max_ctx_turn : 0;
  std::vector<T> out;
  for (std::size_t j = first; j < count; ++j) {
    const std::vector<T>& f = per_utterance[j];
    const std::size_t keep = std::min(f.size(), options.max_utt_len);
    out.push_back(marker);
    out.insert(out.end(), f.end() - static_cast<std::ptrdiff_t>(keep), f.end());
    out.push_back(marker);
  }
  if (out.size() > options.max_len) {
    out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(out.size() - options.max_len));
  }
  return out;
}
}  // namespace

std::vector<std::uint8_t> context_span_flags(
    const std::vector<std::vector<std::uint8_t>>& utterance_flags,
    const SerializeOptions& options) {
  return align_context<std::uint8_t>(utterance_flags, options, 0, "context_span_flags");
}

std::vector<std::int32_t> context_token_labels(
    const std::vector<std::vector<std::int32_t>>& utterance_labels, const SerializeOptions& options,
    std::int32_t marker_label) {
  return align_context<std::int32_t>(utterance_labels, options, marker_label,
                                     "context_token_labels");
}

}  // namespace dialtree::data
