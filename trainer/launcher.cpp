#include "trainer/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <fmt/core.h>

#include "trainer/health.h"
#include "trainer/run_dir.h"  // newest_checkpoint

namespace dialtree::trainer {

namespace fs = std::filesystem;

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("cannot bind a loopback port: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    return fmt::format("exited with status {}{}", code,
                       code == kExitHang ? " (its hang watchdog fired)" : "");
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return fmt::format("was killed by signal {}{}", sig,
                       name != nullptr ? fmt::format(" (SIG{})", name) : std::string());
  }
  return fmt::format("ended with wait status {}", status);
}

namespace {

// One launch of the group. Returns the job status; `failure` receives the first non-graceful
// failure ("rank 1 was killed by signal 9 (SIGKILL)"), empty when there was none.
int run_group(const LaunchOptions& o, int nproc, const std::vector<std::string>& args,
              bool with_fault, const std::function<int()>& stop_signal,
              const std::function<bool()>& force_stop, std::string* failure, int* failed_code) {
  const int port = free_loopback_port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nproc; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t p : pids) ::kill(p, SIGKILL);
      throw std::runtime_error("--nproc-per-node: fork failed");
    }
    if (pid == 0) {
      // Own process group: a terminal's Ctrl-C reaches the launcher only, which forwards it once
      // (a second signal means "stop at once"). Killed with the launcher, never orphaned.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() == 1) std::_Exit(128 + SIGKILL);
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      if (!with_fault) ::unsetenv(kFaultEnv);
      std::vector<std::string> argv_s = {"dialtree"};
      argv_s.insert(argv_s.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& s : argv_s) argv.push_back(s.data());
      argv.push_back(nullptr);
      ::execv(o.program.c_str(), argv.data());
      std::_Exit(127);
    }
    pids.push_back(pid);
  }
  int status_out = 0;
  int forwarded = 0;
  std::size_t running = pids.size();
  while (running > 0) {
    if (const int sig = stop_signal ? stop_signal() : 0; sig != 0 && forwarded == 0) {
      for (pid_t p : pids) {
        if (p > 0) ::kill(p, sig);
      }
      forwarded = sig;
    }
    if (forwarded != 0 && force_stop && force_stop()) {
      for (pid_t p : pids) {
        if (p > 0) ::kill(p, SIGKILL);
      }
    }
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    int rank = -1;
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (pids[i] == done) rank = static_cast<int>(i), pids[i] = -1;
    }
    if (rank < 0) continue;  // not one of ours
    --running;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && status_out == 0) {
      status_out = code;
      // A stop the user asked for: the rank exits with 128 + the signal, or is killed by the
      // second signal.
      const bool graceful = forwarded != 0 && (code == 128 + forwarded || code == 128 + SIGKILL);
      if (graceful) status_out = 128 + forwarded;
      if (!graceful) {
        *failure = fmt::format("rank {} {}", rank, describe_exit(status));
        *failed_code = code;
        for (pid_t p : pids) {
          if (p > 0) ::kill(p, SIGKILL);
        }
      }
    }
  }
  return status_out;
}

}  // namespace

int launch_local_workers(const LaunchOptions& o, const std::function<int()>& stop_signal,
                         const std::function<bool()>& force_stop,
                         const std::function<void(const std::string&)>& log) {
  std::vector<std::string> args = o.args;
  // Checkpoints older than the job belong to another run in the same output_dir.
  const fs::file_time_type job_start = fs::file_time_type::clock::now();
  int nproc = o.nproc;
  int accumulation = o.gradient_accumulation_steps;
  for (int attempt = 0;; ++attempt) {
    std::string failure;
    int failed_code = 0;
    const int status =
        run_group(o, nproc, args, attempt == 0, stop_signal, force_stop, &failure, &failed_code);
    if (failure.empty()) return status;
    const bool stopping = stop_signal && stop_signal() != 0;
    if (failed_code == 2 || stopping || attempt >= o.max_restarts) {
      if (log) {
        log(fmt::format("error: {}; stopped the other ranks{}", failure,
                        o.max_restarts > 0 && attempt >= o.max_restarts
                            ? fmt::format(" (no restart left of --max-restarts {})", o.max_restarts)
                            : ""));
      }
      return status;
    }
    const std::string ckpt = newest_checkpoint(o.output_dir, job_start);
    if (log) {
      log(fmt::format("error: {}; stopped the other ranks; restart {} of {} from {}", failure,
                      attempt + 1, o.max_restarts,
                      ckpt.empty() ? std::string("step 0 (no checkpoint yet)") : ckpt));
    }
    args.push_back("resume_from_checkpoint=" + ckpt);  // later overrides win; empty = step 0
    if (o.exclude_failed_rank && nproc > 1) {
      const long long micro = static_cast<long long>(accumulation) * nproc;
      if (micro % (nproc - 1) == 0) {
        accumulation = static_cast<int>(micro / (nproc - 1));
        --nproc;
        args.push_back("gradient_accumulation_steps=" + std::to_string(accumulation));
        if (log) {
          log(
              fmt::format("excluding the failed rank: {} rank{} with gradient_accumulation_steps "
                          "{}, the same {} micro-batches per step",
                          nproc, nproc == 1 ? "" : "s", accumulation, micro));
        }
      } else if (log) {
        log(
            fmt::format("cannot exclude the failed rank: {} ranks cannot share {} micro-batches "
                        "per step evenly; restarting with {}",
                        nproc - 1, micro, nproc));
      }
    }
  }
}

}  // namespace dialtree::trainer
