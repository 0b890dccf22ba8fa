// One typed declaration per setting, shared by every reader of settings: the pretraining config
// (trainer/config.cpp), the fine-tuning recipe (eval/eval_config.cpp), a bundle's config.json
// (model/config.cpp) and the flags of `serve` and `embed` (serve/options.h, cli/embed_options.h).
// A Setting row holds the key, the member it binds, its help, range, string check, aliases and
// environment twin; this layer gives, from a table of rows: key lookup with "did you mean"
// suggestions, range and string checks in the wording of common/value_range.h, a text form of
// every value and a Markdown table of the settings (docs/training.md "Config", docs/evaluation.md
// "Hyper-parameters", docs/serving.md "Settings"). Strict YAML reading is in
// common/settings_yaml.h, JSON in common/settings_json.h, CLI11 flags in cli/common_options.h
// (add_setting_flags).
// Torch-free, yaml-free and JSON-free, so option headers can include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/settings_fwd.h"
#include "common/value_range.h"

namespace dialtree::settings {

/// Where a setting's value lives: a pointer to one of the value types settings may have.
using Target = std::variant<int*, std::int64_t*, std::size_t*, double*, bool*, std::string*,
                            std::vector<std::string>*, std::optional<std::int64_t>*>;

/// A check of a string value: "" when fine, else the problem ("must be random or linear_probe,
/// got \"x\"").
using StringCheck = std::string (*)(const std::string&);

/// What a row states about its setting, apart from where the value lives.
struct Info {
  /// The key as users write it: "learning_rate", "model.hidden_size" (a section's key: the
  /// section before the first '.'), or a flag without its dashes ("max-batch-tokens").
  std::string name;
  std::string help;             ///< one line, shown in --help and in the Markdown table
  std::optional<Range> range;   ///< numbers only: the allowed values
  StringCheck check = nullptr;  ///< strings (each entry of a list): the allowed values
  /// The allowed values in words, for tables, where no range states them: a string check's
  /// values ("cpu, cuda"), or a rule checked in code ("in [0, CPUs]").
  std::string allowed;
  std::vector<std::string> aliases;  ///< names other tools use for it ("lr"), lower case
  /// The default in words, for tables, where the value depends on the machine ("every CPU").
  std::string default_words;
  bool env = false;       ///< a flag with a DIALTREE_* environment twin
  bool nullable = false;  ///< YAML: a present null means "" (strings only)
};

/// One setting of an options struct `Owner`: its Info and how to reach its member (declared in
/// common/settings_fwd.h, for headers that only name a table).
template <class Owner>
struct Setting {
  Info info;
  std::function<Target(Owner&)> bind;

  /// This row with `r` as its range.
  Setting in(const Range& r) const {
    return with([&](Info& i) { i.range = r; });
  }
  /// This row with a string check; `allowed` says the values it accepts in tables.
  Setting checked(StringCheck c, std::string allowed) const {
    return with([&](Info& i) {
      i.check = c;
      i.allowed = std::move(allowed);
    });
  }
  /// This row with another name users may write for it (suggested, never accepted).
  Setting alias(std::string a) const {
    return with([&](Info& i) { i.aliases.push_back(std::move(a)); });
  }
  /// This row with the words for its allowed values, where code checks them (machine-dependent
  /// limits, rules across keys).
  Setting allows(std::string words) const {
    return with([&](Info& i) { i.allowed = std::move(words); });
  }
  /// This row with its default in words for tables (a default resolved from the machine).
  Setting default_shown(std::string words) const {
    return with([&](Info& i) { i.default_words = std::move(words); });
  }
  /// This row with a DIALTREE_* environment twin (flags only).
  Setting env() const {
    return with([](Info& i) { i.env = true; });
  }
  /// This row reading a YAML null as "" (strings only).
  Setting nullable() const {
    return with([](Info& i) { i.nullable = true; });
  }

