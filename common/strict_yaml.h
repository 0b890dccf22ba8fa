// Strict YAML reading shared by every config reader (the pretraining config, the fine-tuning
// recipe): YAML 1.2 core scalars only (no quoted numbers, no yes/no booleans, no octal), UTF-8
// strings, one document per file, file:line (or the override's text) in every error, and range
// messages in one wording. docs/training.md "Config" describes the rules users see. Torch-free.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/value_range.h"

namespace dialtree::strict_yaml {

/// Where a value came from, for error messages.
struct Origin {
  std::string file;   ///< the config file, or "<command line>" for an override
  std::string where;  ///< "line N", "override 'k=v'", or "" when unknown
};

/// An open upper bound of a real range ("> 0" is (0, kInf)).
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// The upper bound of every size and count in a config (batch sizes, widths, table sizes): far
/// beyond any real value, low enough that products of two stay in 64 bits.
inline constexpr long long kMaxSize = 1LL << 20;

/// The file name overrides are reported against.
inline constexpr char kCommandLine[] = "<command line>";

/// Where the nodes of one YAML document come from: a file (node marks are lines) or one
/// command-line override (all of its nodes share one place: the override's text).
struct Source {
  std::string file;
  std::string override_text;  ///< non-empty for an override
  /// The origin of `node`. A null value has no text of its own (its mark is where the next
  /// token starts), so `key_node`, when given, names the line instead.
  Origin at(const YAML::Node& node, const YAML::Node* key_node = nullptr) const;
};

/// Throws DataError(at.file, at.where, key, message).
[[noreturn]] void fail(const Origin& at, const std::string& key, const std::string& message);

/// One value being read: its document, its key's node (for the line of a null value), the full
/// key path used in messages, and whether null means "empty" (strings only).
struct ValueContext {
  const Source& source;
  const YAML::Node& key_node;
  std::string key;
  bool nullable = false;
};

/// "the string \"3\"", "'ten'", "a list", "a mapping", "an empty value (null)": how a found
/// value is named in "expected X, found Y".
std::string describe(const YAML::Node& node);

/// True when the scalar was written plainly (not quoted, not a block literal, not !!str).
bool is_plain(const YAML::Node& node);

/// Strict readers: plain decimal integers (no leading zeros, range-checked), YAML 1.2 core
/// finite floats, true/false (and True/TRUE/False/FALSE), UTF-8 strings, lists of UTF-8
/// strings. @throws DataError at the value's origin: "expected an integer, found 'ten'".
void read_value(const ValueContext& ctx, const YAML::Node& node, int* out);
void read_value(const ValueContext& ctx, const YAML::Node& node, std::int64_t* out);
void read_value(const ValueContext& ctx, const YAML::Node& node, double* out);
void read_value(const ValueContext& ctx, const YAML::Node& node, bool* out);
void read_value(const ValueContext& ctx, const YAML::Node& node, std::string* out);
void read_value(const ValueContext& ctx, const YAML::Node& node, std::vector<std::string>* out);

/// The single YAML document of `text`, or nullopt for an empty text (comments only).
/// Never calls YAML::LoadAll, which yaml-cpp 0.7 never returns from for a document that begins
/// with ',' (docs/failure-cases.md F1): documents are counted with a bounded event pass.
/// @throws DataError naming `source_name`, the line and column: a syntax error, or more than
///   one document.
std::optional<YAML::Node> load_document(const std::string& text, const std::string& source_name);

/// Checks that the whole of `text` is UTF-8: comments and keys too, which no value reader sees.
/// Readers call it after their values (whose own checks name the key). @throws DataError naming
/// `source_name`, the line and the byte within it.
void check_utf8(const std::string& text, const std::string& source_name);

/// The largest config file read_file() accepts: 4 MiB.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{4} << 20;

/// The whole file at `path`. @throws DataError: missing, a directory, unreadable, or larger
/// than kMaxConfigBytes (read only that far: /dev/zero is refused at once).
std::string read_file(const std::string& path);

/// Where an override came from, for errors: {kCommandLine, "override 'k=v'"}, the text escaped
/// and cut after 200 code points as quote_for_message() (common/error.h) does, so a long or
/// binary override cannot flood the terminal.
Origin override_origin(const std::string& text);

/// The longest key split_override() accepts, in bytes: far beyond any real key path
/// ("tasks.dstc8_sgd.early_stopping_patience" is 40).
inline constexpr std::size_t kMaxOverrideKeyBytes = 200;

/// An override "key=value" split into its trimmed key and its value parsed as YAML (so
/// `lr=1e-4` reads as the number and `views=[I, D]` as a list).
/// @throws DataError against kCommandLine: no '=' or an empty key ("must look like
///   `key_example`=value"), a key longer than kMaxOverrideKeyBytes (its length is named; the key
///   shows only in the override's 200-character excerpt), or a value that is not valid YAML.
std::pair<std::string, YAML::Node> split_override(const std::string& text,
                                                  const std::string& key_example);

/// The shortest text that reads back as `v`, always with a dot or an exponent so YAML 1.1
/// readers see a float: 1e-05 -> "1.0e-5", 100000 -> "100000.0".
std::string format_real(double v);

/// `s` without leading and trailing blanks and tabs.
std::string trim(const std::string& s);

}  // namespace dialtree::strict_yaml
