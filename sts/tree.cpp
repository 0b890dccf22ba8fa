#include "sts/tree.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_util.h"

namespace dialtree::sts {

void Tree::add_value(const std::string& domain, const std::string& intent, const std::string& slot,
                     Value value) {
  auto& values = domains[domain][intent][slot];
  if (std::find(values.begin(), values.end(), value) == values.end()) {
    values.push_back(std::move(value));
  }
}

void Tree::add_values(const std::string& domain, const std::string& intent, const std::string& slot,
                      std::vector<Value> values) {
  auto& dst = domains[domain][intent][slot];
  constexpr std::size_t kLinear = 16;  // below this, a scan is cheaper than hashing
  if (dst.size() + values.size() <= kLinear) {
    for (Value& v : values) {
      if (std::find(dst.begin(), dst.end(), v) == dst.end()) dst.push_back(std::move(v));
    }
    return;
  }
  // The set holds indices into `dst`, so it stays valid while `dst` grows.
  const auto hash = [&dst](std::size_t i) {
    const Value& v = dst[i];
    std::size_t h = std::hash<std::string>()(v.value);
    if (v.span) {
      h ^= (std::hash<std::size_t>()(v.span->first) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
      h ^= (std::hash<std::size_t>()(v.span->second) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
    }
    return h;
  };
  const auto equal = [&dst](std::size_t a, std::size_t b) { return dst[a] == dst[b]; };
  std::unordered_set<std::size_t, decltype(hash), decltype(equal)> seen(
      2 * (dst.size() + values.size()), hash, equal);
  dst.reserve(dst.size() + values.size());
  for (std::size_t i = 0; i < dst.size(); ++i) seen.insert(i);
  for (Value& v : values) {
    dst.push_back(std::move(v));
    if (!seen.insert(dst.size() - 1).second) dst.pop_back();
  }
}

void Tree::add_intent(const std::string& domain, const std::string& intent) {
  domains[domain][intent];
}

void Tree::add_slot(const std::string& domain, const std::string& intent, const std::string& slot) {
  domains[domain][intent][slot];
}

Tree fix_up(Tree tree) {
  for (const auto& [domain, intents] : tree.domains) {
    if (intents.empty()) return Tree{};
    for (const auto& [intent, slots] : intents) {
      if (intent == kDefaultIntent && slots.empty()) return Tree{};
    }
  }
  return tree;
}

nlohmann::ordered_json to_json(const Tree& tree) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [domain, intents] : tree.domains) {
    nlohmann::ordered_json& jd = out[domain] = nlohmann::ordered_json::object();
    for (const auto& [intent, slots] : intents) {
      nlohmann::ordered_json& ji = jd[intent] = nlohmann::ordered_json::object();
      for (const auto& [slot, values] : slots) {
        nlohmann::ordered_json& js = ji[slot] = nlohmann::ordered_json::array();
        for (const Value& v : values) {
          nlohmann::ordered_json jv = {{"value", v.value}};
          if (v.span) jv["span"] = {v.span->first, v.span->second};
          js.push_back(std::move(jv));
        }
      }
    }
  }
  return out;
}

namespace {
Value value_from_json(const nlohmann::json& j, const JsonPlace& place, const std::string& path) {
  Value v;
  if (j.is_string()) {
    v.value = j.get<std::string>();
  } else if (j.is_number()) {
    v.value = j.dump();  // docs/method.md §3.1: values are converted to strings
  } else if (j.is_object()) {
    const nlohmann::json& jv = json_require(j, "value", place, path);
    std::string vpath = json_child_path(path, "value");
    if (jv.is_number()) {
      v.value = jv.dump();
    } else if (jv.is_boolean()) {
      throw SchemaError(place.file, place.where, vpath,
                        "must be a string or a number, got boolean " + jv.dump());
    } else {
      v.value = json_as_string(jv, place, vpath);
    }
    if (const nlohmann::json* js = json_find(j, "span", place, path); js && !js->is_null()) {
      std::string spath = json_child_path(path, "span");
      json_as_array(*js, place, spath);
      if (js->size() != 2) {
        throw SchemaError(place.file, place.where, spath,
                          "must be [start, end], got " + std::to_string(js->size()) + " elements");
      }
      std::int64_t s = json_as_int((*js)[0], place, json_index_path(spath, 0));
      std::int64_t e = json_as_int((*js)[1], place, json_index_path(spath, 1));
      if (s < 0 || e <= s) {
        throw DataError(place.file, place.where, spath,
                        "invalid span [" + std::to_string(s) + ", " + std::to_string(e) +
                            "]: need 0 <= start < end");
      }
      v.span = std::make_pair(static_cast<std::size_t>(s), static_cast<std::size_t>(e));
    }
    for (const auto& [key, _] : j.items()) {
      if (key != "value" && key != "span") {
        throw SchemaError(place.file, place.where, json_child_path(path, key),
                          "unknown key (a value has only \"value\" and \"span\")");
      }
    }
  } else {
    std::string got = json_type_name(j);
    if (j.is_boolean()) got += " " + j.dump();
    throw SchemaError(place.file, place.where, path,
                      "must be a value object, string or number, got " + got);
  }
  return v;
}
}  // namespace

Tree tree_from_json(const nlohmann::json& j, const std::string& file, const std::string& where,
                    const std::string& path) {
  const JsonPlace place{file, where};
  // A node name must not be empty: "a..b" paths and "-x" view elements would follow.
  const auto check_name = [&](const std::string& name, const std::string& parent,
                              const char* level) {
    if (name.empty()) {
      throw DataError(file, where, parent.empty() ? "(root)" : parent,
                      std::string("empty ") + level + " name");
    }
  };
  Tree tree;
  for (const auto& [domain, jd] : json_as_object(j, place, path).items()) {
    check_name(domain, path, "domain");
    const std::string dpath = json_child_path(path, domain);
    IntentMap& intents = tree.domains[domain];
    for (const auto& [intent, ji] : json_as_object(jd, place, dpath).items()) {
      check_name(intent, dpath, "intent");
      const std::string ipath = json_child_path(dpath, intent);
      SlotMap& slots = intents[intent];
      for (const auto& [slot, js] : json_as_object(ji, place, ipath).items()) {
        check_name(slot, ipath, "slot");
        const std::string spath = json_child_path(ipath, slot);
        std::vector<Value>& values = slots[slot];
        const nlohmann::json& arr = json_as_array(js, place, spath);
        for (std::size_t k = 0; k < arr.size(); ++k) {
          values.push_back(value_from_json(arr[k], place, json_index_path(spath, k)));
        }
      }
    }
  }
  return tree;
}

}  // namespace dialtree::sts
