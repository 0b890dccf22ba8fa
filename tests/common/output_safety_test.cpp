// Regression tests for the tester's report on common/: --out safety of atomic writes (links,
// devices, FIFOs, folders, empty paths, permission bits), OS reasons in I/O errors, temporary
// files removed on a signal, whole-folder atomic writes, message quoting, "is a directory" on
// reads, and integers beyond int64.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_util.h"
#include "common/simdjson_util.h"
#include "common/temp_cleanup.h"
#include "expect_error.h"
#include "test_paths.h"

namespace dialtree {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

/// Names in `dir`, sorted.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

using dialtree::testing::error_of;

// ---- bug 9: quoting user data in messages ----------------------------------------------------

TEST(QuoteForMessage, EscapesControlsInvalidBytesAndQuotes) {
  EXPECT_EQ(quote_for_message(std::string("a\0b", 3)), "'a\\x00b'");
  EXPECT_EQ(quote_for_message("tab\there\nnl"), "'tab\\there\\nnl'");
  EXPECT_EQ(quote_for_message("bad \xFF\xC3("), "'bad \\xFF\\xC3('");
  EXPECT_EQ(quote_for_message("it's a\\b"), "'it\\'s a\\\\b'");
  EXPECT_EQ(quote_for_message("caf\xC3\xA9 \xE2\x80\x93"), "'caf\xC3\xA9 \xE2\x80\x93'");  // kept
  EXPECT_EQ(quote_for_message("\xC2\x85"), "'\\u0085'");  // a C1 control
  EXPECT_EQ(quote_for_message("\x7F"), "'\\x7F'");
  EXPECT_EQ(quote_for_message("abcdef", 3), "'abc...'");
  EXPECT_EQ(quote_for_message(std::string(300, 'x')).size(), 200u + 5u);  // default cut
}

TEST(QuoteForMessage, DataErrorFieldsAreEscapedSoANulCannotCutTheMessage) {
  const DataError e("f.json", "record 0", std::string("label.a\0b", 9), "bad");
  EXPECT_STREQ(e.what(), "f.json: record 0: field 'label.a\\x00b': bad");
  EXPECT_EQ(e.field(), std::string("label.a\0b", 9));  // the accessor keeps the raw value
}

// ---- bug 1: --out safety ---------------------------------------------------------------------

TEST(AtomicFileTarget, RefusesDevicesFifosFoldersAndEmptyPaths) {
  testing::TempDir tmp;
  EXPECT_THAT(error_of<std::invalid_argument>([] { write_file_atomic("/dev/full", "x"); }),
              HasSubstr("is a character device"));
  EXPECT_TRUE(fs::is_character_file("/dev/full")) << "the device node was replaced";
  EXPECT_THAT(error_of<std::invalid_argument>([] { write_file_atomic("/dev/null", "x"); }),
              HasSubstr("refusing to replace it"));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));

  ASSERT_EQ(::mkfifo(tmp.file("fifo").c_str(), 0600), 0);
  EXPECT_THAT(error_of<std::invalid_argument>([&] { write_file_atomic(tmp.file("fifo"), "x"); }),
              HasSubstr("is a FIFO"));
  EXPECT_TRUE(fs::is_fifo(tmp.file("fifo")));

  fs::create_directory(tmp.file("dir"));
  EXPECT_THAT(error_of<std::invalid_argument>([&] { AtomicFile f(tmp.file("dir")); }),
              HasSubstr("is a directory"));
  EXPECT_THAT(error_of<std::invalid_argument>([] { write_file_atomic("", "x"); }),
              HasSubstr("empty"));
  // A link to a device is refused the same way.
  fs::create_symlink("/dev/full", tmp.file("to-full"));
  EXPECT_THAT(error_of<std::invalid_argument>([&] { write_file_atomic(tmp.file("to-full"), "x"); }),
              HasSubstr("a link to '/dev/full'"));
  EXPECT_TRUE(fs::is_symlink(tmp.file("to-full")));
  EXPECT_EQ(names_in(tmp.path()), (std::vector<std::string>{"dir", "fifo", "to-full"}));
}

