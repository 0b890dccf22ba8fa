// Removal of in-progress temporary files when the process is interrupted (Ctrl-C, SIGTERM,
// SIGHUP). AtomicFile and AtomicDirectory register their temporary paths here while they exist;
// the signal handler installed by install_temp_cleanup_signal_handlers() unlinks whatever is
// registered, then lets the signal take its default action (the process dies by that signal, so
// the shell sees the usual 130 / 143 status).
//
// The registry is a fixed-size table of fixed-size path buffers, written and read with lock-free
// atomics only, so the handler is async-signal-safe (it calls unlink(), rmdir(), sigaction() and
// raise() only). Paths that do not fit (too long, table full) are simply not registered: their
// files are still removed by the normal destructors, just not on a signal.
#pragma once

#include <cstddef>

namespace dialtree {

/// Maximum number of temporary paths registered at once.
inline constexpr std::size_t kMaxTempPaths = 64;
/// Longest registrable path, in bytes, without the terminating NUL.
inline constexpr std::size_t kMaxTempPathBytes = 4095;

/// What a registered path is: a file is unlink()ed; a directory is rmdir()ed after every
/// registered file is gone (so register the files created inside it too).
enum class TempKind { File, Directory };

/// Registers `path` for removal on a signal. Thread-safe and async-signal-safe.
/// @return a slot handle for unregister_temp_path(), or -1 if the path is too long or the table
///   is full (then nothing is registered).
int register_temp_path(const char* path, TempKind kind = TempKind::File) noexcept;

/// Forgets the slot returned by register_temp_path(); -1 is ignored. Call it once the path is
/// renamed into place or removed. Thread-safe and async-signal-safe.
void unregister_temp_path(int slot) noexcept;

/// Number of paths registered now (for tests).
std::size_t registered_temp_path_count() noexcept;

/// Installs the cleanup handler for SIGINT, SIGTERM and SIGHUP with sigaction() (a signal that
/// is ignored at the time of the call, e.g. SIGHUP under nohup, stays ignored). The handler
/// unlinks the registered files, removes the registered directories, restores the default action
/// and re-raises the signal.
///
/// Later sigaction() / signal() calls for the same signals simply replace this handler (it is
/// not chained): a subcommand with its own graceful-stop handler (e.g. `dialtree train`
/// finishing the step and saving a checkpoint on SIGINT/SIGTERM) installs it after this one, and
/// its temporary files are then removed by the destructors of AtomicFile / AtomicDirectory on the
/// way out instead. Idempotent. @throws std::runtime_error if sigaction() fails.
void install_temp_cleanup_signal_handlers();

}  // namespace dialtree
