// The settings layer (common/settings.h, settings_yaml.h, settings_json.h): lookup with
// suggestions, range and string checks at the key's line or override, the JSON round trip, the
// text forms and the Markdown table, on a small table of its own.
#include "common/settings.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "common/settings_json.h"
#include "common/settings_yaml.h"

namespace dialtree {
namespace {

using ::testing::HasSubstr;

struct Inner {
  int depth = 2;
  std::string mode = "fast";
};

struct Knobs {
  std::string name = "x";
  int port = 80;
  std::size_t batch = 8;
  double wait_ms = 2.0;
  bool on = true;
  std::vector<std::string> views = {"a", "b"};
  std::int64_t seed = 7;
  Inner inner;
};

std::string mode_problem(const std::string& v) {
  return v == "fast" || v == "slow" ? "" : "must be fast or slow, got \"" + v + "\"";
}

const std::vector<settings::Setting<Inner>>& inner_rows() {
  static const std::vector<settings::Setting<Inner>> rows = {
      settings::field("depth", &Inner::depth, "how deep").in(between(1, 9)).alias("layers"),
      settings::field("mode", &Inner::mode, "how fast").checked(&mode_problem, "fast, slow"),
  };
  return rows;
}

// A YAML table: top-level keys, then the section `inner:` made of another struct's rows.
const std::vector<settings::Setting<Knobs>>& yaml_rows() {
  static const std::vector<settings::Setting<Knobs>> rows = [] {
    std::vector<settings::Setting<Knobs>> r = {
        settings::field("name", &Knobs::name, "a name"),
        settings::field("port", &Knobs::port, "a port").in(between(0, 65535)).alias("lr"),
        settings::field("wait_ms", &Knobs::wait_ms, "a time").in(between(0, 10000)),
        settings::field("on", &Knobs::on, "a switch"),
        settings::field("views", &Knobs::views, "some views"),
        settings::field("seed", &Knobs::seed, "a seed").in(at_least(0)),
    };
    for (auto& row : settings::nest("inner.", &Knobs::inner, inner_rows(), {"mode", "depth"})) {
      r.push_back(row);
    }
    return r;
  }();
  return rows;
}

settings::YamlTable yaml_table(Knobs& k) {
  return {settings::bind(yaml_rows(), k), "must be a mapping",
          [](const std::string& section) {
            return settings::KeyList{"; valid keys in '" + section + "': ", ""};
          },
          "key.sub"};
}

// Reads `text` as the file "k.yaml", then `overrides`, then checks; the error's message or "".
std::string read(const std::string& text, const std::vector<std::string>& overrides = {},
                 Knobs* out = nullptr) {
  Knobs k;
  settings::Origins origins;
  const settings::YamlTable table = yaml_table(k);
  try {
    settings::read_document(table, strict_yaml::Source{"k.yaml", ""}, YAML::Load(text), origins);
    for (const auto& o : overrides) settings::apply_override(table, o, origins);
    if (const auto p = settings::first_problem(table.rows)) {
      strict_yaml::fail(origins.at(p->name), p->name, p->message);
    }
  } catch (const DataError& e) {
    return e.what();
  }
  if (out != nullptr) *out = k;
  return "";
}

// bind() and view() of a temporary object or table would dangle at the end of the statement:
// those overloads are deleted, so such a call does not compile (checked here without calling).
template <class Rows, class Object, class = void>
struct CanBind : std::false_type {};
template <class Rows, class Object>
struct CanBind<Rows, Object,
               std::void_t<decltype(settings::bind(std::declval<Rows>(), std::declval<Object>()))>>
    : std::true_type {};
template <class Rows, class Object, class = void>
struct CanView : std::false_type {};
template <class Rows, class Object>
struct CanView<Rows, Object,
               std::void_t<decltype(settings::view(std::declval<Rows>(), std::declval<Object>()))>>
    : std::true_type {};
using InnerRows = std::vector<settings::Setting<Inner>>;
static_assert(CanBind<const InnerRows&, Inner&>::value);
static_assert(!CanBind<const InnerRows&, Inner&&>::value);
static_assert(!CanBind<InnerRows&&, Inner&>::value);
static_assert(CanView<const InnerRows&, const Inner&>::value);
static_assert(CanView<const InnerRows&, Inner&>::value);
static_assert(!CanView<const InnerRows&, Inner&&>::value);
static_assert(!CanView<InnerRows&&, const Inner&>::value);

TEST(Settings, LookupSuggestsAnAliasThenTheClosestKeyThenListsTheKeys) {
  const auto rows = settings::infos(yaml_rows());
  EXPECT_EQ(settings::suggestion(rows, "", "LR"), "port");             // an alias, any case
  EXPECT_EQ(settings::suggestion(rows, "", "layers"), "inner.depth");  // a nested row's alias
  EXPECT_EQ(settings::suggestion(rows, "", "prot"), "port");
  EXPECT_EQ(settings::suggestion(rows, "", "mode"), "inner.mode");  // another section, +1
  EXPECT_EQ(settings::suggestion(rows, "", "iner"), "inner");       // a section name
  EXPECT_EQ(settings::suggestion(rows, "", "zqxv"), "");
  EXPECT_EQ(settings::keys_in(rows, ""),
            (std::vector<std::string>{"name", "port", "wait_ms", "on", "views", "seed", "inner"}));
  EXPECT_EQ(settings::keys_in(rows, "inner"), (std::vector<std::string>{"mode", "depth"}));
  EXPECT_EQ(settings::sections(rows), std::vector<std::string>{"inner"});
  EXPECT_THAT(read("prot: 1\n"),
              HasSubstr("line 1: field 'prot': unknown key 'prot' — did you mean 'port'?"));
  EXPECT_THAT(read("inner:\n  zqxv: 1\n"),
              HasSubstr("unknown key 'inner.zqxv'; valid keys in 'inner': mode, depth"));
  EXPECT_THAT(read("", {"inner.dept=3"}), HasSubstr("did you mean 'inner.depth'?"));
  EXPECT_THAT(read("", {"a.b.c=3"}), HasSubstr("unknown key 'a.b.c'"));
}

TEST(Settings, ValuesAreReadStrictlyIntoNestedMembers) {
  Knobs k;
  EXPECT_EQ(read("port: 8080\ninner:\n  depth: 4\n  mode: slow\nviews: [c]\n",
                 {"wait_ms=1.5", "inner={depth: 5}"}, &k),
            "");
  EXPECT_EQ(k.port, 8080);
  EXPECT_EQ(k.inner.depth, 5);
  EXPECT_EQ(k.inner.mode, "slow");
  EXPECT_EQ(k.views, std::vector<std::string>{"c"});
  EXPECT_DOUBLE_EQ(k.wait_ms, 1.5);
  EXPECT_THAT(read("port: \"80\"\n"), HasSubstr("expected an integer"));
  EXPECT_THAT(read("port: 1\nport: 2\n"), HasSubstr("duplicate key 'port'"));
  EXPECT_THAT(read("inner: 5\n"), HasSubstr("expected a mapping of 'inner' keys"));
  EXPECT_THAT(read("- a\n"), HasSubstr("must be a mapping, found a list"));
}

TEST(Settings, ARangeFailsAtTheKeysLineOrOverride) {
  EXPECT_THAT(read("name: a\n\nport: 70000\n"),
              HasSubstr("k.yaml: line 3: field 'port': must be in [0, 65535], got 70000"));
  EXPECT_THAT(read("inner:\n  depth: 0\n"),
              HasSubstr("line 2: field 'inner.depth': must be in [1, 9], got 0"));
  EXPECT_THAT(read("", {"wait_ms=-1"}),
              HasSubstr("override 'wait_ms=-1': field 'wait_ms': must be in [0.0, 10000.0], got "
                        "-1.0"));
  EXPECT_THAT(read("inner: {mode: slower}\n"),
              HasSubstr("field 'inner.mode': must be fast or slow, got \"slower\""));
  // Only the rows of one section, when asked.
  Knobs k;
  k.port = -1;
  k.inner.depth = 0;
  const auto rows = settings::view(yaml_rows(), k);
  EXPECT_EQ(settings::first_problem(rows)->name, "port");
  EXPECT_EQ(settings::first_problem(rows, std::string("inner"))->name, "inner.depth");
}

TEST(Settings, CheckFlagsNamesTheFirstFlagOutOfRange) {
  struct Flags {
    std::size_t batch = 8;
    double wait_ms = 2.0;
    std::optional<std::int64_t> dims;
  };
  static const std::vector<settings::Setting<Flags>> rows = {
      settings::field("batch-size", &Flags::batch, "a count").in(at_least(1)).env(),
      settings::field("max-wait-ms", &Flags::wait_ms, "a time").in(between(0, 10000)),
      settings::field("dimensions", &Flags::dims, "first N").in(at_least(1)).env(),
  };
  Flags f;
  EXPECT_NO_THROW(settings::check_flags(settings::view(rows, f)));
  f.batch = 0;
  f.wait_ms = -1;
  try {
    settings::check_flags(settings::view(rows, f));
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--batch-size: must be >= 1, got 0");
  }
  f.batch = 1;
  f.wait_ms = 0;
  f.dims = 0;
  try {
    settings::check_flags(settings::view(rows, f));
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--dimensions: must be >= 1, got 0");
  }
  const Flags defaults;
  EXPECT_EQ(settings::markdown_table(settings::view(rows, defaults)),
            "| key | type | default | range | help |\n"
            "|---|---|---|---|---|\n"
            "| `batch-size` | integer | `8` | >= 1 | a count |\n"
            "| `max-wait-ms` | real | `2.0` | in [0.0, 10000.0] | a time |\n"
            "| `dimensions` | integer | `none` | >= 1 | first N |\n");
  EXPECT_EQ(settings::markdown_table(settings::view(rows, defaults), {/*flags=*/true}),
            "| flag | environment | type | default | range | help |\n"
            "|---|---|---|---|---|---|\n"
            "| `--batch-size` | `DIALTREE_BATCH_SIZE` | integer | `8` | >= 1 | a count |\n"
            "| `--max-wait-ms` |  | real | `2.0` | in [0.0, 10000.0] | a time |\n"
            "| `--dimensions` | `DIALTREE_DIMENSIONS` | integer | `none` | >= 1 | first N |\n");
}

TEST(Settings, TextFormsAndTheMarkdownTable) {
  Knobs k;
  const auto rows = settings::view(yaml_rows(), k);
  EXPECT_EQ(settings::value_text(settings::find(rows, "views")->target), "[a, b]");
  EXPECT_EQ(settings::value_text(settings::find(rows, "wait_ms")->target), "2.0");
  EXPECT_EQ(settings::type_name(settings::find(rows, "views")->target), "list of strings");
  EXPECT_EQ(settings::range_text(*settings::find(rows, "inner.mode")), "fast, slow");
  EXPECT_EQ(settings::env_twin("max-batch-tokens"), "DIALTREE_MAX_BATCH_TOKENS");
  const std::string table = settings::markdown_table(rows);
  EXPECT_THAT(table, HasSubstr("| `inner.depth` | integer | `2` | in [1, 9] | how deep |\n"));
  EXPECT_THAT(table, HasSubstr("| `on` | boolean | `true` |  | a switch |\n"));
}

TEST(Settings, JsonRoundTripAndStrictReading) {
  Knobs k;
  k.port = 8080;
  k.inner.mode = "slow";
  k.views = {"x", "y", "z"};
  k.seed = 123456789012345;
  k.wait_ms = 0.1;
  nlohmann::ordered_json j;
  settings::write_json(settings::view(yaml_rows(), k), j);
  EXPECT_EQ(j.begin().key(), "name");  // table order
  EXPECT_EQ(j.at("inner.mode"), "slow");
  Knobs back;
  back.port = 1;
  settings::read_json(settings::bind(yaml_rows(), back), nlohmann::json::parse(j.dump()),
                      JsonPlace{"k.json", ""});
  EXPECT_EQ(back.port, 8080);
  EXPECT_EQ(back.inner.mode, "slow");
  EXPECT_EQ(back.views, k.views);
  EXPECT_EQ(back.seed, k.seed);
  EXPECT_EQ(back.wait_ms, k.wait_ms);
  const auto error_of = [](const nlohmann::json& bad) -> std::string {
    Knobs x;
    try {
      settings::read_json(settings::bind(yaml_rows(), x), bad, JsonPlace{"k.json", ""});
    } catch (const DataError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_THAT(error_of({{"prot", 1}}), HasSubstr("unknown key (did you mean 'port'?)"));
  EXPECT_THAT(error_of({{"port", 1.5}}), HasSubstr("port"));
  EXPECT_THAT(error_of({{"port", 1LL << 40}}), HasSubstr("out of range"));
  EXPECT_THAT(error_of({{"wait_ms", "1"}}), HasSubstr("must be a number, got string \"1\""));
}

}  // namespace
}  // namespace dialtree
