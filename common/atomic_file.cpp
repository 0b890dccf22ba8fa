#include "common/atomic_file.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/temp_cleanup.h"

namespace dialtree {

namespace fs = std::filesystem;

namespace {

std::atomic<unsigned> g_counter{0};

std::string os_error(int err) {
  return std::strerror(err);
}

// "<path>.tmp.<pid>.<n>": unique within this process, and across processes by the pid.
fs::path temp_name(const fs::path& target, const char* kind) {
  fs::path p = target;
  p += std::string(kind) + std::to_string(::getpid()) + "." + std::to_string(g_counter++);
  return p;
}

// What a non-regular file is, for "is a ..." messages.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

// `target` with symbolic links followed; `st` receives lstat() of the result and `exists`
// whether there is anything there.
fs::path follow_links(const fs::path& target, struct stat& st, bool& exists) {
  if (target.empty()) throw std::invalid_argument("the output path is empty");
  fs::path p = target;
  for (int depth = 0; depth < 40; ++depth) {
    if (::lstat(p.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ENOENT) {
        exists = false;
        return p;
      }
      throw std::runtime_error("cannot examine output path '" + p.string() + "': " + os_error(err));
    }
    if (!S_ISLNK(st.st_mode)) {
      exists = true;
      return p;
    }
    std::error_code ec;
    const fs::path link = fs::read_symlink(p, ec);
    if (ec) {
      throw std::runtime_error("cannot read symbolic link '" + p.string() + "': " + ec.message());
    }
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  throw std::invalid_argument("output path '" + target.string() +
                              "': too many levels of symbolic links");
}

std::string refused(const fs::path& target, const fs::path& resolved, const struct stat& st,
                    const char* wanted) {
  std::string s = "output path '" + target.string() + "'";
  if (resolved != target) s += " (a link to '" + resolved.string() + "')";
  return s + " is " + file_kind(st.st_mode) + ", not " + wanted + "; refusing to replace it";
}

}  // namespace

fs::path resolve_output_path(const fs::path& target) {
  struct stat st;
  bool exists = false;
  fs::path p = follow_links(target, st, exists);
  if (exists && !S_ISREG(st.st_mode)) {
    throw std::invalid_argument(refused(target, p, st, "a regular file"));
  }
  // Some links name no path that can be followed by hand (/dev/stdout -> /proc/self/fd/1 ->
  // "pipe:[123]"), but the kernel resolves them: a FIFO or a terminal there is refused too.
  if (!exists && ::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw std::invalid_argument(refused(target, target, st, "a regular file"));
  }
  return p;
}

fs::path resolve_output_folder(const fs::path& target) {
  if (target.empty()) throw std::invalid_argument("the output folder is empty");
  std::error_code ec;
  const fs::path abs = fs::absolute(target, ec);
  if (ec) {
    throw std::runtime_error("cannot make output folder '" + target.string() +
                             "' absolute: " + ec.message());
  }
  fs::path existing = abs.root_path(), rest;
  bool missing = false;
  for (const fs::path& part : abs.relative_path()) {
    if (part.empty() || part == ".") continue;
    if (!missing) {
      const fs::path next = existing / part;
      if (fs::exists(next, ec)) {  // follows links, as the kernel does at each component
        existing = next;
        continue;
      }
      missing = true;
    }
    if (part == "..") {
      throw std::invalid_argument("output folder '" + target.string() + "': '..' follows '" +
                                  (existing / rest).string() +
                                  "', which does not exist; name the folder without it");
    }
    rest /= part;
  }
  fs::path resolved = fs::canonical(existing, ec);
  if (ec) {
    throw std::runtime_error("cannot resolve '" + existing.string() + "' (of output folder '" +
                             target.string() + "'): " + ec.message());
  }
  return rest.empty() ? resolved : resolved / rest;
}

bool is_same_file(const fs::path& a, const fs::path& b) noexcept {
  std::error_code ec;
  if (!fs::exists(a, ec) || ec || !fs::exists(b, ec) || ec) return false;
  const bool same = fs::equivalent(a, b, ec);
  return !ec && same;
}

// ---- AtomicFile -----------------------------------------------------------------------------

/// A write-only stream buffer over a file descriptor that remembers the errno of the first
/// failed write (std::ofstream loses it).
class AtomicFile::FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd), buf_(1 << 16) { reset(); }
  ~FdBuf() override { close_fd(); }

