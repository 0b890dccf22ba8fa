// Pretraining examples: sts/1 (or plain text) files -> serialised user-turn examples grouped
// by source dataset, with the label view sets the soft targets need (docs/method.md §1.5, §3).
// Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/serialize.h"
#include "data/tokenizer.h"
#include "sts/score.h"
#include "trainer/batching.h"
#include "trainer/config.h"

namespace dialtree::trainer {

/// One example: the serialised context of one trigger-role turn.
struct PretrainExample {
  data::SerializedExample tokens;
  /// Labelled streams: the view sets of the current turn's label (an unlabelled turn inside a
  /// labelled file counts as the empty tree, which scores 0 against every other tree,
  /// docs/method.md §8.15). Unlabelled streams: left empty.
  sts::ViewSets views;
  /// Labelled streams: 1 per token of `tokens` that belongs to a labelled value mention of its
  /// utterance (docs/method.md §4.2 span masking); empty when the context has no value mention.
  std::vector<std::uint8_t> span_flags;
  /// Labelled streams loaded with `slot_ids` only: per token of `tokens`, the id of the slot
  /// whose value mention covers it (ids by first appearance over the loaded files, one id per
  /// slot name as in the S view; the first slot in byte order where mentions overlap), or
  /// kNoSlot; empty when the context has no value mention (docs/training.md "A token-level tree
  /// term").
  std::vector<std::int32_t> span_slots;
};

/// PretrainExample::span_slots of a token outside every value mention (and of role markers).
inline constexpr std::int32_t kNoSlot = -1;

/// All examples of one source dataset (the `source` field of sts/1 records).
struct PretrainDataset {
  std::string name;
  std::vector<PretrainExample> examples;
};

/// What load_pretrain_data() left out: turns with empty text, and dialogs left with no turn.
struct PretrainDataSkips {
  std::size_t turns = 0, dialogs = 0;
};

/// Loads `files` (sts/1 JSONL, or plain text with one utterance per line when the name ends in
/// ".txt"), serialises every trigger-role turn with `tokenizer` and groups the examples by
/// source dataset, in byte order of the dataset names. Turns with empty text are skipped
/// (SPACE-2 filters utterances with no sub-words), and so are dialogs with no turn left; both
/// are counted into `skipped` when given, for the caller to report (docs/failure-cases.md B13).
/// `labelled` selects whether view sets and value-span flags are computed; `slot_ids` (labelled
/// only) whether span_slots are too.
/// @throws DataError naming the file and line of a malformed record; TokenizerError.
std::vector<PretrainDataset> load_pretrain_data(const std::vector<std::string>& files,
                                                bool labelled, const data::Tokenizer& tokenizer,
                                                const data::SerializeOptions& options,
                                                PretrainDataSkips* skipped = nullptr,
                                                bool slot_ids = false);

/// How a run serialises its examples: the `data:` section's max_len, max_utt_len, max_ctx_turn
/// and trigger_role (docs/method.md §1.5).
data::SerializeOptions serialize_options(const DataConfig& d);

/// Example counts of `datasets`, for BatchStream.
std::vector<std::size_t> dataset_sizes(const std::vector<PretrainDataset>& datasets);

/// The grouping of a labelled stream's batches (docs/training.md "Batches that share values"):
/// each example's keys are the elements of its `view` set (data.group_by_view), interned to
/// integers; `group_size` examples per group (data.group_size). An empty `view` (the default)
/// or a group size under 2 gives the inactive grouping.
/// @throws std::invalid_argument if `view` is not one of the ten view names.
Grouping view_grouping(const std::vector<PretrainDataset>& datasets, const std::string& view,
                       std::size_t group_size);

/// The grouping `d` asks for (data.group_by_view, data.group_size) over `datasets`.
/// @throws std::invalid_argument if data.group_by_view is not "" or one of the ten view names.
Grouping view_grouping(const std::vector<PretrainDataset>& datasets, const DataConfig& d);

/// The name of `d`'s grouping that a checkpoint records and a resume checks
/// (TrainerState::batch_grouping): "" when off, else e.g. "SV/4".
std::string batch_grouping_name(const DataConfig& d);

}  // namespace dialtree::trainer
