// `dialtree plot` end to end on tests/fixtures/plot: the figures it writes and prints, and bad
// input as one "error: <file>: line N: ..." line with exit status 2. Runs
// DIALTREE_BINARY_DIR/cli/dialtree (build the `dialtree` target first); the drawing tests skip
// only where gnuplot is not installed (scripts/setup.sh installs it).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "process_util.h"
#include "test_paths.h"

namespace dialtree {
namespace {

namespace fs = std::filesystem;
using dialtree::testing::fixture;
using dialtree::testing::TempDir;
using namespace dialtree::testing::process;
using ::testing::HasSubstr;
using ::testing::StartsWith;

bool gnuplot_installed() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((fs::path(dir) / "gnuplot").c_str(), X_OK) == 0) return true;
  }
  return false;
}

class PlotCmd : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(binary())) << binary() << " is missing: build the dialtree target";
  }
  std::string out() const { return tmp_.file("figures"); }
  TempDir tmp_;
};

TEST_F(PlotCmd, DrawsRunsAndScoresTogether) {
  if (!gnuplot_installed())
    GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  const Result r =
      run({"plot", "run-a", "run-b", "eval-a", "tfidf.json", "--out", out()}, fixture("plot"));
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* name : {"losses", "learning_rate", "eval", "results", "val_curves"}) {
    for (const char* ext : {".png", ".svg"}) {
      const fs::path p = fs::path(out()) / (std::string(name) + ext);
      EXPECT_THAT(r.out, HasSubstr(p.string() + "\n"));
      ASSERT_TRUE(fs::exists(p)) << p;
      EXPECT_GT(fs::file_size(p), 1000u) << p;
    }
  }
  EXPECT_EQ(slurp(out() + "/losses.png").substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_THAT(slurp(out() + "/results.svg"), HasSubstr(">tfidf-char-2-5<"));

  // --format svg writes SVG only.
  TempDir svg_only;
  const Result s =
      run({"plot", "run-b", "--out", svg_only.file("f"), "--format", "svg"}, fixture("plot"));
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_TRUE(fs::exists(svg_only.file("f/losses.svg")));
  EXPECT_FALSE(fs::exists(svg_only.file("f/losses.png")));
  EXPECT_FALSE(fs::exists(svg_only.file("f/eval.svg")));  // run-b logged no eval_* key

  // A resumed run that appended to its metrics.jsonl re-logs steps: drawn once, with a word.
  fs::create_directories(tmp_.file("resumed"));
  std::ofstream(tmp_.file("resumed/metrics.jsonl"))
      << "{\"step\":10,\"loss\":3}\n{\"step\":20,\"loss\":2}\n{\"step\":10,\"loss\":3.5}\n"
         "{\"step\":20,\"loss\":2.5}\n{\"step\":30,\"loss\":1}\n";
  const Result resumed = run({"plot", "resumed", "--out", svg_only.file("g"), "--format", "svg"},
                             tmp_.path().string());
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("resumed/metrics.jsonl: the logged steps go back 1 time(s), "
                                     "first to step 10 after step 20 (a resumed run appended to "
                                     "the file?): a step logged twice is drawn with its later "
                                     "value"));
}

TEST_F(PlotCmd, BadInputIsOneErrorLineAndStatus2) {
  Result r = run({"plot", "malformed", "--out", out()}, fixture("plot"));
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: malformed/metrics.jsonl: line 3: invalid JSON"));
  r = run({"plot", "no-step", "--out", out()}, fixture("plot"));
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: no-step/metrics.jsonl: line 2: "));
  r = run({"plot", "run-a", "no-such-run", "--out", out()}, fixture("plot"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: no-such-run: no such file or folder\n");
  r = run({"plot", ".", "--out", out()}, fixture("plot/eval-a/banking"));
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("error: .: neither metrics.jsonl"));
  r = run({"plot", "run-a", "--out", out(), "--format", "gif"}, fixture("plot"));
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown format 'gif'"));
  r = run({"plot", "run-a"}, fixture("plot"));  // --out is required
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(fs::exists(out()));
}

}  // namespace
}  // namespace dialtree
