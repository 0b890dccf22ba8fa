// DialoGLUE's test metrics, exactly as alexa/dialoglue computes them (docs/dialoglue.md §3-§6):
// intent accuracy, slot F1 with its substring quirk, TOP exact match, and TripPy's MultiWOZ joint
// goal accuracy. Torch-free. Scores are fractions in [0, 1]; DialoGLUE reports them x100.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dialtree::eval {

/// Mean and sample standard deviation (n - 1; 0 for one value) of a set of runs: seeds of a
/// DialoGLUE task, draws of the probe.
struct MeanStd {
  double mean = 0;
  double std = 0;
};

/// MeanStd of `values`. @throws std::invalid_argument if empty.
MeanStd mean_std(const std::vector<double>& values);

/// Intent accuracy (docs/dialoglue.md §3): the fraction of examples whose predicted label string
/// equals the gold label string (byte comparison, no normalisation).
/// @param predicted one label per test example, in test.csv order
/// @param gold      the gold labels (gt_test.json["banking"|"clinc"|"hwu"])
/// @return a fraction in [0, 1]
/// @throws std::invalid_argument if the lengths differ or both lists are empty.
double intent_accuracy(const std::vector<std::string>& predicted,
                       const std::vector<std::string>& gold);

/// The spans of one example: strings "slot:start-end" (docs/dialoglue.md §4 step 6).
using SpanList = std::vector<std::string>;

/// Precision, recall and F1 of one slot type in slot_f1 (docs/dialoglue.md §4 step 7).
struct SlotTypeScore {
  std::string type;  ///< the slot type t (a gold span's text before its first ':')
  std::size_t
      true_positives;     ///< examples with >= 1 kept prediction, kept predictions == kept gold
  std::size_t predicted;  ///< examples with >= 1 kept prediction
  std::size_t to_recall;  ///< examples with >= 1 kept gold span
  double precision, recall, f1;  ///< with DialoGLUE's 1e-5 epsilons
};

/// Slot F1 with every quirk of DialoGLUE's evaluate_slot (docs/dialoglue.md §4 step 7).
struct SlotF1 {
  double score = 0;                  ///< unweighted mean of the per-type F1 (0 if no types)
  std::vector<SlotTypeScore> types;  ///< per type, sorted by type name
};

/// Slot F1 (docs/dialoglue.md §4 step 7). Slot types = the set of k over the gold spans of the
/// whole set, k being the part of "k:start-end" before its first ':' (evaluate.py's split(":")[0];
/// the same as before the last ':' unless k itself holds a ':'). For each type t, every example
/// keeps the predicted and gold span strings that contain t as a substring (so type "date" also
/// keeps "leaving_date:0-1": DialoGLUE's quirk, kept on purpose); TP = #examples with >= 1 kept
/// prediction whose kept prediction list equals the kept gold list (same order);
/// P = TP / (1e-5 + #examples with >= 1 kept prediction), R = TP / (1e-5 + #examples with >= 1
/// kept gold span), F1_t = 2PR / (1e-5 + P + R); score = unweighted mean over types. Because of
/// the epsilons, gold scored against itself gives 0.99999... (printed as 100.00 at 2 decimals).
/// @param predicted one span list per test example
/// @param gold      the gold span lists (gt_test.json["restaurant8k"|"dstc8"])
/// @throws std::invalid_argument if the lengths differ or both lists are empty.
SlotF1 slot_f1_details(const std::vector<SpanList>& predicted, const std::vector<SpanList>& gold);

/// slot_f1_details(predicted, gold).score: a fraction in [0, 1). Same inputs and throws.
double slot_f1(const std::vector<SpanList>& predicted, const std::vector<SpanList>& gold);

/// One TOP example (docs/dialoglue.md §5): the root intent and the piece-level tag list.
struct TopParse {
  std::string intent;             ///< e.g. "IN_GET_EVENT"
  std::vector<std::string> tags;  ///< e.g. {"O", "B-SL_DATE_TIME", "I-SL_DATE_TIME"}
  bool operator==(const TopParse& o) const { return intent == o.intent && tags == o.tags; }
};

/// TOP exact match (docs/dialoglue.md §5): the fraction of examples whose predicted intent equals
/// the gold intent and whose whole predicted tag list equals the gold list.
/// @return a fraction in [0, 1]
/// @throws std::invalid_argument if the lengths differ or both lists are empty.
double top_exact_match(const std::vector<TopParse>& predicted, const std::vector<TopParse>& gold);

// ---- MultiWOZ joint goal accuracy (TripPy, docs/dialoglue.md §6)
// -------------------------------------

/// A dialog state after one turn: slot name ("hotel-area") -> value. A slot that is absent has
/// the value "none". Same type as readers::MultiwozTurn::belief, so a gold state read by
/// readers::read_multiwoz can be used directly.
using BeliefState = std::map<std::string, std::string>;

/// TripPy's value variants (the `label_maps` of trippy/dataset_config/multiwoz21.json, e.g.
/// "centre" -> {"center", "downtown"}), keys and variants already normalised with
/// trippy_normalize_value. Build it with normalize_label_maps.
using LabelMaps = std::map<std::string, std::vector<std::string>>;