// /dev/stdout on a pipe is a chain of links whose last one names no path ("pipe:[123]"):
// following it by hand found nothing there and tried to create "/proc/self/fd/pipe:[123].tmp..."
// (found by a break test, 2026-12-03). The kernel's answer, a FIFO, is refused like any FIFO.
TEST(AtomicFileTarget, StdoutOnAPipeIsRefusedAsAFifo) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string out = "/proc/self/fd/" + std::to_string(fds[1]);
  const std::string what =
      error_of<std::invalid_argument>([&] { write_file_atomic(out, "x"); });
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_THAT(what, HasSubstr("output path '" + out + "' is a FIFO, not a regular file"));
  EXPECT_THAT(what, Not(HasSubstr("pipe:[")));
}

TEST(AtomicFileTarget, SymlinksAreFollowedAndKept) {
  testing::TempDir tmp;
  fs::create_directory(tmp.file("real"));
  spit(tmp.file("real/data.jsonl"), "old");
  fs::create_symlink("real/data.jsonl", tmp.file("link.jsonl"));        // relative link
  fs::create_symlink(tmp.file("link.jsonl"), tmp.file("link2.jsonl"));  // a link to a link
  write_file_atomic(tmp.file("link2.jsonl"), "new");
  EXPECT_TRUE(fs::is_symlink(tmp.file("link.jsonl")));
  EXPECT_TRUE(fs::is_symlink(tmp.file("link2.jsonl")));
  EXPECT_EQ(slurp(tmp.file("real/data.jsonl")), "new");
  // The temporary file lived beside the resolved target, and is gone.
  EXPECT_EQ(names_in(tmp.file("real")), std::vector<std::string>{"data.jsonl"});
  EXPECT_EQ(resolve_output_path(tmp.file("link2.jsonl")), fs::path(tmp.file("real/data.jsonl")));
  // A dangling link creates the file it points to.
  fs::create_symlink("real/fresh.jsonl", tmp.file("dangling"));
  write_file_atomic(tmp.file("dangling"), "fresh");
  EXPECT_TRUE(fs::is_symlink(tmp.file("dangling")));
  EXPECT_EQ(slurp(tmp.file("real/fresh.jsonl")), "fresh");
  // A loop is an error, not a hang.
  fs::create_symlink("loop-b", tmp.file("loop-a"));
  fs::create_symlink("loop-a", tmp.file("loop-b"));
  EXPECT_THROW(write_file_atomic(tmp.file("loop-a"), "x"), std::invalid_argument);
}

TEST(AtomicFileTarget, ReplacingKeepsThePermissionBits) {
  testing::TempDir tmp;
  const std::string path = tmp.file("out.txt");
  spit(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  write_file_atomic(path, "new");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(slurp(path), "new");
}

TEST(AtomicFileTarget, SameFileDetection) {
  testing::TempDir tmp;
  spit(tmp.file("a.txt"), "a");
  fs::create_symlink(tmp.file("a.txt"), tmp.file("l.txt"));
  fs::create_hard_link(tmp.file("a.txt"), tmp.file("h.txt"));
  EXPECT_TRUE(is_same_file(tmp.file("a.txt"), tmp.file("l.txt")));
  EXPECT_TRUE(is_same_file(tmp.file("a.txt"), tmp.file("h.txt")));
  EXPECT_TRUE(is_same_file(tmp.file("a.txt"), tmp.path() / "." / "a.txt"));
  EXPECT_FALSE(is_same_file(tmp.file("a.txt"), tmp.file("missing.txt")));
  EXPECT_FALSE(is_same_file(tmp.file("missing.txt"), tmp.file("missing.txt")));
}

// ---- bug 16: OS reasons in I/O errors ---------------------------------------------------------

TEST(AtomicFileErrors, WriteErrorsNameTheTargetAndTheOsReason) {
  testing::TempDir tmp;
  // A file size limit makes write() fail (EFBIG), as a full disk would (ENOSPC).
  struct sigaction ignore {
  }, old_action{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old_action), 0);
  struct rlimit old_limit;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct rlimit small = old_limit;
  small.rlim_cur = 1 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string message = error_of<std::runtime_error>(
      [&] { write_file_atomic(tmp.file("big.bin"), std::string(3 << 20, 'x')); });
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::sigaction(SIGXFSZ, &old_action, nullptr);
  EXPECT_THAT(message, HasSubstr("write error on '" + tmp.file("big.bin") + "'"));
  EXPECT_THAT(message, HasSubstr("File too large"));
  EXPECT_TRUE(names_in(tmp.path()).empty()) << "a temporary file was left behind";

  EXPECT_THAT(error_of<std::runtime_error>([&] { write_file_atomic(tmp.file("no/dir/x"), "x"); }),
              HasSubstr("No such file or directory"));
}