  int fd() const { return fd_; }
  int error() const { return err_; }
  /// Closes the descriptor; returns 0 or the errno of close().
  int close_fd() {
    if (fd_ < 0) return 0;
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? 0 : errno;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!flush_buffer()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n < static_cast<std::streamsize>(buf_.size())) return std::streambuf::xsputn(s, n);
    if (!flush_buffer() || !write_all(s, static_cast<std::size_t>(n))) return 0;
    return n;
  }
  int sync() override { return flush_buffer() ? 0 : -1; }

 private:
  void reset() { setp(buf_.data(), buf_.data() + buf_.size()); }
  bool write_all(const char* p, std::size_t n) {
    if (err_ != 0) return false;
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        err_ = errno;
        return false;
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }
  bool flush_buffer() {
    const std::size_t n = static_cast<std::size_t>(pptr() - pbase());
    const bool ok = write_all(pbase(), n);
    reset();
    return ok;
  }

  int fd_;
  std::vector<char> buf_;
  int err_ = 0;
};

AtomicFile::AtomicFile(fs::path target) : requested_(std::move(target)) {
  target_ = resolve_output_path(requested_);
  temp_ = temp_name(target_, ".tmp.");
  cleanup_slot_ = register_temp_path(temp_.c_str(), TempKind::File);
  const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    unregister_temp_path(cleanup_slot_);
    throw std::runtime_error("cannot create '" + temp_.string() + "' (for '" + requested_.string() +
                             "'): " + os_error(err));
  }
  buf_ = std::make_unique<FdBuf>(fd);
  out_ = std::make_unique<std::ostream>(buf_.get());
}

AtomicFile::~AtomicFile() {
  if (!done_) discard();
}

void AtomicFile::discard() noexcept {
  if (buf_) buf_->close_fd();
  ::unlink(temp_.c_str());
  unregister_temp_path(cleanup_slot_);
  cleanup_slot_ = -1;
  done_ = true;
}

void sync_path(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error("cannot open '" + path.string() + "' to sync it: " + os_error(errno));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) {
    throw std::runtime_error("cannot sync '" + path.string() + "': " + os_error(err));
  }
}

void sync_tree(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const auto type = it->symlink_status(ec).type();
    if (type == fs::file_type::regular || type == fs::file_type::directory) sync_path(it->path());
  }
  if (ec) {
    throw std::runtime_error("cannot list '" + dir.string() + "' to sync it: " + ec.message());
  }
  sync_path(dir);
}

namespace {

// The folder holding `p` ("." for a bare name).
fs::path folder_of(const fs::path& p) {
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

}  // namespace

void AtomicFile::commit() {
  if (done_) throw std::logic_error("AtomicFile::commit() called twice");
  out_->flush();
  if (!*out_ || buf_->error() != 0) {
    const int err = buf_->error() != 0 ? buf_->error() : EIO;
    discard();
    throw std::runtime_error("write error on '" + requested_.string() + "': " + os_error(err));
  }
  // Keep the permission bits of the file being replaced.
  struct stat st;
  if (::stat(target_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    if (::fchmod(buf_->fd(), st.st_mode & 07777) != 0) {
      const int err = errno;
      discard();
      throw std::runtime_error("cannot set the permissions of '" + temp_.string() +
                               "': " + os_error(err));
    }
  }
  if (::fsync(buf_->fd()) != 0 && errno != EINVAL) {
    const int err = errno;
    discard();
    throw std::runtime_error("cannot sync '" + temp_.string() + "': " + os_error(err));
  }
  if (const int err = buf_->close_fd(); err != 0) {
    discard();
    throw std::runtime_error("write error on '" + requested_.string() +
                             "' (close): " + os_error(err));
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    discard();
    throw std::runtime_error("cannot rename '" + temp_.string() + "' to '" + target_.string() +
                             "': " + os_error(err));
  }
  unregister_temp_path(cleanup_slot_);
  cleanup_slot_ = -1;
  done_ = true;
  sync_path(folder_of(target_));  // the rename itself
}

void write_file_atomic(const fs::path& target, std::string_view content) {
  AtomicFile f(target);
  f.stream().write(content.data(), static_cast<std::streamsize>(content.size()));
  f.commit();
}

// ---- AtomicDirectory ------------------------------------------------------------------------

AtomicDirectory::AtomicDirectory(fs::path target) {
  // "tok/", "." and "sub/.." name the folder itself: resolve it without a trailing separator,
  // so that the temporary folder lands beside it, never inside.
  const fs::path normal = resolve_output_folder(target);
  if (!normal.has_relative_path()) {
    throw std::invalid_argument("output folder '" + target.string() +
                                "' is the root directory; refusing to replace it");
  }
  struct stat st;
  bool exists = false;
  target_ = follow_links(normal, st, exists);
  if (exists && !S_ISDIR(st.st_mode)) {
    throw std::invalid_argument(refused(target, target_, st, "a directory"));
  }
  const fs::path parent = target_.parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) {
      throw std::runtime_error("cannot create folder '" + parent.string() + "': " + ec.message());
    }
  }
  temp_ = temp_name(target_, ".tmp.");
  cleanup_slot_ = register_temp_path(temp_.c_str(), TempKind::Directory);
  if (::mkdir(temp_.c_str(), 0777) != 0) {
    const int err = errno;
    unregister_temp_path(cleanup_slot_);
    throw std::runtime_error("cannot create '" + temp_.string() + "' (for '" + target.string() +
                             "'): " + os_error(err));
  }
}

