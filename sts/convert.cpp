#include "sts/convert.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "common/error.h"
#include "common/json_util.h"
#include "common/utf8.h"
#include "readers/intent_csv.h"
#include "readers/multiwoz.h"
#include "readers/sgd.h"
#include "readers/slot_json.h"
#include "readers/text.h"
#include "readers/top.h"

namespace dialtree::sts {

namespace fs = std::filesystem;

const std::vector<std::string>& source_format_names() {
  static const std::vector<std::string> names = {"intent-csv", "slot-json", "top",
                                                 "multiwoz",   "sgd",       "text"};
  return names;
}

SourceFormat parse_source_format(const std::string& name) {
  const auto& names = source_format_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<SourceFormat>(i);
  }
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown format '" + name + "' (expected one of: " + all + ")");
}

namespace {

// `input` made absolute and normalised, without a trailing slash.
fs::path absolute_input(const std::string& input) {
  std::error_code ec;
  fs::path p = fs::absolute(input, ec);
  if (ec) p = fs::path(input);
  p = p.lexically_normal();
  if (p.filename().empty() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

// The name of the folder that holds `input`, however the path is spelled ("bom.csv",
// "./bom.csv", "../task/bom.csv" and "/data/task/bom.csv" all give "task"): the parent folder is
// resolved with weakly_canonical (symbolic links followed).
std::string parent_name(const std::string& input) {
  const fs::path abs = absolute_input(input);
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(abs.parent_path(), ec);
  if (ec) dir = abs.parent_path();
  std::string name = dir.filename().string();
  if (name.empty()) {
    // A missing file is the news, not its folder's name (break test, 2026-12-04).
    if (!fs::exists(abs, ec)) {
      throw DataError(input, "", "", "cannot open file for reading: No such file or directory");
    }
    throw std::invalid_argument("cannot name the dataset after the folder of '" + input +
                                "' (the root directory): pass --source");
  }
  return name;
}

std::string split_name(const std::string& input) {
  return absolute_input(input).stem().string();
}

std::string make_id(const std::string& source, const std::string& split, std::size_t index) {
  return source + "/" + split + "/" + std::to_string(index);
}

Turn user_turn(std::string text, std::optional<Tree> label) {
  Turn t;
  t.role = "user";
  t.text = std::move(text);
  if (label) t.label = fix_up(std::move(*label));
  return t;
}

// Parses "B-X" / "I-X" into (is_begin, X); "O" gives X empty.
std::pair<bool, std::string> split_bio(const std::string& tag) {
  if (tag.size() > 2 && (tag[0] == 'B' || tag[0] == 'I') && tag[1] == '-') {
    return {tag[0] == 'B', tag.substr(2)};
  }
  return {false, std::string()};
}

// The outermost label of a TOP tag stack "SL_A_IN_B_SL_C" -> "SL_A"; `nested` tells whether
// deeper labels follow.
std::string top_outer_label(const std::string& stack, bool* nested) {
  std::size_t cut = std::string::npos;
  for (const char* marker : {"_IN_", "_SL_"}) {
    std::size_t p = stack.find(marker, 3);
    if (p != std::string::npos && p < cut) cut = p;
  }
  *nested = cut != std::string::npos;
  return stack.substr(0, cut);
}

std::vector<Dialog> convert_intent(const std::string& input, const ConvertOptions& opt,
                                   const std::string& source, const std::string& domain,
                                   ConvertReport& rep) {
  const std::string categories = opt.categories
                                     ? *opt.categories
                                     : (fs::path(input).parent_path() / "categories.json").string();
  std::error_code ec;
  const bool own_labels = !opt.categories && !fs::exists(categories, ec);
  readers::IntentCsvOptions csv_options;
  csv_options.labels_from_file = own_labels;
  const readers::LabelMap labels =
      own_labels ? readers::LabelMap() : readers::LabelMap::from_categories_json(categories);
  const readers::IntentCsv csv = readers::read_intent_csv(input, labels, csv_options);
  if (own_labels) {
    rep.warnings.push_back("no categories.json beside " + input + " and no --categories: the " +
                           std::to_string(csv.labels.size()) +
                           " labels are the CSV's own (a label missing from this split cannot be "
                           "checked against the others)");
  }
  std::vector<Dialog> out;
  out.reserve(csv.rows.size());
  const std::string split = split_name(input);
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    Tree t;
    t.add_intent(domain, csv.rows[i].label);
    out.push_back(Dialog{make_id(source, split, i), source, {user_turn(csv.rows[i].text, t)}});
  }
  rep.records = csv.rows.size();
  return out;
}

std::vector<Dialog> convert_slot(const std::string& input, const std::string& source,
                                 const std::string& domain, ConvertReport& rep) {
  const auto examples = readers::read_slot_json(input);
  std::vector<Dialog> out;
  out.reserve(examples.size());
  const std::string split = split_name(input);
  for (const auto& ex : examples) {
    Tree t;
    t.add_intent(domain, kDefaultIntent);
    if (!ex.labels.empty()) {
      // Byte offset of every code point, once per text: slicing stays linear in its length.
      const std::vector<std::size_t> offs = utf8::codepoint_offsets(ex.text);
      std::map<std::string, std::vector<Value>> by_slot;  // values in file order per slot
      for (const auto& l : ex.labels) {
        by_slot[l.slot].push_back(Value{ex.text.substr(offs[l.start], offs[l.end] - offs[l.start]),
                                        std::make_pair(l.start, l.end)});
      }
      for (auto& [slot, values] : by_slot) {
        t.add_values(domain, kDefaultIntent, slot, std::move(values));
      }
    }
    Turn turn = user_turn(ex.text, std::move(t));
    if (!ex.requested_slots.empty()) turn.extra["requested_slots"] = ex.requested_slots;
    if (ex.id) turn.extra["source_id"] = *ex.id;
    out.push_back(Dialog{make_id(source, split, ex.index), source, {std::move(turn)}});
  }
  rep.records = examples.size();
  return out;
}

std::vector<Dialog> convert_top(const std::string& input, const std::string& source,
                                const std::string& domain, ConvertReport& rep) {
  const auto examples = readers::read_top(input);
  std::vector<Dialog> out;
  out.reserve(examples.size());
  const std::string split = split_name(input);
  for (std::size_t n = 0; n < examples.size(); ++n) {
    const auto& ex = examples[n];
    // The text is the words joined by single spaces; offsets of each word's start and end, in
    // code points and in bytes, are tracked as the text grows (linear in its length).
    std::string text;
    const std::size_t nw = ex.words.size();
    std::vector<std::size_t> cp_begin(nw), cp_end(nw), byte_begin(nw), byte_end(nw);
    std::size_t cp = 0;
    for (std::size_t w = 0; w < nw; ++w) {
      if (w > 0) {
        text += ' ';
        ++cp;
      }
      cp_begin[w] = cp;
      byte_begin[w] = text.size();
      text += ex.words[w];
      cp += utf8::length(ex.words[w]);
      cp_end[w] = cp;
      byte_end[w] = text.size();
    }
    Tree t;
    t.add_intent(domain, ex.intent);
    std::map<std::string, std::vector<Value>> by_slot;  // values in line order per slot
    // Group words into top-level slot values: a value continues while the outermost label
    // stays the same, unless a B- tag opens that outermost label again.
    std::string open;
    std::size_t first = 0, last = 0;
    auto close = [&] {
      if (open.empty()) return;
      by_slot[open].push_back(
          Value{text.substr(byte_begin[first], byte_end[last] - byte_begin[first]),
                std::make_pair(cp_begin[first], cp_end[last])});
      open.clear();
    };
    for (std::size_t w = 0; w < ex.words.size(); ++w) {
      auto [begin, stack] = split_bio(ex.tags[w]);
      if (stack.empty()) {
        close();
        continue;
      }
      bool nested = false;
      std::string outer = top_outer_label(stack, &nested);
      if (outer == open && !(begin && !nested)) {
        last = w;
        continue;
      }
      close();
      open = outer, first = last = w;
    }
    close();
    for (auto& [slot, values] : by_slot) t.add_values(domain, ex.intent, slot, std::move(values));
    out.push_back(Dialog{make_id(source, split, n), source, {user_turn(text, std::move(t))}});
  }
  rep.records = examples.size();
  return out;
}

std::vector<Dialog> convert_sgd(const std::string& input, const std::string& source,
                                const std::vector<std::string>& exclude, ConvertReport& rep) {
  readers::SgdLoadReport load;
  const auto dialogs = readers::read_sgd(input, &load);
  rep.value_mismatch = load.value_mismatch;
  for (const auto& m : load.mismatches) rep.warnings.push_back(m);
  std::vector<Dialog> out;
  out.reserve(dialogs.size());
  // With a folder that has SGD's schema.json, a name it does not list is a misspelling: it would
  // exclude nothing, and the dialogues it meant to keep out would stay in.
  const fs::path schema = fs::path(input) / "schema.json";
  std::error_code ec;
  if (!exclude.empty() && fs::is_directory(input, ec) && fs::is_regular_file(schema, ec)) {
    std::set<std::string> known;
    const json list = json_parse_file(schema.string());
    if (list.is_array()) {
      for (const json& service : list) {
        if (service.is_object() && service.contains("service_name") &&
            service["service_name"].is_string())
          known.insert(service["service_name"].get<std::string>());
      }
    }
    for (const auto& name : exclude) {
      if (!known.count(name)) {
        std::string names;
        for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
        throw std::invalid_argument("--exclude-services: '" + name + "' is not a service of " +
                                    schema.string() + " (its services: " + names + ")");
      }
    }
  }
  std::set<std::string> matched;  // excluded services some dialogue had
  for (const auto& sd : dialogs) {
    bool excluded = false;
    for (const auto& service : sd.services) {
      if (std::find(exclude.begin(), exclude.end(), service) != exclude.end()) {
        matched.insert(service);
        excluded = true;
      }
    }
    if (excluded) {
      ++rep.excluded_dialogs;
      continue;
    }
    Dialog d{source + "/" + sd.dialogue_id, source, {}};
    for (const auto& st : sd.turns) {
      const bool user = st.speaker == "USER";
      if (!user) {
        d.turns.push_back(Turn{"system", st.utterance, std::nullopt, nullptr});
        continue;
      }
      Tree t;
      std::vector<std::size_t> offs;  // code point offsets of the utterance, on first use
      for (const auto& f : st.frames) {
        const std::string domain = readers::sgd_service_domain(f.service);  // never empty
        std::string intent = f.active_intent.value_or("NONE");
        if (intent == "NONE") intent = kDefaultIntent;
        t.add_intent(domain, intent);
        for (const auto& a : f.actions) {
          if (a.act == "INFORM" && !a.slot.empty()) {
            for (const auto& v : a.values) {
              Value val{v, std::nullopt};
              for (const auto& sp : f.slots) {
                if (sp.slot != a.slot) continue;
                if (offs.empty()) offs = utf8::codepoint_offsets(st.utterance);
                if (std::string_view(st.utterance)
                        .substr(offs[sp.start], offs[sp.end] - offs[sp.start]) == v) {
                  val.span = std::make_pair(sp.start, sp.end);
                  break;
                }
              }
              t.add_value(domain, intent, a.slot, std::move(val));
            }
          } else if (a.act == "REQUEST" && !a.slot.empty()) {
            t.add_slot(domain, intent, a.slot);
          }
        }
      }
      d.turns.push_back(user_turn(st.utterance, t));
    }
    out.push_back(std::move(d));
  }
  for (const auto& service : exclude) {
    if (!matched.count(service)) {
      rep.warnings.push_back("--exclude-services: no dialogue of " + input + " has the service '" +
                             service + "' (check the spelling, e.g. Buses_1)");
    }
  }
  rep.records = dialogs.size();
  return out;
}

std::vector<Dialog> convert_multiwoz(const std::string& input, const std::string& source,
                                     ConvertReport& rep) {
  const auto dialogs = readers::read_multiwoz(input);
  std::vector<Dialog> out;
  out.reserve(dialogs.size());
  for (const auto& md : dialogs) {
    Dialog d{source + "/" + md.id, source, {}};
    const std::map<std::string, std::string>* before = nullptr;
    static const std::map<std::string, std::string> kNone;
    for (std::size_t i = 0; i < md.turns.size(); ++i) {
      const auto& mt = md.turns[i];
      if (mt.role != "user") {
        d.turns.push_back(Turn{"system", mt.text, std::nullopt, nullptr});
        before = &mt.belief;
        continue;
      }
      // The label of a user turn is what its own words changed in the belief state: the
      // following system turn's state minus the state before this turn. Without a following
      // system turn (a dialog ending on a user turn) that state is unknown: unlabelled.
      if (i + 1 >= md.turns.size() || md.turns[i + 1].role == "user") {
        d.turns.push_back(user_turn(mt.text, std::nullopt));
        continue;
      }
      const auto& prev = before ? *before : kNone;
      const auto& after = md.turns[i + 1].belief;
      Tree t;
      for (const auto& [key, value] : after) {
        auto it = prev.find(key);
        if (it != prev.end() && it->second == value) continue;
        const std::size_t dash = key.find('-');
        const std::string domain = dash == std::string::npos ? key : key.substr(0, dash);
        const std::string slot = dash == std::string::npos ? key : key.substr(dash + 1);
        t.add_value(domain, kDefaultIntent, slot, Value{value, std::nullopt});
      }
      d.turns.push_back(user_turn(mt.text, t));
    }
    out.push_back(std::move(d));
  }
  rep.records = dialogs.size();
  return out;
}

std::vector<Dialog> convert_text(const std::string& input, const std::string& source,
                                 ConvertReport& rep) {
  readers::TextLoadReport load;
  const auto lines = readers::read_text_lines(input, &load);
  if (load.blank_lines) {
    rep.warnings.push_back(input + ": " + std::to_string(load.blank_lines) +
                           (load.blank_lines == 1 ? " blank line" : " blank lines") + " skipped");
  }
  std::vector<Dialog> out;
  out.reserve(lines.size());
  const std::string split = split_name(input);
  for (const auto& l : lines) {
    out.push_back(
        Dialog{make_id(source, split, l.line), source, {user_turn(l.text, std::nullopt)}});
  }
  rep.records = lines.size();
  return out;
}

}  // namespace

const std::vector<std::string>& dstc8_services() {
  static const std::vector<std::string> kServices = {"Buses_1", "Events_1", "Homes_1",
                                                     "RentalCars_1"};
  return kServices;
}

std::vector<Dialog> convert(SourceFormat format, const std::string& input,
                            const ConvertOptions& options, ConvertReport* report) {
  if (options.source && options.source->empty()) {
    throw std::invalid_argument("--source must not be empty (omit it for the default)");
  }
  if (options.domain) {
    if (options.domain->empty()) {
      throw std::invalid_argument("--domain must not be empty (omit it for DEFAULT_DOMAIN)");
    }
    const char* why = format == SourceFormat::Sgd        ? "its domains come from the services"
                      : format == SourceFormat::Multiwoz ? "its domains come from the belief state"
                      : format == SourceFormat::Text     ? "text lines are unlabelled"
                                                         : nullptr;
    if (why) {
      throw std::invalid_argument("--domain does not apply to --format " +
                                  source_format_names()[static_cast<std::size_t>(format)] + " (" +
                                  why + ")");
    }
  }
  if (options.categories && format != SourceFormat::IntentCsv) {
    throw std::invalid_argument("--categories applies to --format intent-csv only");
  }
  if (!options.exclude_services.empty() && format != SourceFormat::Sgd) {
    throw std::invalid_argument("--exclude-services applies to --format sgd only");
  }
  for (const auto& service : options.exclude_services) {
    if (service.empty()) throw std::invalid_argument("--exclude-services: an empty service name");
  }
  ConvertReport rep;
  const std::string domain = options.domain.value_or(kDefaultDomain);
  // The default source is derived only when none is given (a file in "/" needs --source).
  auto source_or = [&](auto&& derive) -> std::string {
    return options.source ? *options.source : std::string(derive());
  };
  const auto folder = [&] { return parent_name(input); };
  std::vector<Dialog> out;
  switch (format) {
    case SourceFormat::IntentCsv:
      out = convert_intent(input, options, source_or(folder), domain, rep);
      break;
    case SourceFormat::SlotJson:
      out = convert_slot(input, source_or(folder), domain, rep);
      break;
    case SourceFormat::Top:
      out = convert_top(input, source_or(folder), domain, rep);
      break;
    case SourceFormat::Multiwoz:
      out = convert_multiwoz(input, source_or([] { return "multiwoz"; }), rep);
      break;
    case SourceFormat::Sgd:
      out = convert_sgd(input, source_or([] { return "sgd"; }), options.exclude_services, rep);
      break;
    case SourceFormat::Text:
      out = convert_text(input, source_or([&] { return split_name(input); }), rep);
      break;
  }
  rep.dialogs = out.size();
  for (const Dialog& d : out) {
    for (const Turn& t : d.turns) {
      ++rep.turns;
      if (t.label) {
        ++rep.labelled_turns;
        rep.empty_labels += t.label->empty();
      }
    }
  }
  if (report) *report = std::move(rep);
  return out;
}

}  // namespace dialtree::sts
