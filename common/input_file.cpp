#include "common/input_file.h"

#include <cerrno>
#include <cstring>

#include <sys/stat.h>

#include "common/error.h"

namespace dialtree {

int open_input_file(std::ifstream& in, const std::string& path) noexcept {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errno != 0 ? errno : ENOENT;
  if (S_ISDIR(st.st_mode)) return EISDIR;
  errno = 0;
  try {
    in.open(path, std::ios::binary);
  } catch (...) {
    return EIO;
  }
  if (!in) return errno != 0 ? errno : EIO;
  return 0;
}

std::string open_error_message(int err) {
  if (err == EISDIR) return "is a directory, not a file";
  return std::string("cannot open file for reading: ") + std::strerror(err);
}

void open_input_file_or_throw(std::ifstream& in, const std::string& path) {
  if (const int err = open_input_file(in, path); err != 0) {
    throw DataError(path, "", "", open_error_message(err));
  }
}

}  // namespace dialtree
