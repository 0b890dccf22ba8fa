// Strict YAML reading shared by the config readers (strict_yaml.h). The scalar rules follow
// the YAML 1.2 core schema; yaml-cpp's as<T>() would accept quoted numbers, octal and hex
// integers and yes/no booleans.
#include "common/strict_yaml.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/error.h"
#include "common/text_distance.h"
#include "common/utf8.h"

namespace dialtree::strict_yaml {

namespace fs = std::filesystem;

Origin Source::at(const YAML::Node& node, const YAML::Node* key_node) const {
  if (!override_text.empty()) return {file, override_origin(override_text).where};
  const bool use_key = key_node != nullptr && (node.IsNull() || node.Mark().line < 0);
  const int line = use_key ? key_node->Mark().line : node.Mark().line;
  return {file, line < 0 ? std::string() : at_line(static_cast<std::size_t>(line) + 1)};
}

void fail(const Origin& at, const std::string& key, const std::string& message) {
  throw DataError(at.file, at.where, key, message);
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// True when the scalar was written plainly (not quoted, not a block literal, not !!str).
bool is_plain(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  return tag == "?" || tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
         tag == "tag:yaml.org,2002:bool";
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "an empty value (null)";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      // Escaped: the text may hold control characters or invalid UTF-8.
      if (!is_plain(node)) return "the string \"" + escape_for_message(node.Scalar(), 200) + "\"";
      return quote_for_message(node.Scalar());
    default:
      return "an undefined value";
  }
}

namespace {

bool is_digits(const std::string& s, std::size_t from, std::size_t to) {
  if (from >= to) return false;
  for (std::size_t i = from; i < to; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// Parses a plain decimal integer; on failure returns false and sets `why` (may stay empty).
bool parse_integer(const std::string& s, long long* out, std::string* why) {
  const std::size_t start = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (!is_digits(s, start, s.size())) return false;
  if (s.size() - start > 1 && s[start] == '0') {
    *why = "leading zeros are ambiguous: YAML 1.1 reads them as octal";
    return false;
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE) {
    *why = "too large for a 64-bit integer";
    return false;
  }
  *out = v;
  return true;
}

// Parses a YAML 1.2 core float (integers included), finite only.
bool parse_real(const std::string& s, double* out, std::string* why) {
  std::size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  const std::size_t int_begin = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  bool digits = i > int_begin;
  if (i < s.size() && s[i] == '.') {
    const std::size_t frac_begin = ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    digits = digits || i > frac_begin;
  }
  if (!digits) {
    const std::string l = ascii_lower(s.substr(int_begin));
    if (l == ".inf" || l == ".nan") *why = "it must be a finite number";
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!is_digits(s, i, s.size())) return false;
    i = s.size();
  }
  if (i != s.size()) return false;
  errno = 0;
  const double v = std::strtod(s.c_str(), nullptr);
  if (errno == ERANGE && std::isinf(v)) {
    *why = "too large";
    return false;
  }
  *out = v;
  return true;
}

bool parse_boolean(const std::string& s, bool* out) {
  if (s == "true" || s == "True" || s == "TRUE") {
    *out = true;
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    *out = false;
    return true;
  }
  return false;
}

}  // namespace

namespace {

[[noreturn]] void wrong_type(const ValueContext& ctx, const YAML::Node& node,
                             const std::string& expected, const std::string& why = {}) {
  std::string message = "expected " + expected + ", found " + describe(node);
  if (!why.empty()) message += " (" + why + ")";
  fail(ctx.source.at(node, &ctx.key_node), ctx.key, message);
}

// The scalar's text, which must be UTF-8: yaml-cpp does not check, and its emitter would turn
// invalid bytes into U+FFFD or drop the value, so a dump could not give the value back
// (found by fuzzing, docs/failure-cases.md F2).
std::string utf8_scalar(const ValueContext& ctx, const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (const std::size_t bad = utf8::first_invalid(text); bad != std::string::npos) {
    wrong_type(ctx, node, "a UTF-8 string", "invalid UTF-8 at byte " + std::to_string(bad + 1));
  }
  return text;
}

// A string field takes text. YAML 1.2's core schema reads a plain 5, 0.5 or true as a number or
// a boolean, so a string field refuses them unquoted, as a number field refuses "3": the
// config then means what it says ('5' or "true" is the text).
void require_text(const ValueContext& ctx, const YAML::Node& node) {
  if (!is_plain(node)) return;
  const std::string& text = node.Scalar();
  long long i = 0;
  double d = 0;
  bool b = false;
  std::string why;
  const char* found = parse_integer(text, &i, &why) ? "an integer"
                      : parse_boolean(text, &b)      ? "a boolean"
                      : parse_real(text, &d, &why)   ? "a number"
                                                     : nullptr;
  if (found != nullptr) {
    fail(ctx.source.at(node, &ctx.key_node), ctx.key,
         std::string("expected a string, found ") + found + " " + quote_for_message(text) +
             " (quote it to mean the text: " + quote_for_message(text) + ")");
  }
}

}  // namespace

void read_value(const ValueContext& ctx, const YAML::Node& node, int* out) {
  long long v = 0;
  std::string why;
  if (!node.IsScalar() || !is_plain(node) || !parse_integer(node.Scalar(), &v, &why)) {
    wrong_type(ctx, node, "an integer", why);
  }
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    wrong_type(ctx, node, "an integer", "too large for a 32-bit integer");
  }
  *out = static_cast<int>(v);
}

void read_value(const ValueContext& ctx, const YAML::Node& node, std::int64_t* out) {
  long long v = 0;
  std::string why;
  if (!node.IsScalar() || !is_plain(node) || !parse_integer(node.Scalar(), &v, &why)) {
    wrong_type(ctx, node, "an integer", why);
  }
  *out = static_cast<std::int64_t>(v);
}

void read_value(const ValueContext& ctx, const YAML::Node& node, double* out) {
  std::string why;
  if (!node.IsScalar() || !is_plain(node) || !parse_real(node.Scalar(), out, &why)) {
    wrong_type(ctx, node, "a number", why);
  }
}

void read_value(const ValueContext& ctx, const YAML::Node& node, bool* out) {
  if (!node.IsScalar() || !is_plain(node) || !parse_boolean(node.Scalar(), out)) {
    wrong_type(ctx, node, "a boolean (true or false)");
  }
}

void read_value(const ValueContext& ctx, const YAML::Node& node, std::string* out) {
  if (node.IsNull() && ctx.nullable) {
    out->clear();
    return;
  }
  if (!node.IsScalar()) wrong_type(ctx, node, "a string");
  require_text(ctx, node);
  *out = utf8_scalar(ctx, node);
}

void read_value(const ValueContext& ctx, const YAML::Node& node, std::vector<std::string>* out) {
  if (!node.IsSequence()) {
    wrong_type(ctx, node, "a list of strings",
               node.IsNull() ? "write [] for an empty list" : "write [a, b] or one '- a' per line");
  }
  std::vector<std::string> items;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    if (!item.IsScalar()) {
      ValueContext element{ctx.source, ctx.key_node, ctx.key + "[" + std::to_string(i) + "]",
                           false};
      wrong_type(element, item, "a string");
    }
    const ValueContext element{ctx.source, ctx.key_node, ctx.key + "[" + std::to_string(i) + "]",
                               false};
    require_text(element, item);
    items.push_back(utf8_scalar(element, item));
  }
  *out = std::move(items);
}