/// TripPy's value normalisation (`tokenize` in metric_bert_dst.py): if the value contains U+0120
/// ('Ġ', RoBERTa's space mark), spaces are removed, each U+0120 becomes a space and the ends are
/// trimmed; then the value is split at runs of non-word characters, the separators are kept,
/// every piece is trimmed, empty pieces are dropped and the rest joined with single spaces:
/// "mid-range" -> "mid - range", "5:30" -> "5 : 30", "§§centre" -> "§§ centre". Word characters
/// are ASCII letters, digits and '_' and every non-ASCII code point except the Latin-1 symbols
/// U+00A1..U+00BF, U+00D7, U+00F7 and the General Punctuation block U+2000..U+206F (Python's
/// Unicode `\w` differs only for rarer symbols). Never throws (except std::bad_alloc).
std::string trippy_normalize_value(std::string_view value);

/// `raw` (as read from a TripPy dataset config) with every key and variant normalised by
/// trippy_normalize_value, as TripPy does before scoring. A later key that normalises to the
/// same string as an earlier one replaces it (Python dict semantics).
LabelMaps normalize_label_maps(const std::map<std::string, std::vector<std::string>>& raw);

/// Whether a predicted slot value counts as correct for a gold value (TripPy,
/// get_joint_slot_correctness): both are normalised (trippy_normalize_value); correct if equal,
/// or if gold is not "none", "dontcare", "true" or "false", is a key of `label_maps` and the
/// prediction is one of its variants ("center" for gold "centre"). So "dontcare" vs "none" is
/// wrong both ways. The variant lookup is one-directional, as in TripPy (predicted "centre" for
/// gold "center" is right only if label_maps lists it under "center").
bool dst_value_correct(std::string_view predicted, std::string_view gold,
                       const LabelMaps& label_maps);

/// Joint goal accuracy (docs/dialoglue.md §6): the fraction of turns whose predicted state is
/// correct for every slot (dst_value_correct), slots absent from a state being "none". The slots
/// compared are the union of the two states' keys (a slot absent from both is none == none).
/// @param predicted the predicted (accumulated) state after each test turn
/// @param gold      the gold state after each test turn, in the same order
/// @param label_maps normalised variants (normalize_label_maps); may be empty
/// @return a fraction in [0, 1]
/// @throws std::invalid_argument if the lengths differ or both lists are empty.
double joint_goal_accuracy(const std::vector<BeliefState>& predicted,
                           const std::vector<BeliefState>& gold, const LabelMaps& label_maps);

/// One slot of one record of TripPy's prediction file (`pred_res.test.final.json`).
struct TripPySlotPrediction {
  int class_label_id = 0;        ///< `class_label_id_<slot>`: gold class index (not scored in JGA)
  int class_prediction = 0;      ///< `class_prediction_<slot>`: predicted class index
  std::string slot_groundtruth;  ///< `slot_groundtruth_<slot>`: gold value of the running state
  std::string slot_prediction;   ///< `slot_prediction_<slot>`: the model's running state value
                                 ///< ("§§value" for inform)
};

/// One record (= one user turn) of TripPy's prediction file.
struct TripPyTurn {
  std::vector<std::string> guid;  ///< e.g. {"test", "PMUL1635.json", "0"}; last = turn index
  std::map<std::string, TripPySlotPrediction> slots;  ///< keyed by slot name ("taxi-leaveAt")
};

/// What TripPy's scorer takes from its dataset config (trippy/dataset_config/multiwoz21.json).
/// The class order matters, since prediction files store class indices, and it differs between
/// sources: TripPy's multiwoz21.json lists ..., inform, refer; the `mwoz_config` embedded in
/// DialoGLUE's evaluate.py lists ..., refer, inform. Use the config the model was trained with.
struct TripPyConfig {
  std::vector<std::string> class_types;  ///< e.g. none, dontcare, copy_value, true, false, ...
  std::vector<std::string> slots;        ///< the tracked slots, e.g. the 30 MultiWOZ 2.1 slots
  LabelMaps label_maps;                  ///< normalised (normalize_label_maps)
};

/// The predicted and gold states per turn that TripPy's scorer compares.
struct DstStates {
  std::vector<BeliefState> predicted, gold;  ///< one state per record, slots of the config
};

/// Rebuilds, per record and slot, the predicted state that TripPy's metric_bert_dst.py /
/// DialoGLUE evaluate.py scores (docs/dialoglue.md §6): the state is reset to "none" at a record
/// whose last guid element is "0"; class "none" keeps it, "dontcare" / "true" / "false" set that
/// word, "copy_value" takes the normalised slot_prediction, "refer" and "inform" take a "§§"
/// value through TripPy's check_slot_inform (the gold value when either value's word list
/// contains the other's, directly or through a label-map variant; a "§§none" value keeps the
/// state), "refer" without "§§" takes the prediction unless it is "none". Gold = the normalised
/// slot_groundtruth. Class names are looked up in `config.class_types` ("none", "dontcare" and
/// "copy_value" must be present).
/// @throws std::invalid_argument (no records; the first record is not turn "0"; a slot of the
///   config missing from a record; a class index that is not "none"/"dontcare"/"copy_value"/
///   "true"/"false"/"refer"/"inform"; an "inform" value without "§§"; a config without the
///   required classes). Messages name the record index and the slot.
DstStates trippy_dst_states(const std::vector<TripPyTurn>& records, const TripPyConfig& config);

/// TripPy's joint goal accuracy over a prediction file: joint_goal_accuracy of
/// trippy_dst_states(records, config) with config.label_maps. A fraction in [0, 1].
/// @throws as trippy_dst_states.
double trippy_joint_goal_accuracy(const std::vector<TripPyTurn>& records,
                                  const TripPyConfig& config);

}  // namespace dialtree::eval