 private:
  template <class F>
  Setting with(F&& f) const {
    Setting s = *this;
    f(s.info);
    return s;
  }
};

/// A row for the member `member` of `Owner`. @throws nothing; a member of a type Target cannot
/// hold does not compile.
template <class Owner, class T>
Setting<Owner> field(std::string name, T Owner::*member, std::string help) {
  Info info;
  info.name = std::move(name);
  info.help = std::move(help);
  return {std::move(info), [member](Owner& o) -> Target { return &(o.*member); }};
}

/// A row for the member `member` of the struct member `sub` of `Owner` (`c.data.max_len`).
template <class Owner, class Sub, class T>
Setting<Owner> field(std::string name, Sub Owner::*sub, T Sub::*member, std::string help) {
  Info info;
  info.name = std::move(name);
  info.help = std::move(help);
  return {std::move(info), [sub, member](Owner& o) -> Target { return &((o.*sub).*member); }};
}

/// The rows of `Sub` as rows of `Owner` reached through its member `sub`, their names (and
/// nothing else) prefixed with `prefix` ("model."). `names` picks the rows and their order (all,
/// in table order, when empty). @throws std::logic_error for a name that is not in `rows`.
template <class Owner, class Sub>
std::vector<Setting<Owner>> nest(const std::string& prefix, Sub Owner::*sub,
                                 const std::vector<Setting<Sub>>& rows,
                                 const std::vector<std::string>& names = {});

/// One row bound to one object: its Info and where its value lives there.
struct Bound {
  const Info* info;  ///< the row's Info, owned by its table (tables are function-local statics)
  Target target;     ///< the member of the bound object: valid while that object lives
};

/// Every row of `rows` bound to `o`, in table order.
template <class Owner>
std::vector<Bound> bind(const std::vector<Setting<Owner>>& rows, Owner& o) {
  std::vector<Bound> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back({&r.info, r.bind(o)});
  return out;
}

/// bind() for reading only: the targets must not be written through.
template <class Owner>
std::vector<Bound> view(const std::vector<Setting<Owner>>& rows, const Owner& o) {
  return bind(rows, const_cast<Owner&>(o));
}

// A Bound points into its object and at its row's Info: binding a temporary object or a
// temporary table would leave it dangling at the end of the statement, so neither compiles.
template <class Owner>
std::vector<Bound> bind(const std::vector<Setting<Owner>>& rows, Owner&& o) = delete;
template <class Owner>
std::vector<Bound> bind(std::vector<Setting<Owner>>&& rows, Owner& o) = delete;
template <class Owner>
std::vector<Bound> view(const std::vector<Setting<Owner>>& rows, const Owner&& o) = delete;
template <class Owner>
std::vector<Bound> view(std::vector<Setting<Owner>>&& rows, const Owner& o) = delete;

/// The Info of every row, in table order.
template <class Owner>
std::vector<const Info*> infos(const std::vector<Setting<Owner>>& rows) {
  std::vector<const Info*> out;
  for (const auto& r : rows) out.push_back(&r.info);
  return out;
}

/// The row named `name` exactly, or nullptr.
const Info* find(const std::vector<const Info*>& rows, const std::string& name);

/// The row bound to the name `name`, or nullptr.
const Bound* find(const std::vector<Bound>& rows, const std::string& name);

/// The section of a row name ("model" of "model.hidden_size", "" for a top-level key).
std::string section_of(const std::string& name);

/// A row name without its section ("hidden_size" of "model.hidden_size").
std::string name_in_section(const std::string& name);

/// The sections of `rows` in order of first appearance ({"model", "data", "loss"}).
std::vector<std::string> sections(const std::vector<const Info*>& rows);

/// The key meant by an unknown key `name` found in `section` ("" = the top level), or "" if
/// none is close: an alias first (compared lower-cased, any section), else the closest key by
/// text_distance.h's suggestion_distance, one more for a key of another section, the first on
/// ties; at the top level the section names are candidates too.
std::string suggestion(const std::vector<const Info*>& rows, const std::string& section,
                       const std::string& name);

/// The keys of `section` without their section, in table order; at the top level the section
/// names follow.
std::vector<std::string> keys_in(const std::vector<const Info*>& rows, const std::string& section);

/// How an unknown key's message lists the valid keys when none is close: `before` + the keys
/// of the section, comma-separated + `after`.
struct KeyList {
  std::string before;
  std::string after;
};

/// "unknown key 'KEY' — did you mean 'HINT'?" with suggestion(rows, section, name), or, with
/// no hint, "unknown key 'KEY'" + list.before + keys_in(rows, section) + list.after. KEY is
/// `shown` (the key as the user wrote it, section included).
std::string unknown_key_message(const std::vector<const Info*>& rows, const std::string& section,
                                const std::string& name, const std::string& shown,
                                const KeyList& list);

/// The problem with one bound value ("must be >= 1, got 0"; a string check's message), or "".
/// @throws std::logic_error for a range on a non-numeric row (a table error).
std::string problem(const Bound& b);

/// A value's problem and the row it is in.
struct Problem {
  std::string name;
  std::string message;
};

/// The first row of `rows` (in table order) whose value has a problem, or nullopt. With
/// `section` given, only the rows of that section ("" = the top level).
std::optional<Problem> first_problem(const std::vector<Bound>& rows,
                                     const std::optional<std::string>& section = std::nullopt);

/// Checks the values of flag rows in table order.
/// @throws std::invalid_argument "--flag: must be >= 1, got 0" at the first problem.
void check_flags(const std::vector<Bound>& rows);

/// True when both lists bind the same rows (in the same order) to equal values.
bool same_values(const std::vector<Bound>& a, const std::vector<Bound>& b);

/// The value's text: integers in decimal, reals as strict_yaml::format_real (1.0e-5), booleans
/// true/false, strings as they are, lists as [a, b], an empty optional as "none".
std::string value_text(const Target& target);

/// The type's name in tables: integer, real, boolean, string, list of strings.
std::string type_name(const Target& target);

/// The range's text in tables: ">= 1", "> 0.0", "in [0.0, 1.0)", "in [0, 65535]", then
/// " (note)"; for a checked string its Info::allowed; else "".
std::string range_text(const Bound& b);

/// Columns of markdown_table().
struct TableStyle {
  bool flags = false;  ///< names as `--flag`, and an environment column (DIALTREE_*)
};

/// The Markdown table of `rows` bound to an object with the default values (or a row's
/// default_words): one line per row,
/// `| name | type | default | range | help |` (`| flag | environment | type | ...` for flags),
/// each line ending in '\n'. A '|' in a cell is written "\|".
std::string markdown_table(const std::vector<Bound>& rows, const TableStyle& style = {});

// ---------------------------------------------------------------------------------------------

template <class Owner, class Sub>
std::vector<Setting<Owner>> nest(const std::string& prefix, Sub Owner::*sub,
                                 const std::vector<Setting<Sub>>& rows,
                                 const std::vector<std::string>& names) {
  std::vector<const Setting<Sub>*> picked;
  if (names.empty()) {
    for (const auto& r : rows) picked.push_back(&r);
  } else {
    for (const auto& n : names) {
      const Setting<Sub>* found = nullptr;
      for (const auto& r : rows) {
        if (r.info.name == n) found = &r;
      }
      if (found == nullptr) throw std::logic_error("settings::nest: no row '" + n + "'");
      picked.push_back(found);
    }
  }
  std::vector<Setting<Owner>> out;
  for (const Setting<Sub>* r : picked) {
    Info info = r->info;
    info.name = prefix + info.name;
    auto inner = r->bind;
    out.push_back({std::move(info), [sub, inner](Owner& o) { return inner(o.*sub); }});
  }
  return out;
}

}  // namespace dialtree::settings
