// Atomic file writes: write to a temporary file in the same directory, flush, then rename over
// the target, so a reader never sees a half-written file and a crash never loses the old one.
//
// Targets are checked first (resolve_output_path): an existing symbolic link is followed, so the
// file it points to is replaced and the link stays; anything that exists and is not a regular
// file (a device such as /dev/full, a FIFO, a socket, a directory) is refused rather than
// replaced by a regular file. Temporary paths are registered with common/temp_cleanup.h, so an
// interrupted process leaves none behind once install_temp_cleanup_signal_handlers() is active.
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

namespace dialtree {

/// The path a write to `target` must replace: `target` itself when it does not exist or is a
/// regular file; the final target of a symbolic link (followed through several links, relative
/// links resolved against the link's folder; a dangling link gives the path it points to).
/// @throws std::invalid_argument if `target` is empty, or exists (after following links) and is
///   not a regular file ("is a character device", "is a directory", ...), or has a link loop;
///   std::runtime_error (with the OS reason) if it cannot be examined.
std::filesystem::path resolve_output_path(const std::filesystem::path& target);

/// The folder that an output path names, resolved as the kernel resolves it: made absolute,
/// its leading components that exist made canonical (symbolic links and ".." followed on the
/// disk, not as text: "link/../x" is x beside the link's target), the components that do not
/// exist yet appended; "." components and a trailing separator dropped. Textual resolution
/// ("missing/../x" -> "x") would name a folder the user did not, and the writers that replace a
/// folder as a whole would replace it (docs/failure-cases.md B9).
/// @throws std::invalid_argument if `target` is empty, or ".." follows a component that does
///   not exist (the kernel cannot resolve it); std::runtime_error with the OS reason if an
///   existing prefix cannot be resolved.
std::filesystem::path resolve_output_folder(const std::filesystem::path& target);

/// True if `a` and `b` both exist and are the same file (std::filesystem::equivalent: the same
/// device and inode, so hard links, symbolic links and different spellings all count). False when
/// either does not exist or cannot be examined. Never throws.
bool is_same_file(const std::filesystem::path& a, const std::filesystem::path& b) noexcept;

/// Flushes `path` (a file, or a folder's entries) to stable storage with fsync(2), so that a
/// rename published after it cannot outlive the data after a power loss. Folders whose file
/// system cannot sync them (EINVAL) are accepted. @throws std::runtime_error naming the path
/// and the OS reason if it cannot be opened or synced.
void sync_path(const std::filesystem::path& path);

/// sync_path() on every regular file below `dir` and on every folder, `dir` included: what a
/// staged folder needs before the rename that publishes it (checkpoints).
/// @throws std::runtime_error as sync_path().
void sync_tree(const std::filesystem::path& dir);

/// An output file that appears under its final name only on commit().
/// commit() syncs the file before the rename and its folder after it (sync_path).
/// Destroying it without commit() removes the temporary file and leaves the target untouched.
class AtomicFile {
 public:
  /// Resolves `target` (resolve_output_path) and creates `<resolved>.tmp.<pid>.<n>` beside it for
  /// binary writing (registered for removal on a signal).
  /// @throws std::invalid_argument for a refused target (see resolve_output_path);
  ///   std::runtime_error naming the file and the OS reason if the temporary file cannot be
  ///   created.
  explicit AtomicFile(std::filesystem::path target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// The stream to write to. A write error sets its badbit; commit() reports it.
  std::ostream& stream() { return *out_; }
  /// Flushes and closes the temporary file, gives it the permission bits of the file it replaces
  /// (if any), and renames it onto the resolved target.
  /// @throws std::runtime_error "write error on '<target>': <OS reason>" (e.g. "No space left on
  ///   device"), or naming the close / rename failure with its reason.
  void commit();

  /// The path that commit() replaces (the target with symbolic links followed).
  const std::filesystem::path& resolved_target() const { return target_; }
  /// The temporary file being written.
  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  class FdBuf;
  void discard() noexcept;

  std::filesystem::path requested_, target_, temp_;
  std::unique_ptr<FdBuf> buf_;
  std::unique_ptr<std::ostream> out_;
  int cleanup_slot_ = -1;
  bool done_ = false;
};

/// Writes `content` to `target` atomically. @throws as AtomicFile and AtomicFile::commit().
void write_file_atomic(const std::filesystem::path& target, std::string_view content);

/// An output directory that appears (or replaces an existing directory) as a whole, only on
/// commit(): files are written into a temporary directory `<resolved>.tmp.<pid>.<n>` beside the
/// target, which is then swapped in with one rename. Destroying it without commit() removes the
/// temporary directory and leaves the target untouched. Only flat directories (no sub-folders)
/// are supported.
class AtomicDirectory {
 public:
  /// Resolves `target` with resolve_output_folder (so "tok/" and "." name the folder itself),
  /// then like resolve_output_path, but an existing target
  /// (after following links) must be a directory, and the root directory is refused; creates the
  /// target's missing parent folders and the temporary directory (registered for removal on a
  /// signal), so an unwritable place fails here, before any work is done.
  /// @throws std::invalid_argument if `target` is empty, exists and is not a directory, or is
  ///   refused by resolve_output_folder; std::runtime_error with the OS reason if a folder
  ///   cannot be created.
  explicit AtomicDirectory(std::filesystem::path target);
  ~AtomicDirectory();
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;

  /// Path of the file `name` inside the temporary directory, registered for removal on a
  /// signal; write it with AtomicFile / write_file_atomic. @throws std::invalid_argument if
  /// `name` is not a plain file name.
  std::filesystem::path file(const std::string& name);
  /// Moves the temporary directory onto the target: a plain rename if the target does not
  /// exist, else an atomic exchange (renameat2 RENAME_EXCHANGE; on file systems without it the
  /// old directory is first moved aside) after which the old directory is deleted. The new
  /// directory keeps the permission bits of the one it replaces.
  /// @throws std::runtime_error naming the paths and the OS reason.
  void commit();

  /// The directory that commit() replaces (the target with symbolic links followed).
  const std::filesystem::path& resolved_target() const { return target_; }
  /// The temporary directory being filled.
  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  void discard() noexcept;

  std::filesystem::path target_, temp_;
  int cleanup_slot_ = -1;
  std::vector<int> file_slots_;
  bool done_ = false;
};

}  // namespace dialtree
