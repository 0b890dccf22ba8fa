#include "readers/multiwoz.h"

#include <cctype>

#include "common/error.h"
#include "common/json_util.h"

namespace dialtree::readers {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Slots whose values are times (TripPy normalises exactly these): leaveAt, arriveBy, book time.
bool is_time_slot(const std::string& slot) {
  return slot == "leaveat" || slot == "arriveby" || slot == "book_time";
}

bool skipped_value(const std::string& v) {
  return v.empty() || v == "not mentioned";
}

// Adds the slot -> value pairs of one `semi` or `book` object to `belief`.
void add_slots(const json& obj, const std::string& domain, const char* prefix,
               const JsonPlace& place, const std::string& path,
               std::map<std::string, std::string>& belief) {
  json_as_object(obj, place, path);
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key() == "booked") {
      json_as_array(it.value(), place, json_child_path(path, "booked"));  // ignored, see header
      continue;
    }
    std::string value = json_as_string(it.value(), place, json_child_path(path, it.key()));
    if (skipped_value(value)) continue;
    const std::string slot = prefix + lower(it.key());
    if (is_time_slot(slot)) value = normalize_time(value);  // C12
    belief[domain + "-" + slot] = std::move(value);
  }
}

}  // namespace

std::string normalize_time(std::string_view value) {
  std::string_view s = value;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  // H or HH, then optionally [:.]MM, then optionally (space) am|pm.
  std::size_t i = 0;
  while (i < s.size() && i < 3 && is_digit(s[i])) ++i;
  if (i == 0 || i > 2) return std::string(value);
  int hour = std::stoi(std::string(s.substr(0, i)));
  int minute = 0;
  bool have_minutes = false;
  if (i < s.size() && (s[i] == ':' || s[i] == '.')) {
    if (i + 3 > s.size() || !is_digit(s[i + 1]) || !is_digit(s[i + 2])) {
      return std::string(value);
    }
    minute = (s[i + 1] - '0') * 10 + (s[i + 2] - '0');
    have_minutes = true;
    i += 3;
  }
  std::string rest = lower(std::string(s.substr(i)));
  if (!rest.empty() && rest.front() == ' ') rest.erase(0, 1);
  if (minute > 59) return std::string(value);
  if (rest.empty()) {
    // 24-hour clock; a bare number is not a time.
    if (!have_minutes || hour > 23) return std::string(value);
  } else if (rest == "am" || rest == "pm" || rest == "a.m." || rest == "p.m.") {
    if (hour < 1 || hour > 12) return std::string(value);
    const bool pm = rest[0] == 'p';
    if (hour == 12) hour = 0;
    if (pm) hour += 12;
  } else {
    return std::string(value);
  }
  char buf[6];
  buf[0] = static_cast<char>('0' + hour / 10);
  buf[1] = static_cast<char>('0' + hour % 10);
  buf[2] = ':';
  buf[3] = static_cast<char>('0' + minute / 10);
  buf[4] = static_cast<char>('0' + minute % 10);
  buf[5] = '\0';
  return std::string(buf);
}

std::vector<MultiwozDialog> read_multiwoz(const std::string& path) {
  const json root = json_parse_file(path);
  const json& dialogs = json_as_object(root, JsonPlace{path, ""}, "(root)");
  std::vector<MultiwozDialog> out;
  out.reserve(dialogs.size());
  // nlohmann::json objects iterate in key order (std::map).
  for (auto dit = dialogs.begin(); dit != dialogs.end(); ++dit) {
    const JsonPlace place{path, "dialogue " + dit.key()};
    const json& dj = json_as_object(dit.value(), place, "(dialogue)");
    MultiwozDialog d;
    d.id = dit.key();
    const json& log = json_as_array(json_require(dj, "log", place, ""), place, "log");
    d.turns.reserve(log.size());
    for (std::size_t ti = 0; ti < log.size(); ++ti) {
      const std::string tpath = json_index_path("log", ti);
      const json& tj = json_as_object(log[ti], place, tpath);
      MultiwozTurn t;
      t.text = json_as_string(json_require(tj, "text", place, tpath), place,
                              json_child_path(tpath, "text"));
      const std::string mpath = json_child_path(tpath, "metadata");
      const json& meta = json_as_object(json_require(tj, "metadata", place, tpath), place, mpath);
      t.role = meta.empty() ? "user" : "system";
      for (auto mit = meta.begin(); mit != meta.end(); ++mit) {
        const std::string domain = lower(mit.key());
        const std::string dpath = json_child_path(mpath, mit.key());
        const json& dom = json_as_object(mit.value(), place, dpath);
        if (const json* semi = json_find(dom, "semi", place, dpath)) {
          add_slots(*semi, domain, "", place, json_child_path(dpath, "semi"), t.belief);
        }
        if (const json* book = json_find(dom, "book", place, dpath)) {
          add_slots(*book, domain, "book_", place, json_child_path(dpath, "book"), t.belief);
        }
      }
      d.turns.push_back(std::move(t));
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace dialtree::readers
