#include "common/error.h"

namespace dialtree {
namespace {
std::string compose(const std::string& file, const std::string& where, const std::string& field,
                    const std::string& message) {
  std::string s = file.empty() ? std::string("<input>") : file;
  if (!where.empty()) s += ": " + where;
  if (!field.empty()) s += ": field '" + field + "'";
  return s + ": " + message;
}
}  // namespace

DataError::DataError(std::string file, std::string where, std::string field, std::string message)
    : std::runtime_error(compose(file, where, field, message)),
      file_(std::move(file)),
      where_(std::move(where)),
      field_(std::move(field)),
      detail_(std::move(message)) {}

std::string at_line(std::size_t line) {
  return "line " + std::to_string(line);
}
std::string at_record(std::size_t index) {
  return "record " + std::to_string(index);
}

}  // namespace dialtree
