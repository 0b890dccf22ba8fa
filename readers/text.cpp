#include "readers/text.h"

#include <string_view>

#include "common/error.h"
#include "common/json_util.h"
#include "common/utf8.h"

namespace dialtree::readers {

std::vector<TextLine> read_text_lines(const std::string& path, TextLoadReport* report) {
  const std::string bytes = read_file_bytes(path);
  std::string_view rest(bytes);
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (rest.substr(0, kBom.size()) == kBom) rest.remove_prefix(kBom.size());
  std::vector<TextLine> out;
  std::size_t no = 0;
  while (!rest.empty()) {
    ++no;
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t bad = utf8::first_invalid(line);
    if (bad != std::string_view::npos) {
      throw DataError(path, at_line(no), "",
                      "invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line");
    }
    if (line.find_first_not_of(" \t\r\f\v") == std::string_view::npos) {
      if (report) ++report->blank_lines;
      continue;
    }
    out.push_back(TextLine{std::string(line), no});
  }
  return out;
}

}  // namespace dialtree::readers