TEST(ReadErrors, DirectoriesAndMissingFilesSayWhy) {
  testing::TempDir tmp;
  const std::string dir = tmp.path().string();
  EXPECT_EQ(error_of<DataError>([&] { read_file_bytes(dir); }),
            dir + ": is a directory, not a file");
  EXPECT_EQ(error_of<DataError>([&] { json_parse_file(dir); }),
            dir + ": is a directory, not a file");
  EXPECT_EQ(error_of<DataError>([&] { json_for_each_line(dir, [](std::size_t, const json&) {}); }),
            dir + ": is a directory, not a file");
  SjFileParser parser;
  EXPECT_EQ(error_of<DataError>([&] { parser.parse(dir); }), dir + ": is a directory, not a file");
  EXPECT_EQ(error_of<DataError>([&] { read_file_bytes(tmp.file("nope")); }),
            tmp.file("nope") + ": cannot open file for reading: No such file or directory");
}

// ---- bug 12: integers beyond int64 -------------------------------------------------------------

TEST(JsonIntegers, UnsignedAboveInt64MaxIsOutOfRangeNotNegative) {
  const JsonPlace place{"x.json", "record 0"};
  const json j = json::parse(R"({"endIndex": 18446744073709551615, "ok": 9223372036854775807})");
  EXPECT_EQ(error_of<DataError>([&] { json_as_int(j["endIndex"], place, "endIndex"); }),
            "x.json: record 0: field 'endIndex': integer 18446744073709551615 is out of range (at "
            "most 9223372036854775807)");
  EXPECT_EQ(json_as_int(j["ok"], place, "ok"), INT64_MAX);

  simdjson::dom::parser p;
  const simdjson::padded_string text(std::string(R"([18446744073709551615, 9223372036854775807])"));
  const simdjson::dom::element doc = p.parse(text);
  const JsonPathRef root;
  const JsonPathRef first(root, std::size_t{0}), second(root, std::size_t{1});
  EXPECT_THAT(error_of<DataError>([&] { sj_as_int(doc.at(0), place, first); }),
              HasSubstr("integer 18446744073709551615 is out of range"));
  EXPECT_EQ(sj_as_int(doc.at(1), place, second), INT64_MAX);
}

// ---- bug 3: temporary files removed on a signal ----------------------------------------------

TEST(TempCleanup, RegistryTracksAtomicFilesUntilCommitOrDestruction) {
  testing::TempDir tmp;
  const std::size_t before = registered_temp_path_count();
  {
    AtomicFile f(tmp.file("a.txt"));
    EXPECT_EQ(registered_temp_path_count(), before + 1);
    f.stream() << "a";
    f.commit();
    EXPECT_EQ(registered_temp_path_count(), before);
  }
  {
    AtomicFile f(tmp.file("b.txt"));
    EXPECT_EQ(registered_temp_path_count(), before + 1);
  }
  EXPECT_EQ(registered_temp_path_count(), before);
  EXPECT_EQ(register_temp_path(std::string(kMaxTempPathBytes + 1, 'x').c_str()), -1);
  EXPECT_EQ(register_temp_path(""), -1);
  unregister_temp_path(-1);  // ignored
}

