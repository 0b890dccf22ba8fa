#include "data/serialize.h"

#include <algorithm>
#include <stdexcept>

namespace dialtree::data {

std::int32_t role_id(const std::string& role) {
  if (role == "user") return 1;
  if (role == "system") return 0;
  throw std::invalid_argument("role must be \"user\" or \"system\", got \"" + role + "\"");
}

namespace {

void check_options(const SerializeOptions& o) {
  if (o.max_len == 0 || o.max_ctx_turn == 0 || o.max_utt_len == 0) {
    throw std::invalid_argument("SerializeOptions: max_len (" + std::to_string(o.max_len) +
                                "), max_ctx_turn (" + std::to_string(o.max_ctx_turn) +
                                ") and max_utt_len (" + std::to_string(o.max_utt_len) +
                                ") must all be >= 1");
  }
}

/// SPACE-2's `role in trigger_role` (a substring test).
bool is_trigger(const std::string& role, const std::string& trigger_role) {
  return !role.empty() && trigger_role.find(role) != std::string::npos;
}

}  // namespace

SerializedExample serialize_context(const std::vector<Utterance>& history,
                                    const SpecialTokens& special, const SerializeOptions& options) {
  check_options(options);
  if (history.empty()) throw std::invalid_argument("serialize_context: empty history");

  // Step 1: the last max_ctx_turn utterances, the current one included.
  const std::size_t n = history.size();
  const std::size_t first = n > options.max_ctx_turn ? n - options.max_ctx_turn : 0;
  const std::size_t count = n - first;  // J
  const std::int32_t current_role = role_id(history.back().role);

  SerializedExample ex;
  for (std::size_t j = 0; j < count; ++j) {
    const Utterance& u = history[first + j];
    const std::int32_t actual_role = role_id(u.role);
    // Step 2: keep the last max_utt_len ids.
    const std::size_t keep = std::min(u.ids.size(), options.max_utt_len);
    // Step 3: markers by the actual role.
    const bool is_user = actual_role == 1;
    const std::int32_t open = is_user ? special.sos_u : special.sos_r;
    const std::int32_t close = is_user ? special.eos_u : special.eos_r;
    // Step 5: turn id J-j; role id by parity of the distance from the current utterance.
    const auto turn = static_cast<std::int32_t>(count - j);
    const std::size_t distance = count - 1 - j;
    const std::int32_t role = distance % 2 == 0 ? current_role : 1 - current_role;

    std::int32_t pos = 0;
    auto push = [&](std::int32_t id) {
      ex.input_ids.push_back(id);
      ex.position_ids.push_back(pos++);
      ex.role_ids.push_back(role);
      ex.turn_ids.push_back(turn);
    };
    // Step 4: oldest -> newest.
    push(open);
    for (auto it = u.ids.end() - static_cast<std::ptrdiff_t>(keep); it != u.ids.end(); ++it) {
      push(*it);
    }
    push(close);
  }

  // Step 6: keep the last max_len entries of all four arrays.
  if (ex.input_ids.size() > options.max_len) {
    const auto cut = static_cast<std::ptrdiff_t>(ex.input_ids.size() - options.max_len);
    for (auto* v : {&ex.input_ids, &ex.position_ids, &ex.role_ids, &ex.turn_ids}) {
      v->erase(v->begin(), v->begin() + cut);
    }
  }
  return ex;
}

std::vector<SerializedExample> serialize_dialog(const std::string& dialog_id,
                                                const std::vector<Utterance>& turns,
                                                const SpecialTokens& special,
                                                const SerializeOptions& options) {
  check_options(options);
  std::vector<SerializedExample> out;
  std::vector<Utterance> history;
  history.reserve(turns.size());
  for (std::size_t i = 0; i < turns.size(); ++i) {
    try {
      role_id(turns[i].role);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("dialog '" + dialog_id + "' turn " + std::to_string(i) + ": " +
                                  e.what());
    }
    history.push_back(turns[i]);
    if (!is_trigger(turns[i].role, options.trigger_role)) continue;
    SerializedExample ex = serialize_context(history, special, options);
    ex.dialog_id = dialog_id;
    ex.turn_index = i;
    out.push_back(std::move(ex));
  }
  return out;
}

std::vector<SerializedExample> serialize_dialog(const sts::Dialog& dialog,
                                                const Tokenizer& tokenizer,
                                                const SerializeOptions& options) {
  std::vector<Utterance> turns;
  turns.reserve(dialog.turns.size());
  for (const sts::Turn& t : dialog.turns) turns.push_back({t.role, tokenizer.encode(t.text)});
  return serialize_dialog(dialog.id, turns, tokenizer.special(), options);
}

}  // namespace dialtree::data
