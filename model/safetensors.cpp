#include "model/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors I/O assumes a little-endian host"
#endif

namespace dialtree::model {
namespace {

struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
};

constexpr DtypeInfo kDtypes[] = {{"F64", torch::kFloat64}, {"F32", torch::kFloat32},
                                 {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
                                 {"I64", torch::kInt64},   {"I32", torch::kInt32},
                                 {"I16", torch::kInt16},   {"I8", torch::kInt8},
                                 {"U8", torch::kUInt8},    {"BOOL", torch::kBool}};

/// Largest header we accept (the reference implementation's limit).
constexpr std::uint64_t kMaxHeader = 100'000'000;

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

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

struct Entry {
  std::string name;
  const DtypeInfo* dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin, end;
};

}  // namespace

std::string safetensors_dtype_name(torch::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (d.type == type) return d.name;
  }
  throw std::invalid_argument(std::string("safetensors: unsupported dtype ") + c10::toString(type));
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  std::vector<std::pair<std::string, torch::Tensor>> order;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__" || !names.insert(name).second) {
      throw std::invalid_argument("save_safetensors: " + path + ": bad or repeated tensor name '" +
                                  name + "'");
    }
    if (!t.defined()) {
      throw std::invalid_argument("save_safetensors: " + path + ": tensor '" + name +
                                  "' is undefined");
    }
    try {
      safetensors_dtype_name(t.scalar_type());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(e.what()) + " (tensor '" + name + "' in " + path +
                                  ")");
    }
    order.emplace_back(name, t.detach().to(torch::kCPU).contiguous());
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second.element_size() > b.second.element_size();
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : order) {
    const std::uint64_t bytes = t.nbytes();
    nlohmann::ordered_json e;
    e["dtype"] = safetensors_dtype_name(t.scalar_type());
    e["shape"] = t.sizes().vec();
    e["data_offsets"] = {offset, offset + bytes};
    header[name] = std::move(e);
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t n = text.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xff);

  AtomicFile file(path);
  std::ostream& out = file.stream();
  out.write(len, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, t] : order) {
    out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  }
  if (!out) throw std::runtime_error("save_safetensors: " + path + ": write failed");
  file.commit();
}

SafetensorsContents load_safetensors(const std::string& path) {
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) fail(path, "", "cannot read file: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "", "cannot open file for reading");
  if (size < 8) {
    fail(path, "",
         "file too short (" + std::to_string(size) +
             " bytes) for the 8-byte header length; not a safetensors file");
  }
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > size - 8 || n > kMaxHeader) {
    fail(path, "",
         "header length " + std::to_string(n) + " exceeds the file size (" + std::to_string(size) +
             " bytes); truncated or not a safetensors file");
  }
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (!in) fail(path, "", "read error in the header");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(path, "", std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(path, "", "header must be a JSON object");

  SafetensorsContents out;
  std::vector<Entry> entries;
  const std::uint64_t data_size = size - 8 - n;
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
    if (!v.is_object()) fail(path, name, "header entry must be an object");
    for (const auto& field : v.items()) {
      if (field.key() != "dtype" && field.key() != "shape" && field.key() != "data_offsets") {
        fail(path, name, "unknown header field '" + field.key() + "'");
      }
    }
    if (!v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
      fail(path, name, "header entry needs dtype, shape and data_offsets");
    }
    Entry e{name, nullptr, {}, 0, 0};
    if (!v["dtype"].is_string()) fail(path, name, "dtype must be a string");
    e.dtype = find_dtype(v["dtype"].get<std::string>());
    if (!e.dtype) {
      fail(path, name,
           "unsupported dtype \"" + v["dtype"].get<std::string>() +
               "\" (supported: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)");
    }
    if (!v["shape"].is_array()) fail(path, name, "shape must be an array");
    std::uint64_t numel = 1;
    bool overflow = false;
    for (const auto& d : v["shape"]) {
      const std::uint64_t dim = as_count(d, path, name, "shape entries");
      if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        overflow = true;
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
    const std::uint64_t elem = c10::elementSize(e.dtype->type);
    if (overflow || numel > std::numeric_limits<std::uint64_t>::max() / elem ||
        numel * elem != e.end - e.begin) {
      fail(path, name,
           "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] hold " +
               std::to_string(e.end - e.begin) + " bytes but shape " + v["shape"].dump() + " of " +
               e.dtype->name + " needs " +
               (overflow ? std::string("too many") : std::to_string(numel * elem)));
    }
    if (e.end > data_size) {
      fail(path, name,
           "data_offsets end " + std::to_string(e.end) + " lies beyond the data (" +
               std::to_string(data_size) + " bytes); file truncated?");
    }
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t covered = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
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
  for (const Entry& e : entries) {
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(e.dtype->type));
    in.seekg(static_cast<std::streamoff>(8 + n + e.begin));
    in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.end - e.begin));
    if (!in) fail(path, e.name, "read error");
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace dialtree::model
