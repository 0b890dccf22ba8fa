#include "sts/convert.h"

#include <filesystem>
#include <stdexcept>

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

std::string parent_name(const std::string& input) {
  fs::path p = fs::path(input).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // trailing slash
  std::string name = p.parent_path().filename().string();
  return name.empty() ? "data" : name;
}

std::string split_name(const std::string& input) {
  fs::path p = fs::path(input).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.stem().string();
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
  const readers::LabelMap labels = readers::LabelMap::from_categories_json(categories);
  const readers::IntentCsv csv = readers::read_intent_csv(input, labels);
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
    for (const auto& l : ex.labels) {
      t.add_value(domain, kDefaultIntent, l.slot,
                  Value{utf8::substr(ex.text, l.start, l.end), std::make_pair(l.start, l.end)});
    }
    Turn turn = user_turn(ex.text, t);
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
    std::string text;
    std::vector<std::size_t> starts;  // code point offset of each word
    for (const auto& w : ex.words) {
      if (!text.empty()) text += ' ';
      starts.push_back(utf8::length(text));
      text += w;
    }
    Tree t;
    t.add_intent(domain, ex.intent);
    // Group words into top-level slot values: a value continues while the outermost label
    // stays the same, unless a B- tag opens that outermost label again.
    std::string open;
    std::size_t first = 0, last = 0;
    auto close = [&] {
      if (open.empty()) return;
      const std::size_t s = starts[first];
      const std::size_t e = starts[last] + utf8::length(ex.words[last]);
      t.add_value(domain, ex.intent, open, Value{utf8::substr(text, s, e), std::make_pair(s, e)});
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
    out.push_back(Dialog{make_id(source, split, n), source, {user_turn(text, t)}});
  }
  rep.records = examples.size();
  return out;
}

std::string sgd_domain(const std::string& service) {
  // "Restaurants_1" -> "Restaurants": versions of one service share their semantics.
  std::size_t u = service.rfind('_');
  if (u != std::string::npos && u + 1 < service.size() &&
      service.find_first_not_of("0123456789", u + 1) == std::string::npos) {
    return service.substr(0, u);
  }
  return service;
}

std::vector<Dialog> convert_sgd(const std::string& input, const std::string& source,
                                ConvertReport& rep) {
  readers::SgdLoadReport load;
  const auto dialogs = readers::read_sgd(input, &load);
  rep.value_mismatch = load.value_mismatch;
  for (const auto& m : load.mismatches) rep.warnings.push_back(m);
  std::vector<Dialog> out;
  out.reserve(dialogs.size());
  for (const auto& sd : dialogs) {
    Dialog d{source + "/" + sd.dialogue_id, source, {}};
    for (const auto& st : sd.turns) {
      const bool user = st.speaker == "USER";
      if (!user) {
        d.turns.push_back(Turn{"system", st.utterance, std::nullopt, nullptr});
        continue;
      }
      Tree t;
      for (const auto& f : st.frames) {
        const std::string domain = sgd_domain(f.service);
        std::string intent = f.active_intent.value_or("NONE");
        if (intent == "NONE") intent = kDefaultIntent;
        t.add_intent(domain, intent);
        for (const auto& a : f.actions) {
          if (a.act == "INFORM" && !a.slot.empty()) {
            for (const auto& v : a.values) {
              Value val{v, std::nullopt};
              for (const auto& sp : f.slots) {
                if (sp.slot == a.slot && utf8::substr(st.utterance, sp.start, sp.end) == v) {
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
      // following system turn's state minus the state before this turn.
      const auto& prev = before ? *before : kNone;
      const auto& after = i + 1 < md.turns.size() ? md.turns[i + 1].belief : kNone;
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
    rep.warnings.push_back(std::to_string(load.blank_lines) + " blank lines skipped");
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

std::vector<Dialog> convert(SourceFormat format, const std::string& input,
                            const ConvertOptions& options, ConvertReport* report) {
  ConvertReport rep;
  const std::string domain = options.domain.value_or(kDefaultDomain);
  auto source_or = [&](const std::string& dflt) { return options.source.value_or(dflt); };
  std::vector<Dialog> out;
  switch (format) {
    case SourceFormat::IntentCsv:
      out = convert_intent(input, options, source_or(parent_name(input)), domain, rep);
      break;
    case SourceFormat::SlotJson:
      out = convert_slot(input, source_or(parent_name(input)), domain, rep);
      break;
    case SourceFormat::Top:
      out = convert_top(input, source_or(parent_name(input)), domain, rep);
      break;
    case SourceFormat::Multiwoz:
      out = convert_multiwoz(input, source_or("multiwoz"), rep);
      break;
    case SourceFormat::Sgd:
      out = convert_sgd(input, source_or("sgd"), rep);
      break;
    case SourceFormat::Text:
      out = convert_text(input, source_or(split_name(input)), rep);
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