// ---------------------------------------------------------------------------------------------
// Documents, files, overrides.

namespace {

// Where each YAML document starts and where its root node is, from yaml-cpp's event stream;
// builds nothing.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts, roots;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& m) {
    if (roots.size() < starts.size()) roots.push_back(m);
  }
};

// The YAML document of `text` (nullopt when there is none), and an error when there is more than
// one. YAML::LoadAll is not used: in yaml-cpp 0.7 a document that begins with ','
// outside [ ] or { } makes the parser yield an empty document without consuming the ',', so
// LoadAll never returns (found by fuzzing, docs/failure-cases.md F1). Here the documents are
// counted with a bounded event pass (at most two) and only the first is built.
std::optional<YAML::Node> load_documents_bounded(const std::string& text,
                                                 const std::string& source_name) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts counter;
  int documents = 0;
  while (documents < 2 && parser.HandleNextDocument(counter)) ++documents;
  if (documents > 1) {
    auto where = [](const YAML::Mark& m) {
      return m.line < 0 ? std::string() : at_line(static_cast<std::size_t>(m.line) + 1);
    };
    const YAML::Mark second = counter.starts.at(1);
    const auto pos = static_cast<std::size_t>(std::max(second.pos, 0));
    if (pos < text.size() && text[pos] == ',') {
      throw DataError(source_name, where(second), "",
                      "YAML syntax error at column " + std::to_string(second.column + 1) +
                          ": ',' cannot begin a YAML node outside [ ] or { }");
    }
    throw DataError(source_name, where(counter.roots.size() > 1 ? counter.roots[1] : second), "",
                    "expected one YAML document, found 2 or more");
  }
  if (documents == 0) return std::nullopt;
  return YAML::Load(text);
}

}  // namespace