AtomicDirectory::~AtomicDirectory() {
  if (!done_) discard();
}

void AtomicDirectory::discard() noexcept {
  std::error_code ec;
  fs::remove_all(temp_, ec);
  for (int slot : file_slots_) unregister_temp_path(slot);
  file_slots_.clear();
  unregister_temp_path(cleanup_slot_);
  cleanup_slot_ = -1;
  done_ = true;
}

fs::path AtomicDirectory::file(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    throw std::invalid_argument("AtomicDirectory::file: '" + name + "' is not a plain file name");
  }
  fs::path p = temp_ / name;
  file_slots_.push_back(register_temp_path(p.c_str(), TempKind::File));
  return p;
}

void AtomicDirectory::commit() {
  if (done_) throw std::logic_error("AtomicDirectory::commit() called twice");
  sync_tree(temp_);  // the files and the folder, before the rename publishes them
  struct stat st;
  const bool replace = ::lstat(target_.c_str(), &st) == 0;
  if (replace) {
    if (!S_ISDIR(st.st_mode)) {
      throw std::runtime_error("cannot replace '" + target_.string() + "': it is now " +
                               file_kind(st.st_mode));
    }
    ::chmod(temp_.c_str(), st.st_mode & 07777);  // best effort: keep the old permission bits
    if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0) {
      const int err = errno;
      if (err != EINVAL && err != ENOSYS && err != ENOTSUP) {
        throw std::runtime_error("cannot replace '" + target_.string() + "' with '" +
                                 temp_.string() + "': " + os_error(err));
      }
      // No atomic exchange on this file system: move the old directory aside first.
      const fs::path aside = temp_name(target_, ".old.");
      if (::rename(target_.c_str(), aside.c_str()) != 0) {
        const int e2 = errno;
        throw std::runtime_error("cannot move '" + target_.string() + "' aside: " + os_error(e2));
      }
      if (::rename(temp_.c_str(), target_.c_str()) != 0) {
        const int e2 = errno;
        ::rename(aside.c_str(), target_.c_str());  // put the old one back
        throw std::runtime_error("cannot rename '" + temp_.string() + "' to '" + target_.string() +
                                 "': " + os_error(e2));
      }
      std::error_code ec;
      fs::remove_all(aside, ec);
    } else {
      std::error_code ec;
      fs::remove_all(temp_, ec);  // the old directory, now under the temporary name
    }
  } else if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    throw std::runtime_error("cannot rename '" + temp_.string() + "' to '" + target_.string() +
                             "': " + os_error(err));
  }
  for (int slot : file_slots_) unregister_temp_path(slot);
  file_slots_.clear();
  unregister_temp_path(cleanup_slot_);
  cleanup_slot_ = -1;
  done_ = true;
  sync_path(folder_of(target_));  // the rename itself
}

}  // namespace dialtree
