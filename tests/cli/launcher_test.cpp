// The two executables (cli/app.h, docs/performance.md "Two executables"): which command lines
// the light `dialtree` runs itself, that it does not load LibTorch, the BLAS kernel choice it
// hands to dialtree-torch (the user's OPENBLAS_CORETYPE kept, otherwise the CPU's widest kernels
// on a real OpenBLAS), and a clear error when dialtree-torch is missing.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/app.h"
#include "common/blas_kernels.h"
#include "common/cpu_features.h"
#include "process_util.h"
#include "test_paths.h"

namespace dialtree {
namespace {

namespace fs = std::filesystem;
using cli::Route;
using cli::route_for;
using dialtree::testing::TempDir;
using namespace dialtree::testing::process;
using ::testing::HasSubstr;
using ::testing::Not;

// Sets (or, with nullopt, unsets) an environment variable for the scope; the child processes
// of run() inherit it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string capture(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(Launcher, RoutesTorchFreeCommandLinesToItself) {
  using V = std::vector<std::string>;
  for (const V& light :
       {V{"sts", "convert"}, V{"tokenizer", "encode", "--help"}, V{"print-config", "c.yaml"},
        V{"plot", "runs/x"}, V{"eval", "score", "--task", "hwu"}, V{"eval", "words"},
        V{"version"}, V{"--version"}}) {
    EXPECT_EQ(route_for(light), Route::Light) << ::testing::PrintToString(light);
  }
  // Nothing at all goes to the full parser, which lists every command.
  for (const V& torch :
       {V{}, V{"train", "c.yaml"}, V{"embed"}, V{"serve"}, V{"export"}, V{"import-hf"},
        V{"eval", "dialoglue"}, V{"eval", "probe"}, V{"eval"}, V{"eval", "--help"},
        V{"version", "--verbose"}, V{"version", "-v"}, V{"version", "-vv"},
        V{"version", "--verbose=true"}, V{"version", "--verbose=1"}, V{"version", "--bogus"},
        V{"--help"}, V{"-h"}, V{"trian"}}) {
    EXPECT_EQ(route_for(torch), Route::Torch) << ::testing::PrintToString(torch);
  }
}

TEST(Launcher, ServeGetsAShortOpenMpSpinUnlessTheUserChoseOne) {
  using V = std::vector<std::string>;
  std::map<std::string, std::string> env;
  const auto getenv_fn = [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(cli::server_spin_count(V{"serve", "--model", "m"}, getenv_fn), "10000");
  for (const V& other : {V{}, V{"embed"}, V{"train", "c.yaml"}, V{"eval", "dialoglue"}}) {
    EXPECT_EQ(cli::server_spin_count(other, getenv_fn), "") << ::testing::PrintToString(other);
  }
  env["GOMP_SPINCOUNT"] = "300000";  // the user's value stands (and is not overwritten)
  EXPECT_EQ(cli::server_spin_count(V{"serve"}, getenv_fn), "");
  env["GOMP_SPINCOUNT"] = "";  // set, even to nothing: the user's choice
  EXPECT_EQ(cli::server_spin_count(V{"serve"}, getenv_fn), "");
  env.clear();
  env["OMP_WAIT_POLICY"] = "passive";  // so does a wait policy, which sets its own spin
  EXPECT_EQ(cli::server_spin_count(V{"serve"}, getenv_fn), "");
  // Training and fine-tuning keep jemalloc's freed pages (docs/build.md P13); nothing else
  // does, and a MALLOC_CONF of the user's stands.
  env.clear();
  EXPECT_EQ(cli::training_malloc_conf(V{"train", "c.yaml"}, getenv_fn),
            "dirty_decay_ms:-1,muzzy_decay_ms:-1");
  EXPECT_EQ(cli::training_malloc_conf(V{"eval", "dialoglue", "--model", "m"}, getenv_fn),
            "dirty_decay_ms:-1,muzzy_decay_ms:-1");
  for (const V& other : {V{}, V{"serve"}, V{"embed"}, V{"eval"}, V{"eval", "probe"},
                         V{"eval", "pseudo-label"}, V{"dialoglue"}}) {
    EXPECT_EQ(cli::training_malloc_conf(other, getenv_fn), "") << ::testing::PrintToString(other);
  }
  env["MALLOC_CONF"] = "dirty_decay_ms:10000";
  EXPECT_EQ(cli::training_malloc_conf(V{"train", "c.yaml"}, getenv_fn), "");
  env["MALLOC_CONF"] = "";  // set but empty: no choice made
  EXPECT_EQ(cli::training_malloc_conf(V{"train", "c.yaml"}, getenv_fn),
            "dirty_decay_ms:-1,muzzy_decay_ms:-1");
}

TEST(Launcher, TheLightExecutableDoesNotLoadLibTorch) {
  const std::string needed = capture("ldd '" + binary() + "' 2>&1");
  ASSERT_THAT(needed, HasSubstr("libc.so"));
  EXPECT_THAT(needed, Not(HasSubstr("libtorch")));
  EXPECT_THAT(needed, Not(HasSubstr("libblas")));
  EXPECT_TRUE(fs::exists(fs::path(binary()).parent_path() / "dialtree-torch"));
}

TEST(Launcher, VersionAndHelpListEverything) {
  TempDir dir;
  Result r = run({"version"}, dir.path().string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out,
              ::testing::MatchesRegex("dialtree [0-9.]+\nlibtorch [0-9.]+ \\(built with\\)\n"));
  // --help goes to dialtree-torch, so it lists the torch commands and the light ones.
  r = run({"--help"}, dir.path().string());
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* cmd : {"sts", "tokenizer", "print-config", "plot", "eval", "version", "embed",
                          "serve", "export", "import-hf", "train"}) {
    EXPECT_THAT(r.out, HasSubstr(std::string("\n  ") + cmd)) << cmd;
  }
  // Bad thread settings are refused by the light executable too.
  ScopedEnv threads("DIALTREE_NUM_THREADS", "zero");
  r = run({"version"}, dir.path().string());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("DIALTREE_NUM_THREADS=zero must be an integer in [1, "));
}

