// Lookup, checks, text forms and Markdown tables of settings tables (settings.h).
#include "common/settings.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <type_traits>

#include "common/strict_yaml.h"
#include "common/join.h"
#include "common/text_distance.h"

namespace dialtree::settings {
namespace {

}  // namespace

const Info* find(const std::vector<const Info*>& rows, const std::string& name) {
  for (const Info* r : rows) {
    if (r->name == name) return r;
  }
  return nullptr;
}

const Bound* find(const std::vector<Bound>& rows, const std::string& name) {
  for (const Bound& r : rows) {
    if (r.info->name == name) return &r;
  }
  return nullptr;
}

std::string section_of(const std::string& name) {
  const auto dot = name.find('.');
  return dot == std::string::npos ? std::string() : name.substr(0, dot);
}

std::string name_in_section(const std::string& name) {
  const auto dot = name.find('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::vector<std::string> sections(const std::vector<const Info*>& rows) {
  std::vector<std::string> out;
  for (const Info* r : rows) {
    const std::string s = section_of(r->name);
    if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

std::string suggestion(const std::vector<const Info*>& rows, const std::string& section,
                       const std::string& name) {
  const std::string lower = ascii_lower(name);
  for (const Info* r : rows) {
    if (std::find(r->aliases.begin(), r->aliases.end(), lower) != r->aliases.end()) return r->name;
  }
  std::string best;
  std::size_t best_score = std::numeric_limits<std::size_t>::max();
  auto consider = [&](const std::string& cand_section, const std::string& cand_leaf,
                      const std::string& full) {
    const std::optional<std::size_t> d = suggestion_distance(name, cand_leaf);
    if (!d) return;
    const std::size_t score = *d + (cand_section != section ? 1 : 0);
    if (score < best_score) {
      best_score = score;
      best = full;
    }
  };
  for (const Info* r : rows) consider(section_of(r->name), name_in_section(r->name), r->name);
  for (const auto& s : sections(rows)) consider("", s, s);
  return best;
}

std::vector<std::string> keys_in(const std::vector<const Info*>& rows, const std::string& section) {
  std::vector<std::string> out;
  for (const Info* r : rows) {
    if (section_of(r->name) == section) out.push_back(name_in_section(r->name));
  }
  if (section.empty()) {
    for (const auto& s : sections(rows)) out.push_back(s);
  }
  return out;
}

std::string unknown_key_message(const std::vector<const Info*>& rows, const std::string& section,
                                const std::string& name, const std::string& shown,
                                const KeyList& list) {
  const std::string hint = suggestion(rows, section, name);
  if (!hint.empty()) return "unknown key '" + shown + "' — did you mean '" + hint + "'?";
  return "unknown key '" + shown + "'" + list.before + join(keys_in(rows, section), ", ") +
         list.after;
}

std::string problem(const Bound& b) {
  const Info& info = *b.info;
  return std::visit(
      [&](const auto* value) -> std::string {
        using T = std::remove_cv_t<std::remove_pointer_t<decltype(value)>>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (info.range) throw std::logic_error("settings: a range on the string " + info.name);
          return info.check != nullptr ? info.check(*value) : std::string();
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          if (info.range) throw std::logic_error("settings: a range on the list " + info.name);
          if (info.check == nullptr) return {};
          for (const auto& s : *value) {
            if (std::string p = info.check(s); !p.empty()) return p;
          }
          return {};
        } else if constexpr (std::is_same_v<T, bool>) {
          if (info.range) throw std::logic_error("settings: a range on the boolean " + info.name);
          return {};
        } else {
          return info.range ? range_problem(*value, *info.range) : std::string();
        }
      },
      b.target);
}

std::optional<Problem> first_problem(const std::vector<Bound>& rows,
                                     const std::optional<std::string>& section) {
  for (const Bound& b : rows) {
    if (section && section_of(b.info->name) != *section) continue;
    if (std::string p = problem(b); !p.empty()) return Problem{b.info->name, std::move(p)};
  }
  return std::nullopt;
}

void check_flags(const std::vector<Bound>& rows) {
  if (const auto p = first_problem(rows)) {
    throw std::invalid_argument("--" + p->name + ": " + p->message);
  }
}

bool same_values(const std::vector<Bound>& a, const std::vector<Bound>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].info != b[i].info || a[i].target.index() != b[i].target.index()) return false;
    const bool same =
        std::visit([&](auto* x) { return *x == *std::get<decltype(x)>(b[i].target); }, a[i].target);
    if (!same) return false;
  }
  return true;
}

std::string value_text(const Target& target) {
  return std::visit(
      [](const auto* value) -> std::string {
        using T = std::remove_cv_t<std::remove_pointer_t<decltype(value)>>;
        if constexpr (std::is_same_v<T, double>) {
          return strict_yaml::format_real(*value);
        } else if constexpr (std::is_same_v<T, bool>) {
          return *value ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return *value;
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return "[" + join(*value, ", ") + "]";
        } else if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) {
          return *value ? std::to_string(**value) : "none";
        } else {
          return std::to_string(*value);
        }
      },
      target);
}

std::string type_name(const Target& target) {
  return std::visit(
      [](const auto* value) -> std::string {
        using T = std::remove_cv_t<std::remove_pointer_t<decltype(value)>>;
        if constexpr (std::is_same_v<T, double>) {
          return "real";
        } else if constexpr (std::is_same_v<T, bool>) {
          return "boolean";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return "string";
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return "list of strings";
        } else {
          return "integer";
        }
      },
      target);
}

std::string range_text(const Bound& b) {
  const Info& info = *b.info;
  if (!info.range) return info.allowed;
  const Range& r = *info.range;
  if (std::holds_alternative<double*>(b.target)) {
    return real_range_text(r.lo, r.lo_closed, r.hi, r.hi_closed, r.note);
  }
  const auto bound = [](double v) {
    if (v <= static_cast<double>(LLONG_MIN)) return LLONG_MIN;
    if (v >= static_cast<double>(LLONG_MAX)) return LLONG_MAX;
    return std::llround(v);
  };
  return integer_range_text(bound(r.lo), bound(r.hi), r.note);
}

std::string markdown_table(const std::vector<Bound>& rows, const TableStyle& style) {
  const auto cell = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c == '|') out += '\\';
      out += c;
    }
    return out;
  };
  const auto code = [&](const std::string& s) { return s.empty() ? s : "`" + cell(s) + "`"; };
  std::string out = style.flags ? "| flag | environment | type | default | range | help |\n"
                                  "|---|---|---|---|---|---|\n"
                                : "| key | type | default | range | help |\n"
                                  "|---|---|---|---|---|\n";
  for (const Bound& b : rows) {
    const Info& info = *b.info;
    out += "| ";
    if (style.flags) {
      out += code("--" + info.name) + " | " + (info.env ? code(env_twin(info.name)) : "") + " | ";
    } else {
      out += code(info.name) + " | ";
    }
    const std::string shown_default =
        info.default_words.empty() ? code(value_text(b.target)) : cell(info.default_words);
    out += type_name(b.target) + " | " + shown_default + " | " + cell(range_text(b)) + " | " +
           cell(info.help) + " |\n";
  }
  return out;
}

std::string env_twin(const std::string& flag) {
  std::string env = "DIALTREE_";
  for (char c : flag) env.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(c)));
  return env;
}

}  // namespace dialtree::settings