std::optional<YAML::Node> load_document(const std::string& text, const std::string& source_name) {
  // yaml-cpp would decode a UTF-16 file and the messages would quote it as CJK-looking text.
  if (text.rfind("\xFF\xFE", 0) == 0 || text.rfind("\xFE\xFF", 0) == 0) {
    throw DataError(source_name, at_line(1), "",
                    "is UTF-16 text (it starts with a UTF-16 byte-order mark): save it as UTF-8");
  }
  try {
    return load_documents_bounded(text, source_name);
  } catch (const YAML::ParserException& e) {
    const std::string where =
        e.mark.line < 0 ? std::string() : at_line(static_cast<std::size_t>(e.mark.line) + 1);
    std::string message = "YAML syntax error";
    if (e.mark.column >= 0) message += " at column " + std::to_string(e.mark.column + 1);
    throw DataError(source_name, where, "", message + ": " + e.msg);
  } catch (const YAML::Exception& e) {
    throw DataError(source_name, "", "", "cannot parse the YAML: " + e.msg);
  }
}

void check_utf8(const std::string& text, const std::string& source_name) {
  const std::size_t bad = utf8::first_invalid(text);
  if (bad == std::string::npos) return;
  const auto line = static_cast<std::size_t>(std::count(text.begin(), text.begin() + bad, '\n'));
  const std::size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
  const std::size_t column =
      line_start == std::string::npos || bad == 0 ? bad : bad - line_start - 1;
  throw DataError(source_name, at_line(line + 1), "",
                  "invalid UTF-8 at byte " + std::to_string(column + 1) +
                      " of the line (a config is UTF-8 text: a UTF-16 or Latin-1 file must be "
                      "converted)");
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw DataError(path, "", "", "cannot read the config: it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw DataError(path, "", "", std::string("cannot read the config: ") + std::strerror(errno));
  }
  // Read at most one byte past the limit: /dev/zero or a huge file is refused at once instead of
  // filling the memory (a config is a few KiB).
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw DataError(path, "", "", "cannot read the config: read error");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes) {
    throw DataError(path, "", "",
                    "is larger than " + std::to_string(kMaxConfigBytes >> 20) +
                        " MiB: not a config file (a config is a few KiB of YAML)");
  }
  return text;
}

Origin override_origin(const std::string& text) {
  return Origin{kCommandLine, "override " + quote_for_message(text, 200)};
}

std::pair<std::string, YAML::Node> split_override(const std::string& text,
                                                  const std::string& key_example) {
  const Origin at = override_origin(text);
  const auto eq = text.find('=');
  const std::string key = eq == std::string::npos ? std::string() : trim(text.substr(0, eq));
  if (key.empty()) fail(at, "", "an override must look like " + key_example + "=value");
  // No key is that long; refused here, so that no later message echoes a flood of key text.
  if (key.size() > kMaxOverrideKeyBytes) {
    fail(at, "",
         "the key is " + std::to_string(key.size()) + " bytes long: no key is longer than " +
             std::to_string(kMaxOverrideKeyBytes) + " (an override must look like " +
             key_example + "=value)");
  }
  try {
    return {key, YAML::Load(text.substr(eq + 1))};
  } catch (const YAML::Exception& e) {
    fail(at, key, "the value is not valid YAML: " + e.msg);
  }
}

// ---------------------------------------------------------------------------------------------
// Numbers in messages and dumps.

std::string format_real(double v) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of("ni") != std::string::npos) return s;  // inf/nan (never valid here)
  // Moderate magnitudes without an exponent: 100000.0 rather than 1.0e+5.
  const double magnitude = std::fabs(v);
  if (magnitude >= 1e-4 && magnitude < 1e15 && s.find('e') != std::string::npos) {
    const int digits = static_cast<int>(std::floor(std::log10(magnitude))) + 1;
    const int precision = std::max(
        digits, static_cast<int>(s.find('e')) - (s[0] == '-') - (s.find('.') != std::string::npos));
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    s = buf;
  }
  const auto e = s.find('e');
  std::string mantissa = e == std::string::npos ? s : s.substr(0, e);
  if (mantissa.find('.') == std::string::npos) mantissa += ".0";
  if (e == std::string::npos) return mantissa;
  // "1e-05" -> "1.0e-5": a dot and a signed exponent also read as a float in YAML 1.1 (PyYAML).
  const char sign = s[e + 1];
  std::string digits = s.substr(e + 2);
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  return mantissa + "e" + sign + digits;
}

}  // namespace dialtree::strict_yaml
