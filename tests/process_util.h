// Running the dialtree binary from tests: start it with stdout / stderr captured in files,
// wait for it, read what it printed. DIALTREE_BINARY_DIR/cli/dialtree must be built first.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_paths.h"

namespace dialtree::testing::process {

/// Path of the dialtree binary under test.
inline std::string binary() {
  return std::string(DIALTREE_BINARY_DIR) + "/cli/dialtree";
}

/// Whole contents of a file ("" if missing).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Writes `bytes` to `path`.
inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// How a dialtree process ended and what it printed.
struct Result {
  int status = -1;  ///< exit status, or -signal if killed
  std::string out, err;
};

/// Starts dialtree with `args` in `cwd`, stdout and stderr to files in `io`; returns the pid.
inline pid_t start(const std::vector<std::string>& args, const std::string& cwd,
                   const dialtree::testing::TempDir& io) {
  const std::string out = io.file("stdout"), err = io.file("stderr");
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(120);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) ::_exit(121);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<char*> argv;
    std::string bin = binary();
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(122);
  }
  return pid;
}

/// Waits for `pid` and collects its status and output.
inline Result finish(pid_t pid, const dialtree::testing::TempDir& io) {
  Result r;
  int ws = 0;
  ::waitpid(pid, &ws, 0);
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? -WTERMSIG(ws) : -1000;
  r.out = slurp(io.file("stdout"));
  r.err = slurp(io.file("stderr"));
  return r;
}

/// start() + finish() in a fresh output folder.
inline Result run(const std::vector<std::string>& args, const std::string& cwd) {
  dialtree::testing::TempDir io;
  return finish(start(args, cwd, io), io);
}

/// Kills (SIGKILL) and reaps a child on scope exit unless release()d, so a failed ASSERT never
/// leaves a server process running.
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int ws = 0;
      ::waitpid(pid_, &ws, 0);
    }
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  /// The child is waited for elsewhere (finish()).
  void release() { pid_ = -1; }

 private:
  pid_t pid_;
};

}  // namespace dialtree::testing::process