class TempCleanupDeathTest : public ::testing::TestWithParam<int> {};

TEST_P(TempCleanupDeathTest, SignalRemovesTemporaryFilesAndKillsWithTheSignal) {
  GTEST_FLAG_SET(death_test_style, "fast");  // the child must see this TempDir
  testing::TempDir tmp;
  spit(tmp.file("out.jsonl"), "old");
  const int sig = GetParam();
  EXPECT_EXIT(
      {
        install_temp_cleanup_signal_handlers();
        AtomicFile f(tmp.file("out.jsonl"));
        f.stream() << std::string(1 << 20, 'x');
        f.stream().flush();
        AtomicDirectory d(tmp.file("bundle"));
        write_file_atomic(d.file("spm.model"), "model");
        AtomicFile g(d.file("spm.vocab"));  // still open
        ::raise(sig);
        std::_Exit(0);  // not reached
      },
      ::testing::KilledBySignal(sig), "");
  // Only the old target is left: no *.tmp.* file, no temporary bundle folder.
  EXPECT_EQ(names_in(tmp.path()), std::vector<std::string>{"out.jsonl"});
  EXPECT_EQ(slurp(tmp.file("out.jsonl")), "old");
}

INSTANTIATE_TEST_SUITE_P(Signals, TempCleanupDeathTest, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(i.param == SIGINT    ? "SIGINT"
                                              : i.param == SIGTERM ? "SIGTERM"
                                                                   : "SIGHUP");
                         });

TEST(TempCleanupDeathTest2, ALaterSigactionReplacesTheHandler) {
  GTEST_FLAG_SET(death_test_style, "fast");  // the child must see this TempDir
  testing::TempDir tmp;
  // A subcommand's own handler (installed after main's) wins; the temporary file then goes away
  // with AtomicFile's destructor as the program unwinds.
  EXPECT_EXIT(
      {
        install_temp_cleanup_signal_handlers();
        static volatile std::sig_atomic_t stop = 0;
        struct sigaction sa {};
        sa.sa_handler = [](int) { stop = 1; };
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGTERM, &sa, nullptr);
        {
          AtomicFile f(tmp.file("out.jsonl"));
          f.stream() << "partial";
          ::raise(SIGTERM);
          if (!stop) std::_Exit(3);
        }
        std::_Exit(fs::exists(tmp.file("out.jsonl")) ? 4 : 7);
      },
      ::testing::ExitedWithCode(7), "");
  EXPECT_TRUE(names_in(tmp.path()).empty());
}

// ---- bug 7: whole-folder atomic writes ---------------------------------------------------------

TEST(AtomicDirectoryTest, AppearsOnlyOnCommitAndReplacesAWholeFolder) {
  testing::TempDir tmp;
  const std::string out = tmp.file("sub/bundle");  // the parent folder is created
  {
    AtomicDirectory d(out);
    write_file_atomic(d.file("a.txt"), "a1");
    EXPECT_FALSE(fs::exists(out));
  }  // abandoned
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(names_in(tmp.file("sub")).empty());
  {
    AtomicDirectory d(out);
    write_file_atomic(d.file("a.txt"), "a1");
    write_file_atomic(d.file("b.txt"), "b1");
    d.commit();
  }
  EXPECT_EQ(names_in(out), (std::vector<std::string>{"a.txt", "b.txt"}));
  ASSERT_EQ(::chmod(out.c_str(), 0750), 0);
  {
    AtomicDirectory d(out);
    write_file_atomic(d.file("a.txt"), "a2");
    EXPECT_EQ(slurp(out + "/a.txt"), "a1");  // the old folder is intact until commit
    d.commit();
  }
  EXPECT_EQ(names_in(out), std::vector<std::string>{"a.txt"});  // replaced as a whole
  EXPECT_EQ(slurp(out + "/a.txt"), "a2");
  struct stat st;
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_EQ(names_in(tmp.file("sub")), std::vector<std::string>{"bundle"});

  spit(tmp.file("file"), "x");
  EXPECT_THAT(error_of<std::invalid_argument>([&] { AtomicDirectory d(tmp.file("file")); }),
              HasSubstr("is a regular file, not a directory"));
  EXPECT_THROW(AtomicDirectory(""), std::invalid_argument);
  EXPECT_THROW(AtomicDirectory("/"), std::invalid_argument);
  {
    // A trailing slash names the folder itself: the temporary folder goes beside it.
    AtomicDirectory slash(out + "/");
    EXPECT_EQ(slash.resolved_target(), fs::path(out));
    EXPECT_EQ(slash.temp_path().parent_path(), fs::path(tmp.file("sub")));
    write_file_atomic(slash.file("c.txt"), "c");
    slash.commit();
  }
  EXPECT_EQ(names_in(out), std::vector<std::string>{"c.txt"});
  AtomicDirectory d(tmp.file("x"));
  EXPECT_THROW(d.file("../escape"), std::invalid_argument);
}

