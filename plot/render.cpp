#include "plot/render.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include <fmt/core.h>

#include "common/temp_cleanup.h"

extern char** environ;

namespace dialtree::plot {

namespace fs = std::filesystem;

namespace {

std::runtime_error not_installed(const std::string& program) {
  return std::runtime_error(fmt::format(
      "cannot run '{}': not found. `dialtree plot` draws its figures with gnuplot; install "
      "Debian's gnuplot-nox package (apt-get install gnuplot-nox; scripts/setup.sh does)",
      program));
}

// Runs `argv` with stdin from /dev/null and stdout + stderr into `log`; returns the exit status
// (128 + N for a signal). @throws not_installed() when the program is missing.
int run_program(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == ENOENT) throw not_installed(argv[0]);
  if (rc != 0) {
    throw std::runtime_error(fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw std::runtime_error(fmt::format("waiting for '{}': {}", argv[0], std::strerror(errno)));
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A hidden work folder inside the output folder (so images are renamed into place on the same
// file system), registered for removal on Ctrl-C, removed with everything in it on destruction.
class WorkFolder {
 public:
  explicit WorkFolder(const fs::path& out_dir, const std::string& stem) {
    std::string templ = (out_dir / (".plot-" + stem + ".XXXXXX")).string();
    if (::mkdtemp(templ.data()) == nullptr) {
      throw std::runtime_error(fmt::format("cannot create a work folder in '{}': {}",
                                           out_dir.string(), std::strerror(errno)));
    }
    path_ = templ;
    slots_.push_back(register_temp_path(path_.c_str(), TempKind::Directory));
  }
  ~WorkFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
    for (const int slot : slots_) unregister_temp_path(slot);
  }
  WorkFolder(const WorkFolder&) = delete;
  WorkFolder& operator=(const WorkFolder&) = delete;

  /// The path of `name` inside, registered for removal on a signal.
  fs::path file(const std::string& name) {
    const fs::path p = path_ / name;
    slots_.push_back(register_temp_path(p.c_str(), TempKind::File));
    return p;
  }
  /// Writes `content` to `name` inside. @throws std::runtime_error naming the file.
  fs::path write(const std::string& name, const std::string& content) {
    const fs::path p = file(name);
    std::ofstream out(p, std::ios::binary);
    out << content;
    out.close();
    if (!out) {
      throw std::runtime_error(
          fmt::format("cannot write '{}': {}", p.string(), std::strerror(errno)));
    }
    return p;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  std::vector<int> slots_;
};

}  // namespace

std::string gnuplot_program(const Figure& figure, const RenderOptions& options, bool pngcairo) {
  std::string s;
  if (options.png) {
    s += fmt::format("set terminal {} size {},{} noenhanced font 'sans,10'\n",
                     pngcairo ? "pngcairo" : "png", figure.width, figure.height);
    s += fmt::format("set output {}\n{}set output\n", gnuplot_quote(figure.name + ".png"),
                     figure.script);
  }
  if (options.svg) {
    s += fmt::format(
        "set terminal svg size {},{} dynamic noenhanced font 'sans,11' background '#ffffff'\n",
        figure.width, figure.height);
    s += fmt::format("set output {}\n{}set output\n", gnuplot_quote(figure.name + ".svg"),
                     figure.script);
  }
  return s;
}

bool has_pngcairo(const std::string& program) {
  static std::mutex mutex;
  static std::map<std::string, bool> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(program);
  if (it != known.end()) return it->second;
  const bool ok = run_program({program, "-e", "set terminal pngcairo"}, "/dev/null") == 0;
  known[program] = ok;
  return ok;
}

Rendered render(const Figure& figure, const fs::path& out_dir, const RenderOptions& options) {
  const bool pngcairo = options.png && has_pngcairo(options.gnuplot);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("cannot create the output folder '{}': {}", out_dir.string(), ec.message()));
  }
  WorkFolder work(out_dir, figure.name);
  for (const auto& d : figure.data) work.write(d.name, d.content);
  const std::string program = "cd " + gnuplot_quote(fs::absolute(work.path()).string()) + "\n" +
                              gnuplot_program(figure, options, pngcairo);
  const fs::path script = work.write(figure.name + ".gp", program);
  const fs::path log = work.file("gnuplot.log");
  std::vector<std::string> exts;
  if (options.png) exts.push_back("png");
  if (options.svg) exts.push_back("svg");
  for (const auto& ext : exts) work.file(figure.name + "." + ext);

  const int status = run_program({options.gnuplot, script.string()}, log.string());
  const std::string printed = slurp(log);
  if (status != 0) {
    throw std::runtime_error(fmt::format("gnuplot failed on figure '{}' (exit status {}):\n{}",
                                         figure.name, status, printed));
  }
  Rendered out;
  out.warnings = printed;
  for (const auto& ext : exts) {
    const fs::path made = work.path() / (figure.name + "." + ext);
    if (!fs::is_regular_file(made, ec) || fs::file_size(made, ec) == 0) {
      throw std::runtime_error(
          fmt::format("gnuplot wrote no {} image for figure '{}':\n{}", ext, figure.name, printed));
    }
    const fs::path target = out_dir / (figure.name + "." + ext);
    fs::rename(made, target, ec);
    if (ec) {
      throw std::runtime_error(fmt::format("cannot write '{}': {}", target.string(), ec.message()));
    }
    out.files.push_back(target);
  }
  return out;
}

}  // namespace dialtree::plot
