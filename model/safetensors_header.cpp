#include "model/safetensors_header.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_util.h"

namespace dialtree::model {
namespace {

struct Dtype {
  const char* name;
  std::size_t size;
};

constexpr Dtype kDtypes[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
                             {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};

[[noreturn]] void fail(const std::string& path, const std::string& tensor, const std::string& msg) {
  throw DataError(path, tensor.empty() ? std::string() : "tensor '" + tensor + "'", "", msg);
}

/// Non-negative integer JSON value, or fail().
std::uint64_t as_count(const nlohmann::json& v, const std::string& path, const std::string& tensor,
                       const char* what) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return v.get<std::uint64_t>();
  fail(path, tensor, std::string(what) + " must be non-negative integers, got " + v.dump());
}

/// One tensor entry `v` named `name`, checked on its own and against `data_size`.
SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& v,
                             std::uint64_t data_size, const std::string& path) {
  if (!v.is_object()) fail(path, name, "header entry must be an object");
  for (const auto& field : v.items()) {
    if (field.key() != "dtype" && field.key() != "shape" && field.key() != "data_offsets") {
      fail(path, name, "unknown header field '" + field.key() + "'");
    }
  }
  if (!v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
    fail(path, name, "header entry needs dtype, shape and data_offsets");
  }
  SafetensorsEntry e;
  e.name = name;
  if (!v["dtype"].is_string()) fail(path, name, "dtype must be a string");
  e.dtype = v["dtype"].get<std::string>();
  const std::uint64_t elem = safetensors_element_size(e.dtype);
  if (elem == 0) {
    fail(path, name,
         "unsupported dtype \"" + e.dtype +
             "\" (supported: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)");
  }
  if (!v["shape"].is_array()) fail(path, name, "shape must be an array");
  std::uint64_t numel = 1;
  bool overflow = false;
  for (const auto& d : v["shape"]) {
    const std::uint64_t dim = as_count(d, path, name, "shape entries");
    if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) overflow = true;
    if (dim != 0 && numel > std::numeric_limits<std::uint64_t>::max() / dim) overflow = true;
    numel *= dim;
    e.shape.push_back(static_cast<std::int64_t>(dim));
  }
  const auto& offs = v["data_offsets"];
  if (!offs.is_array() || offs.size() != 2) fail(path, name, "data_offsets must be [begin, end]");
  e.begin = as_count(offs[0], path, name, "data_offsets");
  e.end = as_count(offs[1], path, name, "data_offsets");
  if (e.begin > e.end) {
    fail(path, name,
         "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
             "]: begin after end");
  }
  if (overflow || numel > std::numeric_limits<std::uint64_t>::max() / elem ||
      numel * elem != e.end - e.begin) {
    fail(path, name,
         "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] hold " +
             std::to_string(e.end - e.begin) + " bytes but shape " + v["shape"].dump() + " of " +
             e.dtype + " needs " +
             (overflow ? std::string("too many") : std::to_string(numel * elem)));
  }
  if (e.end > data_size) {
    fail(path, name,
         "data_offsets end " + std::to_string(e.end) + " lies beyond the data (" +
             std::to_string(data_size) + " bytes); file truncated?");
  }
  return e;
}

}  // namespace

std::size_t safetensors_element_size(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return d.size;
  }
  return 0;
}

std::uint64_t parse_safetensors_header_length(std::string_view prefix, std::uint64_t file_size,
                                              const std::string& path) {
  if (file_size < 8 || prefix.size() < 8) {
    fail(path, "",
         "file too short (" + std::to_string(file_size) +
             " bytes) for the 8-byte header length; not a safetensors file");
  }
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(prefix[i]);
  if (n > file_size - 8 || n > kMaxSafetensorsHeader) {
    fail(path, "",
         "header length " + std::to_string(n) + " exceeds the file size (" +
             std::to_string(file_size) + " bytes); truncated or not a safetensors file");
  }
  return n;
}

SafetensorsHeader parse_safetensors_header(std::string_view text, std::uint64_t data_size,
                                           const std::string& path) {
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {  // nlohmann names the line and column
    // Escaped and cut: a header may be up to 100 MB of anything.
    fail(path, "", "header is not valid JSON: " + json_exception_message(e));
  } catch (const nlohmann::json::exception& e) {  // a number beyond double's range: no place in `e`
    const auto at = json_error_offset(text);
    fail(path, "",
         "header is not valid JSON: " + json_exception_message(e) +
             (at ? " (at header byte " + std::to_string(*at) + ")" : std::string()));
  }
  if (!header.is_object()) fail(path, "", "header must be a JSON object");

  SafetensorsHeader out;
  for (const auto& item : header.items()) {
    const std::string& name = item.key();
    const auto& v = item.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail(path, "", "__metadata__ must be an object of strings");
      for (const auto& m : v.items()) {
        if (!m.value().is_string()) fail(path, "", "__metadata__." + m.key() + " must be a string");
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    out.entries.push_back(parse_entry(name, v, data_size, path));
  }
  auto& entries = out.entries;
  std::sort(entries.begin(), entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  std::uint64_t covered = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const SafetensorsEntry& e = entries[i];
    if (e.begin < covered) {
      fail(path, e.name,
           "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
               "] overlap tensor '" + entries[i - 1].name + "'");
    }
    if (e.begin > covered) {
      fail(path, e.name, "gap in the data before offset " + std::to_string(e.begin));
    }
    covered = e.end;
  }
  if (covered != data_size) {
    fail(path, "",
         "tensors cover " + std::to_string(covered) + " bytes but the data section has " +
             std::to_string(data_size));
  }
  return out;
}

}  // namespace dialtree::model
