// SPACE-2 dialog serialisation (docs/method.md §1.5): one example per trigger-role turn, made of
// the recent history wrapped in role markers, with parallel position / role / turn id arrays.
// Torch-free: padding, the attention mask and the prepended [CLS] come later (collation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "sts/format.h"

namespace dialtree::data {

/// Serialisation limits (docs/method.md §1.5 defaults). All counts must be >= 1.
struct SerializeOptions {
  std::size_t max_len = 256;      ///< final sequence length cap (left truncation)
  std::size_t max_ctx_turn = 16;  ///< utterances kept, the current one included
  std::size_t max_utt_len = 50;   ///< sub-word ids kept per utterance (its last ones)
  /// An example is made for every turn whose role is a substring of trigger_role (SPACE-2's
  /// Python `role in trigger_role`; so "user_system" selects both roles).
  std::string trigger_role = "user";
};

/// One pre-tokenised utterance: role "user" or "system" and its sub-word ids (no markers).
struct Utterance {
  std::string role;
  std::vector<std::int32_t> ids;
};

/// One serialised example. The four arrays have the same length L <= max_len.
struct SerializedExample {
  std::vector<std::int32_t> input_ids;     ///< marker-wrapped utterances, oldest -> newest
  std::vector<std::int32_t> position_ids;  ///< 0.. inside each wrapped utterance
  std::vector<std::int32_t> role_ids;      ///< by parity from the end; current speaker's id
                                           ///< (user=1, system=0) at even distances
  std::vector<std::int32_t> turn_ids;      ///< J-j for utterance j of J (current = 1)
  std::string dialog_id;                   ///< sts::Dialog::id (or the id passed in)
  std::size_t turn_index = 0;              ///< 0-based index of the current turn in the dialog
};

/// Role id of SPACE-2's role embedding: user = 1, system = 0.
/// @throws std::invalid_argument for any other role.
std::int32_t role_id(const std::string& role);

/// Serialises the example whose current turn is `history.back()` from `history` (all turns up
/// to and including the current one, oldest first), steps 1-6 of docs/method.md §1.5. The trigger
/// role is not consulted here. dialog_id/turn_index of the result are left empty/0.
/// @throws std::invalid_argument if `history` is empty, a role is neither "user" nor "system",
///   or a limit in `options` is 0.
SerializedExample serialize_context(const std::vector<Utterance>& history,
                                    const SpecialTokens& special,
                                    const SerializeOptions& options = {});

/// All examples of one dialog: one per turn whose role matches options.trigger_role, in turn
/// order, each seeing the dialog up to that turn (docs/method.md §1.5).
/// @throws std::invalid_argument as serialize_context().
std::vector<SerializedExample> serialize_dialog(const std::string& dialog_id,
                                                const std::vector<Utterance>& turns,
                                                const SpecialTokens& special,
                                                const SerializeOptions& options = {});

/// serialize_dialog() over an sts::Dialog, each turn's text encoded with `tokenizer` and
/// wrapped with `tokenizer.special()` markers.
/// @throws TokenizerError (from encode) or std::invalid_argument as serialize_context().
std::vector<SerializedExample> serialize_dialog(const sts::Dialog& dialog,
                                                const Tokenizer& tokenizer,
                                                const SerializeOptions& options = {});

}  // namespace dialtree::data
