#include "common/atomic_file.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <unistd.h>

namespace dialtree {

namespace {
std::atomic<unsigned> g_counter{0};
}

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
  temp_ = target_;
  temp_ += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(g_counter++);
  out_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    throw std::runtime_error("cannot create '" + temp_.string() + "': " + std::strerror(errno));
  }
}

AtomicFile::~AtomicFile() {
  if (!done_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

void AtomicFile::commit() {
  out_.flush();
  if (!out_) throw std::runtime_error("write error on '" + temp_.string() + "'");
  out_.close();
  if (out_.fail()) throw std::runtime_error("close failed on '" + temp_.string() + "'");
  std::error_code ec;
  std::filesystem::rename(temp_, target_, ec);
  if (ec) {
    throw std::runtime_error("cannot rename '" + temp_.string() + "' to '" + target_.string() +
                             "': " + ec.message());
  }
  done_ = true;
}

void write_file_atomic(const std::filesystem::path& target, std::string_view content) {
  AtomicFile f(target);
  f.stream().write(content.data(), static_cast<std::streamsize>(content.size()));
  f.commit();
}

}  // namespace dialtree