TEST(AtomicDirectoryTest, DotDotIsResolvedOnTheDiskNotAsText) {
  // docs/failure-cases.md B9: "missing/../bundle" once replaced ./bundle, and "link/../x"
  // replaced ./x while the kernel names x beside the link's target.
  testing::TempDir tmp;
  const fs::path root = fs::canonical(tmp.path());
  fs::create_directories(root / "deep" / "a" / "b");
  fs::create_directory_symlink(root / "deep" / "a" / "b", root / "lnk");
  fs::create_directory(root / "bundle");
  spit((root / "bundle" / "keep.txt").string(), "precious");

  EXPECT_THAT(error_of<std::invalid_argument>(
                  [&] { AtomicDirectory d(root / "missing" / ".." / "bundle"); }),
              HasSubstr("'..' follows '" + (root / "missing").string() + "', which does not exist"));
  EXPECT_EQ(slurp((root / "bundle" / "keep.txt").string()), "precious");
  EXPECT_FALSE(fs::exists(root / "missing"));

  EXPECT_EQ(resolve_output_folder(root / "lnk" / ".." / "x"), root / "deep" / "a" / "x");
  EXPECT_EQ(resolve_output_folder(root / "lnk" / "." / "new" / "deeper/"),
            root / "deep" / "a" / "b" / "new" / "deeper");
  EXPECT_EQ(resolve_output_folder(root / "deep" / "a" / ".."), root / "deep");
  {
    AtomicDirectory d(root / "lnk" / ".." / "x");
    EXPECT_EQ(d.resolved_target(), root / "deep" / "a" / "x");
    write_file_atomic(d.file("a.txt"), "a");
    d.commit();
  }
  EXPECT_EQ(slurp((root / "deep" / "a" / "x" / "a.txt").string()), "a");
  EXPECT_FALSE(fs::exists(root / "x"));
  EXPECT_THROW(resolve_output_folder(""), std::invalid_argument);
}

TEST(Durability, SyncAcceptsFilesAndFoldersAndNamesWhatItCannotOpen) {
  testing::TempDir tmp;
  fs::create_directories(tmp.path() / "staged" / "sub");
  std::ofstream(tmp.path() / "staged" / "a.bin") << "a";
  std::ofstream(tmp.path() / "staged" / "sub" / "b.bin") << "b";
  EXPECT_NO_THROW(sync_path(tmp.path() / "staged" / "a.bin"));
  EXPECT_NO_THROW(sync_path(tmp.path() / "staged"));
  EXPECT_NO_THROW(sync_tree(tmp.path() / "staged"));
  try {
    sync_path(tmp.path() / "missing.bin");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("missing.bin' to sync it: No such file or directory"));
  }
  EXPECT_THROW(sync_tree(tmp.path() / "missing"), std::runtime_error);
  // Atomic writes still publish their content (they now sync before and after the rename).
  write_file_atomic(tmp.path() / "out.txt", "done\n");
  std::ifstream in(tmp.path() / "out.txt");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "done\n");
}

}  // namespace
}  // namespace dialtree