// The kernel line of `version --verbose`: "blas: OpenBLAS, kernels NAME (TIER), ...".
std::optional<std::pair<std::string, std::string>> kernels_in(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("blas: OpenBLAS, kernels (\\S+) \\(([^)]+)\\)"))) {
    return std::nullopt;
  }
  return std::make_pair(m[1].str(), m[2].str());
}

TEST(Launcher, ChoosesTheCpusWidestOpenBlasKernelsUnlessTheUserSetThem) {
  TempDir dir;
  std::optional<std::pair<std::string, std::string>> chosen;
  {
    ScopedEnv unset("OPENBLAS_CORETYPE", std::nullopt);
    const Result r = run({"version", "--verbose"}, dir.path().string());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("libtorch threads: intra-op "));
    EXPECT_THAT(r.out,
                HasSubstr(std::string("native bf16: ") + (cpu_has_native_bf16() ? "yes" : "no")));
    EXPECT_THAT(r.out, HasSubstr("tensor check: sum(ones(2,2) @ ones(2,2)) = 8\n"));
    chosen = kernels_in(r.out);
    if (!chosen) GTEST_SKIP() << "LibTorch's BLAS is not OpenBLAS here:\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("blas kernel choice: OpenBLAS chose "));
    // Whatever OpenBLAS picked by itself, the process runs the CPU's widest kernel set.
    EXPECT_EQ(chosen->second, std::string(to_string(cpu_kernel_tier(host_cpu())))) << r.out;
  }
  {
    // The user's value is kept: Sandybridge (AVX) runs on any x86-64 CPU with AVX; on one
    // without, ask for Prescott.
    const std::string wanted =
        cpu_kernel_tier(host_cpu()) >= KernelTier::Avx ? "Sandybridge" : "Prescott";
    ScopedEnv user("OPENBLAS_CORETYPE", wanted);
    const Result r = run({"version", "--verbose"}, dir.path().string());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("blas kernel choice: OPENBLAS_CORETYPE=" + wanted +
                                 " set by the user: kept\n"));
    const auto kept = kernels_in(r.out);
    ASSERT_TRUE(kept) << r.out;
    EXPECT_EQ(kept->first, wanted);
  }
}

TEST(Launcher, DialtreeTorchStartedDirectlyChoosesOnceAndRespectsAChoiceMade) {
  const std::string torch = (fs::path(binary()).parent_path() / "dialtree-torch").string();
  // Started directly, with nothing decided: it decides itself, re-executing at most once (a
  // loop would never print).
  std::string out = capture("env -u OPENBLAS_CORETYPE -u DIALTREE_BLAS_KERNELS '" + torch +
                            "' version --verbose 2>&1");
  const auto chosen = kernels_in(out);
  if (!chosen) GTEST_SKIP() << "LibTorch's BLAS is not OpenBLAS here:\n" << out;
  EXPECT_EQ(chosen->second, std::string(to_string(cpu_kernel_tier(host_cpu())))) << out;
  EXPECT_THAT(out, HasSubstr("blas kernel choice: OpenBLAS chose "));
  const std::string chosen_line = out.substr(out.find("blas kernel choice: "));
  // A choice already made (DIALTREE_BLAS_KERNELS set) is not made again: no exec, no change.
  out = capture("env -u OPENBLAS_CORETYPE DIALTREE_BLAS_KERNELS='decided upstream' '" + torch +
                "' version --verbose 2>&1");
  EXPECT_THAT(out, HasSubstr("blas kernel choice: decided upstream\n"));
  const auto own = kernels_in(out);
  ASSERT_TRUE(own) << out;
  // OpenBLAS's own pick, untouched: the core the first run found OpenBLAS choosing (not this
  // test process's own core, which an OPENBLAS_CORETYPE in the test's environment decides).
  EXPECT_THAT(chosen_line, HasSubstr("OpenBLAS chose " + own->first + " ")) << chosen_line;
}

TEST(Launcher, LeavesAChoiceMadeUpstreamAlone) {
  TempDir dir;
  ScopedEnv unset("OPENBLAS_CORETYPE", std::nullopt);
  ScopedEnv decided("DIALTREE_BLAS_KERNELS", "none: OpenBLAS's own kernels");
  const Result r = run({"version", "--verbose"}, dir.path().string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("blas kernel choice: none: OpenBLAS's own kernels\n"));
  const auto own = kernels_in(r.out);
  if (!own) GTEST_SKIP() << "LibTorch's BLAS is not OpenBLAS here:\n" << r.out;
  EXPECT_EQ(own->first, load_and_inspect_blas().corename);
}

TEST(Launcher, SaysSoWhenDialtreeTorchIsMissing) {
  TempDir dir;
  const fs::path alone = dir.path() / "dialtree";
  fs::copy_file(binary(), alone);
  const std::string out =
      capture("'" + alone.string() + "' embed --model x 2>&1; echo \"status $?\"");
  EXPECT_THAT(out, HasSubstr("error: cannot run " + (dir.path() / "dialtree-torch").string() +
                             ": No such file or directory"));
  EXPECT_THAT(out, HasSubstr("status 1\n"));
  // Its own commands still work.
  EXPECT_THAT(capture("'" + alone.string() + "' version"), HasSubstr("dialtree "));
}

}  // namespace
}  // namespace dialtree
