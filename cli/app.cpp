#include "cli/app.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/blas_kernels.h"
#include "common/check.h"
#include "common/error.h"
#include "common/temp_cleanup.h"
#include "common/text_distance.h"

namespace dialtree::cli {

namespace {

int report(const std::exception& e, int status) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return status;
}

// The option a value error is about when the value came from its environment twin (the flag
// is not on the command line, the variable is set): CLI11's own message names only the flag,
// so a user who never typed it cannot see where the value came from. nullptr otherwise.
// Searches the chosen subcommands at every depth (`serve`, and `eval dialoglue` in a group).
const CLI::Option* env_source_of(const CLI::App& app, const CLI::ParseError& e, int argc,
                                 char** argv) {
  const std::string what = e.what();
  for (const CLI::App* cmd : app.get_subcommands()) {
    if (const CLI::Option* nested = env_source_of(*cmd, e, argc, argv)) return nested;
    for (const CLI::Option* opt : cmd->get_options()) {
      const std::string& env = opt->get_envname();
      const std::string flag = opt->get_name();  // "--port"
      if (env.empty() || std::getenv(env.c_str()) == nullptr ||
          what.find(flag) == std::string::npos) {
        continue;
      }
      bool on_command_line = false;
      for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        on_command_line = on_command_line || arg == flag || arg.rfind(flag + "=", 0) == 0;
      }
      if (!on_command_line) return opt;
    }
  }
  return nullptr;
}

// CLI11 2.1 converts integer options with strtoull/strtoll in base 0: "-1" wraps to 2^64 - 1
// for an unsigned option, a value past 2^64 saturates, and "010" reads as octal 8. Every integer
// option of every subcommand takes plain decimal only, in the range of 64 bits (CLI11 then
// refuses what its own type cannot hold); the environment twins go through the same check.
void require_decimal_integers(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    // "INT" or "UINT", followed by ":<description>" per validator with one ("INT:INT in [..]").
    const std::string type = opt->get_type_name();
    const std::string base = type.substr(0, type.find(':'));
    const bool is_unsigned = base == "UINT";
    if (!is_unsigned && base != "INT") continue;
    opt->check(CLI::Validator(
        [is_unsigned](std::string& value) -> std::string {
          const bool negative = !value.empty() && value[0] == '-';
          const std::string digits = negative ? value.substr(1) : value;
          const bool decimal = !digits.empty() &&
                               digits.find_first_not_of("0123456789") == std::string::npos &&
                               (digits.size() == 1 || digits[0] != '0');
          if (!decimal || (negative && is_unsigned)) {
            return std::string("expected ") +
                   (is_unsigned ? "a whole number >= 0" : "a whole number") +
                   " written in decimal, got '" + value + "'";
          }
          errno = 0;
          if (is_unsigned) {
            (void)std::strtoull(value.c_str(), nullptr, 10);
          } else {
            (void)std::strtoll(value.c_str(), nullptr, 10);
          }
          if (errno == ERANGE) return "'" + value + "' is out of range";
          return {};
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    require_decimal_integers(*sub);
  }
}

// The subcommands of `app`, in order.
std::vector<const CLI::App*> commands_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

// "a, b, c": the subcommands' names.
std::string name_list(const CLI::App& app) {
  std::string list;
  for (const CLI::App* sub : commands_of(app)) list += (list.empty() ? "" : ", ") + sub->get_name();
  return list;
}

// CLI11 says "Could not convert: --normalize = maybe" for a bad boolean value; this says what
// is expected, or returns "" for any other error.
std::string boolean_value_message(const CLI::App& app, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::ConversionError*>(&e) == nullptr) return "";
  const std::string what = e.what();
  const std::string prefix = "Could not convert: ";
  const std::size_t eq = what.find(" = ");
  if (what.rfind(prefix, 0) != 0 || eq == std::string::npos) return "";
  const std::string flag = what.substr(prefix.size(), eq - prefix.size());
  const std::string value = what.substr(eq + 3);
  std::vector<const CLI::App*> apps = {&app};
  for (std::size_t i = 0; i < apps.size(); ++i) {
    for (const CLI::App* sub : commands_of(*apps[i])) apps.push_back(sub);
    for (const CLI::Option* opt : apps[i]->get_options()) {
      if (opt->get_name() == flag && opt->get_type_name().rfind("BOOLEAN", 0) == 0) {
        return flag + ": expected true or false, got '" + value + "'";
      }
    }
  }
  return "";
}

// CLI11 answers a word that is no subcommand, where one is required, with "A subcommand is
// required", and a missing one the same way. This names the word, the commands that exist there
// and the closest one (or, with no word, the commands), or returns "" for any other error.
std::string unknown_subcommand_message(const CLI::App& app, int argc, char** argv) {
  const CLI::App* at = &app;
  std::string path = app.get_name();
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (!word.empty() && word[0] == '-') {
      // An option before the command, where one is required: CLI11 would only say that the
      // command is missing, never naming the option it did not know.
      const std::string name = word.substr(0, word.find('='));
      bool known = false;
      for (const CLI::Option* opt : at->get_options()) known = known || opt->check_name(name);
      if (!known && at->get_require_subcommand_min() > 0) {
        return "unknown option '" + name + "' for '" + path +
               "', which needs a command first: " + name_list(*at);
      }
      continue;
    }
    if (word.empty()) continue;
    const std::vector<const CLI::App*> subs = commands_of(*at);
    const auto next = std::find_if(subs.begin(), subs.end(),
                                   [&word](const CLI::App* sub) { return sub->check_name(word); });
    if (next != subs.end()) {
      at = *next;
      path += " " + at->get_name();
      continue;
    }
    if (at->get_require_subcommand_min() == 0 || subs.empty()) return "";
    std::vector<std::string> names;
    for (const CLI::App* sub : subs) names.push_back(sub->get_name());
    const std::string close = closest_name(word, names);
    return "unknown command '" + word + "' for '" + path + "' (commands: " + name_list(*at) + ")" +
           (close.empty() ? "" : "; did you mean '" + close + "'?");
  }
  if (at->get_require_subcommand_min() == 0) return "";
  return "'" + path + "' needs a command: " + name_list(*at);
}

