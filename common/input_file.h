// Opening input files with errors that say why: "is a directory" for a folder passed where a file
// is expected (std::ifstream opens a directory "successfully" and then reads nothing, which used to
// surface as "file is empty" or "unexpected end of input"), else the OS reason.
#pragma once

#include <fstream>
#include <string>

namespace dialtree {

/// Opens `in` on `path` for binary reading. @return 0 on success, else an errno value: EISDIR
/// for a directory, the open() error otherwise (ENOENT, EACCES, ...). Never throws.
int open_input_file(std::ifstream& in, const std::string& path) noexcept;

/// The reason part of an error message for an open_input_file() failure `err`: "is a directory,
/// not a file" for EISDIR, else "cannot open file for reading: <strerror(err)>".
std::string open_error_message(int err);

/// Opens `in` on `path` for binary reading. @throws DataError naming `path` and the reason
/// (open_error_message) on failure.
void open_input_file_or_throw(std::ifstream& in, const std::string& path);

}  // namespace dialtree
