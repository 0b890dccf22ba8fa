#include "eval/embedding_file.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_util.h"

namespace dialtree::eval {

void write_embeddings(const std::string& stem, const ProbeMatrix& x, const std::vector<int>& labels,
                      const std::vector<std::string>& label_names, const nlohmann::json& extra) {
  if (static_cast<std::size_t>(x.rows()) != labels.size()) {
    throw std::invalid_argument(
        fmt::format("write_embeddings: {} rows but {} labels", x.rows(), labels.size()));
  }
  static_assert(sizeof(float) == 4, "float32");
  std::string bytes(static_cast<std::size_t>(x.size()) * 4, '\0');
  char* p = bytes.data();
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    for (Eigen::Index j = 0; j < x.cols(); ++j, p += 4) {
      const auto v = static_cast<float>(x(i, j));
      std::uint32_t u;
      std::memcpy(&u, &v, 4);
      for (int b = 0; b < 4; ++b) p[b] = static_cast<char>((u >> (8 * b)) & 0xFF);  // little-endian
    }
  }
  const std::filesystem::path data_path = stem + ".f32";
  nlohmann::json header = {{"format", "dialtree-embeddings/1"},
                           {"rows", x.rows()},
                           {"dim", x.cols()},
                           {"dtype", "float32"},
                           {"byte_order", "little"},
                           {"data", data_path.filename().string()},
                           {"labels", labels},
                           {"label_names", label_names}};
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) header[it.key()] = it.value();
  }
  write_file_atomic(data_path, bytes);
  write_file_atomic(stem + ".json", header.dump() + "\n");
}

EmbeddingFile read_embeddings(const std::string& stem) {
  const std::string header_path = stem + ".json";
  // Errors name the line and column, the input escaped and cut (json_util.h).
  const nlohmann::json h = json_parse_text(read_file_bytes(header_path), header_path);
  auto field = [&](const char* name) -> const nlohmann::json& {
    if (!h.is_object() || !h.contains(name)) throw DataError(header_path, "", name, "missing");
    return h.at(name);
  };
  if (field("format") != "dialtree-embeddings/1" || field("dtype") != "float32" ||
      field("byte_order") != "little") {
    throw DataError(header_path, "", "format",
                    "expected dialtree-embeddings/1, float32, little-endian");
  }
  EmbeddingFile out;
  std::size_t rows = 0, dim = 0;
  try {
    rows = field("rows").get<std::size_t>();
    dim = field("dim").get<std::size_t>();
    out.labels = field("labels").get<std::vector<int>>();
    if (h.contains("label_names"))
      out.label_names = h.at("label_names").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw DataError(header_path, "", "", std::string("bad header: ") + e.what());
  }
  if (out.labels.size() != rows) {
    throw DataError(header_path, "", "labels",
                    fmt::format("{} labels for {} rows", out.labels.size(), rows));
  }
  const std::string data_path =
      (std::filesystem::path(header_path).parent_path() / field("data").get<std::string>())
          .string();
  const std::string bytes = read_file_bytes(data_path);
  if (bytes.size() != rows * dim * 4) {
    throw DataError(
        data_path, "", "",
        fmt::format("{} bytes, expected rows x dim x 4 = {}", bytes.size(), rows * dim * 4));
  }
  out.x.resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(dim));
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < dim; ++j, p += 4) {
      const std::uint32_t u =
          static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
          (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
      float v;
      std::memcpy(&v, &u, 4);
      out.x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = v;
    }
  }
  return out;
}

}  // namespace dialtree::eval