// CLI11 checks required options before it reports words it did not know, so `serve --bogus`
// would say "--model is required". This names the first unknown option of the command the words
// reach (and the closest known one), or returns "".
std::string unknown_option_message(const CLI::App& app, int argc, char** argv) {
  std::vector<const CLI::App*> chain = {&app};
  std::string path = app.get_name();
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return "";
    if (word.size() > 1 && word[0] == '-' && !(word[1] >= '0' && word[1] <= '9')) {
      const std::string name = word.substr(0, word.find('='));
      bool known = false;
      for (const CLI::App* at : chain) {
        for (const CLI::Option* opt : at->get_options()) known = known || opt->check_name(name);
      }
      if (known) continue;
      std::vector<std::string> names;
      for (const CLI::Option* opt : chain.back()->get_options()) {
        for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
      }
      const std::string close = closest_name(name, names);
      return "unknown option '" + name + "' for '" + path + "'" +
             (close.empty() ? "" : "; did you mean '" + close + "'?");
    }
    const std::vector<const CLI::App*> subs = commands_of(*chain.back());
    const auto next = std::find_if(subs.begin(), subs.end(),
                                   [&word](const CLI::App* sub) { return sub->check_name(word); });
    if (next != subs.end()) {
      chain.push_back(*next);
      path += " " + (*next)->get_name();
    }
  }
  return "";
}

}  // namespace

void refuse_overwriting_input(const std::string& out_flag, const std::string& out,
                              const std::string& input_what, const std::string& input) {
  if (is_same_file(out, input)) {
    throw std::invalid_argument(out_flag + " '" + out + "' is the same file as " + input_what +
                                " '" + input + "'; refusing to overwrite an input");
  }
}

CLI::Validator existing_folder(const std::string& what) {
  return CLI::Validator(
      [what](std::string& path) -> std::string {
        std::error_code ec;
        const auto status = std::filesystem::status(path, ec);
        if (status.type() == std::filesystem::file_type::not_found || ec) {
          return "no " + what + " folder at '" + path + "'";
        }
        if (status.type() != std::filesystem::file_type::directory) {
          return "'" + path + "' is a file, not a " + what + " folder";
        }
        return {};
      },
      "");
}

