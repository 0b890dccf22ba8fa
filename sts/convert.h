// Converters from every source reader into sts/1 dialogs. The mapping of each source onto the
// tree domain -> intent -> slot -> [values] is documented in docs/sts-format.md.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sts/format.h"

namespace dialtree::sts {

/// Source formats accepted by `dialtree sts convert --format`.
enum class SourceFormat { IntentCsv, SlotJson, Top, Multiwoz, Sgd, Text };

/// "intent-csv" -> SourceFormat::IntentCsv, ... @throws std::invalid_argument listing the
/// accepted names.
SourceFormat parse_source_format(const std::string& name);
/// All accepted format names, in enum order.
const std::vector<std::string>& source_format_names();

struct ConvertOptions {
  /// Dataset name written as `source` and as the id prefix (must not be empty). Default:
  /// intent-csv, slot-json, top: the name of the folder holding the input, resolved however the
  /// path is spelled (e.g. "banking" for .../banking/train.csv, also when given as "train.csv"
  /// from inside that folder; a file in the root directory needs an explicit source); text: the
  /// file's stem ("corpus" for corpus.txt); sgd: "sgd"; multiwoz: "multiwoz".
  std::optional<std::string> source;
  /// Domain node for intent-csv, slot-json and top, which have no domain level (must not be
  /// empty); default DEFAULT_DOMAIN. Not accepted for sgd, multiwoz (their own domains) and text
  /// (unlabelled).
  std::optional<std::string> domain;
  /// intent-csv only: categories.json path; default: categories.json beside the CSV, and when
  /// there is none, the CSV's own labels (with a warning in ConvertReport::warnings).
  std::optional<std::string> categories;
  /// sgd only: services whose dialogues are left out whole (a dialogue is left out when any of
  /// its `services` is listed). With a folder that holds SGD's schema.json, every name must be a
  /// service it lists (std::invalid_argument otherwise); a name no dialogue has is warned about. DialoGLUE's dstc8 train.json comes from the SGD train dialogues
  /// of Buses_1, Events_1, Homes_1 and RentalCars_1 (kDstc8Services): a labelled pretraining
  /// stage that keeps them sees dstc8 labels beyond train_10 (docs/sts-format.md "SGD").
  std::vector<std::string> exclude_services;
};

/// The SGD services DialoGLUE's dstc8 task was drawn from (docs/sts-format.md "SGD").
const std::vector<std::string>& dstc8_services();

/// What a conversion read and wrote; `records` counts source records (CSV rows, JSON
/// examples, TOP lines, dialogs, text lines), which equals the number of dialogs written plus
/// `excluded_dialogs`.
struct ConvertReport {
  std::size_t records = 0;
  std::size_t dialogs = 0;
  std::size_t turns = 0;
  std::size_t labelled_turns = 0;
  std::size_t empty_labels = 0;    ///< labelled turns whose tree is empty after fix-up
  std::size_t value_mismatch = 0;  ///< spans dropped because text and value disagree (C06)
  std::size_t excluded_dialogs = 0;  ///< sgd dialogues left out by exclude_services
  std::vector<std::string> warnings;
};

/// Reads `input` (a file, or for SGD a directory of dialogues_*.json) with the matching reader
/// and converts every record. Labels are stored after SPACE-2's fix-up (docs/method.md §2.1).
/// Time and memory are linear in the input (n log n in the number of slots per record).
/// @throws std::invalid_argument for options that are empty or do not apply to `format`, or a
///   default source that cannot be derived; DataError / SchemaError from the readers, naming
///   file, line/record and field.
std::vector<Dialog> convert(SourceFormat format, const std::string& input,
                            const ConvertOptions& options = {}, ConvertReport* report = nullptr);

}  // namespace dialtree::sts
