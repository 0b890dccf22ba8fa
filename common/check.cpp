#include "common/check.h"

namespace dialtree {
namespace {

// __FILE__ as the compiler was given it: absolute (a build folder outside the sources) or
// relative to the build folder ("../model/encoder.cpp"). A bug report needs it from the source
// root on: "model/encoder.cpp".
std::string source_relative(const char* file) {
  std::string path = file;
  const std::string root = std::string(DIALTREE_SOURCE_ROOT) + "/";
  if (path.rfind(root, 0) == 0) return path.substr(root.size());
  while (path.rfind("../", 0) == 0 || path.rfind("./", 0) == 0) {
    path.erase(0, path[0] == '.' && path[1] == '.' ? 3 : 2);
  }
  return path;
}

std::string describe(const std::string& file, int line, const char* condition,
                     const std::string& message) {
  std::string out = "internal error at " + file + ":" + std::to_string(line) + ": check '" +
                    condition + "' failed";
  if (!message.empty()) out += ": " + message;
  return out;
}

}  // namespace

InternalError::InternalError(const char* file, int line, const char* condition,
                             const std::string& message)
    : std::logic_error(describe(source_relative(file), line, condition, message)),
      file_(source_relative(file)),
      line_(line) {}

void check_failed(const char* file, int line, const char* condition, const std::string& message) {
  throw InternalError(file, line, condition, message);
}

}  // namespace dialtree