int run_cli(CLI::App& app, int argc, char** argv, const std::function<void()>& before_parse) {
  try {
    // Ctrl-C / SIGTERM / SIGHUP remove the temporary files of unfinished atomic writes. A
    // subcommand may replace these handlers with its own (sigaction() after this point).
    install_temp_cleanup_signal_handlers();
    if (before_parse) before_parse();
    require_decimal_integers(app);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (const CLI::Option* opt = env_source_of(app, e, argc, argv)) {
      const std::string& env = opt->get_envname();
      std::fprintf(stderr, "error: %s=%s (the environment twin of %s): %s\n", env.c_str(),
                   std::getenv(env.c_str()), opt->get_name().c_str(), e.what());
      return 2;
    }
    if (const std::string bad_bool = boolean_value_message(app, e); !bad_bool.empty()) {
      std::fprintf(stderr, "error: %s\nRun with --help for more information.\n", bad_bool.c_str());
      return 2;
    }
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
      std::string unknown = unknown_subcommand_message(app, argc, argv);
      if (unknown.empty()) unknown = unknown_option_message(app, argc, argv);
      if (!unknown.empty()) {
        std::fprintf(stderr, "error: %s\nRun with --help for more information.\n", unknown.c_str());
        return 2;
      }
    }
    // --help and --version come here with status 0 (app.exit prints them); every other
    // parse or usage error is bad usage: status 2 after CLI11's message.
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  } catch (const ExitRequest& e) {
    return e.status();
  } catch (const InternalError& e) {
    std::fprintf(stderr, "error: %s (a bug in dialtree: please report it with this line)\n",
                 e.what());
    return kExitInternalError;
  } catch (const DataError& e) {
    return report(e, 2);
  } catch (const TokenizerError& e) {
    return report(e, 2);
  } catch (const std::invalid_argument& e) {
    return report(e, 2);
  } catch (const std::exception& e) {
    return report(e, 1);
  }
  return 0;
}

int requested_intra_op_threads() {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const char* var : {"DIALTREE_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long parsed = std::strtol(v, &end, 10);
    if (*end != '\0' || parsed < 1 || parsed > cpus) {
      throw std::invalid_argument(std::string(var) + "=" + v + " must be an integer in [1, " +
                                  std::to_string(cpus) + "]");
    }
    return static_cast<int>(parsed);
  }
  return cpus;
}

Route route_for(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "--version") return Route::Light;
  const CommandRow* row = find_command(args);
  // No row: nothing at all, --help, an unknown command; the full parser lists every command.
  if (row == nullptr) return Route::Torch;
  if (row->arguments_need_torch && args.size() > row->path.size()) return Route::Torch;
  return row->route;
}

std::string server_spin_count(const std::vector<std::string>& args,
                              const std::function<const char*(const char*)>& getenv_fn) {
  return env_default_for(args, "GOMP_SPINCOUNT", getenv_fn);
}

std::string training_malloc_conf(const std::vector<std::string>& args,
                                 const std::function<const char*(const char*)>& getenv_fn) {
  return env_default_for(args, "MALLOC_CONF", getenv_fn);
}

int exec_torch_binary(char** argv) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    std::fprintf(stderr, "error: cannot find this executable (/proc/self/exe): %s\n",
                 std::strerror(errno));
    return 1;
  }
  self[n] = '\0';
  std::string path(self);
  path = path.substr(0, path.find_last_of('/') + 1) + "dialtree-torch";

  // A choice already made (DIALTREE_BLAS_KERNELS set, e.g. by the dialtree that started this
  // one) stands, as in ensure_blas_kernels().
  choose_blas_kernels([] { return load_and_inspect_blas().corename; });
  std::vector<std::string> args;
  for (char** a = argv + 1; *a != nullptr; ++a) args.emplace_back(*a);
  if (const CommandRow* row = find_command(args)) {
    for (const EnvDefault& env : row->env) {
      const std::string value =
          env_default_value(env, [](const char* name) { return std::getenv(name); });
      // Overwrite: a variable set to "" that does not count as a choice (MALLOC_CONF) is replaced.
      if (!value.empty()) ::setenv(std::string(env.variable).c_str(), value.c_str(), 1);
    }
  }

  ::execv(path.c_str(), argv);
  std::fprintf(stderr,
               "error: cannot run %s: %s (dialtree runs its tensor commands with the "
               "dialtree-torch executable installed beside it)\n",
               path.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace dialtree::cli

namespace dialtree::cli {

void configure_app(CLI::App& app) {
  app.name("dialtree");
  app.description("dialtree: SPACE-2 style dialog understanding toolkit");
  app.require_subcommand(1);
  app.set_version_flag("--version", DIALTREE_VERSION);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("error: ") + e.what() + "\nRun with --help for more information.\n";
  });
}

std::vector<Registration> light_registrations(std::function<void()> version_details) {
  return {
      {{"sts"}, register_sts},
      {{"tokenizer"}, register_tokenizer},
      {{"print-config"}, register_print_config},
      {{"plot"}, register_plot},
      {{"eval", "score"}, register_eval_score},
      {{"eval", "words"}, register_eval_words},
      {{"version"},
       [details = std::move(version_details)](CLI::App& app) { register_version(app, details); }},
  };
}

}  // namespace dialtree::cli
