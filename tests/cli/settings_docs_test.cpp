// The settings tables in docs/ are exactly what `dialtree print-config --settings-table NAME`
// prints (cli/commands.h settings_table), so they cannot drift from the rows that declare the
// settings. To update them: build/cli/dialtree print-config --settings-table NAME.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "cli/commands.h"

namespace dialtree::cli {
namespace {

// The first Markdown table after the line `heading` of docs/`doc` (its lines that start with
// '|', up to the first line that does not), or "" when there is none before the next heading.
std::string docs_table(const std::string& doc, const std::string& heading) {
  const auto path = std::filesystem::path(DIALTREE_FIXTURES_DIR) / ".." / ".." / "docs" / doc;
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::string line;
  bool in_section = false;
  std::string table;
  while (std::getline(in, line)) {
    if (!in_section) {
      in_section = line == heading;
      continue;
    }
    if (line.rfind("|", 0) == 0) {
      table += line + "\n";
    } else if (!table.empty() || line.rfind("#", 0) == 0) {
      break;
    }
  }
  return table;
}

TEST(SettingsDocs, EveryDocsTableIsWhatPrintConfigPrints) {
  const struct {
    const char* doc;
    const char* heading;
    const char* table;
  } cases[] = {
      {"evaluation.md", "### Hyper-parameters: `configs/eval-*.yaml`", "finetune"},
      {"serving.md", "### Settings", "serve"},
      {"serving.md", "## Offline: `dialtree embed`", "embed"},
      {"training.md", "## Config", "trainer"},
  };
  for (const auto& c : cases) {
    const std::string found = docs_table(c.doc, c.heading);
    EXPECT_FALSE(found.empty()) << c.doc << ": no table under " << c.heading;
    EXPECT_EQ(found, settings_table(c.table))
        << "docs/" << c.doc << " " << c.heading << ": regenerate the table with "
        << "`build/cli/dialtree print-config --settings-table " << c.table << "`";
  }
}

TEST(SettingsDocs, EveryTableNameHasATable) {
  for (const auto& name : settings_table_names()) {
    const std::string table = settings_table(name);
    EXPECT_EQ(table.rfind("| ", 0), 0u) << name;
    EXPECT_GT(std::count(table.begin(), table.end(), '\n'), 3) << name;
  }
  EXPECT_THROW(settings_table("nope"), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::cli
