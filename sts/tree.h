// The semantic tree structure (STS) label of one turn: root -> domain -> intent -> slot ->
// [values], as used by SPACE-2 (docs/method.md §2.1). Absent levels use the placeholders
// DEFAULT_DOMAIN / DEFAULT_INTENT.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dialtree::sts {

/// Placeholder names for absent tree levels (docs/method.md §2.1).
inline constexpr const char* kDefaultDomain = "DEFAULT_DOMAIN";
inline constexpr const char* kDefaultIntent = "DEFAULT_INTENT";

/// A slot value with an optional character span [start, end) in code points into the turn text.
struct Value {
  std::string value;
  std::optional<std::pair<std::size_t, std::size_t>> span;
  bool operator==(const Value& o) const { return value == o.value && span == o.span; }
};

using SlotMap = std::map<std::string, std::vector<Value>>;  ///< slot -> values (in order)
using IntentMap = std::map<std::string, SlotMap>;           ///< intent -> slots
using DomainMap = std::map<std::string, IntentMap>;         ///< domain -> intents

/// A label tree. Maps are ordered, so iteration and serialisation are deterministic.
struct Tree {
  DomainMap domains;

  bool empty() const { return domains.empty(); }
  bool operator==(const Tree& o) const { return domains == o.domains; }

  /// Adds `slot` = `value` under domain/intent (creating the nodes). A value equal to one
  /// already present (same string and span) is not added twice. Linear in the number of values
  /// of the slot: to add many values to one slot, use add_values().
  void add_value(const std::string& domain, const std::string& intent, const std::string& slot,
                 Value value);
  /// Appends `values`, in order, to `slot` under domain/intent (creating the nodes), skipping
  /// each one equal to a value already present or added earlier in the call: the same result as
  /// add_value() per value, in expected linear time (a hash set once the list is long).
  void add_values(const std::string& domain, const std::string& intent, const std::string& slot,
                  std::vector<Value> values);
  /// Adds an intent node with no slots (creating the domain).
  void add_intent(const std::string& domain, const std::string& intent);
  /// Adds a slot node with no values.
  void add_slot(const std::string& domain, const std::string& intent, const std::string& slot);
};

/// SPACE-2's label fix-up (docs/method.md §2.1): the whole tree becomes empty if any domain has no
/// intents, or if any intent named DEFAULT_INTENT has no slots. Idempotent.
Tree fix_up(Tree tree);

/// The nested JSON form `{domain: {intent: {slot: [{"value": v, "span": [s, e]}]}}}`.
nlohmann::ordered_json to_json(const Tree& tree);

/// Parses the nested JSON form. Values may be objects {"value": string or number, "span": [s,
/// e]?} or bare strings/numbers (converted to strings, docs/method.md §3.1); booleans are not
/// values.
/// @throws SchemaError naming `path` (e.g. "turns[2].label.hotel.inform.area[0].span") plus the
///   expected and found types; DataError for an empty domain, intent or slot name or a bad span;
///   `file` and `where` go into the message.
Tree tree_from_json(const nlohmann::json& j, const std::string& file = "",
                    const std::string& where = "", const std::string& path = "label");

}  // namespace dialtree::sts
