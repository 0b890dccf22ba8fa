#include "model/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "model/safetensors_header.h"

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

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

[[noreturn]] void fail(const std::string& path, const std::string& tensor, const std::string& msg) {
  throw DataError(path, tensor.empty() ? std::string() : "tensor '" + tensor + "'", "", msg);
}

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
  char len[8] = {};
  if (size >= 8) in.read(len, 8);
  // Every check on the header (length, JSON, dtypes, shapes, offsets) is the torch-free
  // parse_safetensors_header, which the guard build fuzzes (docs/build.md "Guard build").
  const std::uint64_t n = parse_safetensors_header_length(std::string_view(len, 8), size, path);
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (!in) fail(path, "", "read error in the header");
  SafetensorsHeader header = parse_safetensors_header(text, size - 8 - n, path);

  SafetensorsContents out;
  out.metadata = std::move(header.metadata);
  for (const SafetensorsEntry& e : header.entries) {
    const DtypeInfo* dtype = find_dtype(e.dtype);
    if (!dtype) fail(path, e.name, "unsupported dtype \"" + e.dtype + "\"");
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(dtype->type));
    in.seekg(static_cast<std::streamoff>(8 + n + e.begin));
    in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.end - e.begin));
    if (!in) fail(path, e.name, "read error");
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace dialtree::model
