// Located checks of internal invariants: DIALTREE_CHECK(condition, message) throws InternalError
// with the source file, line and condition when `condition` is false. An InternalError is a bug
// in dialtree, not bad usage or bad input: the command-line tools report it as such and exit with
// kExitInternalError (70, EX_SOFTWARE of sysexits.h) instead of 2 (README, "exit status").
// Bad input keeps DataError; a library function's documented argument checks keep
// std::invalid_argument. Torch-free.
#pragma once

#include <stdexcept>
#include <string>

namespace dialtree {

/// Exit status of a command that stopped on an InternalError (EX_SOFTWARE).
inline constexpr int kExitInternalError = 70;

/// A broken internal invariant. Derives from std::logic_error, as the invariant failures it
/// replaces did. what(): "internal error at model/encoder.cpp:490: check 'has_intent_head()'
/// failed: <message>".
class InternalError : public std::logic_error {
 public:
  InternalError(const char* file, int line, const char* condition, const std::string& message);
  const std::string& file() const noexcept { return file_; }  ///< path relative to the source root
  int line() const noexcept { return line_; }

 private:
  std::string file_;
  int line_;
};

/// Throws InternalError(file, line, condition, message); what DIALTREE_CHECK calls.
[[noreturn]] void check_failed(const char* file, int line, const char* condition,
                               const std::string& message);

}  // namespace dialtree

/// Throws dialtree::InternalError naming this file and line: for a place the code must never reach
/// (after a switch over every enumerator, say). Tells the compiler it does not return.
#define DIALTREE_UNREACHABLE(message) \
  ::dialtree::check_failed(__FILE__, __LINE__, "unreachable", std::string(message))

/// Throws dialtree::InternalError naming this file and line when `condition` is false. `message`
/// (anything a std::string can be built from) is evaluated only then.
#define DIALTREE_CHECK(condition, message)                                            \
  do {                                                                                \
    if (!(condition))                                                                 \
      ::dialtree::check_failed(__FILE__, __LINE__, #condition, std::string(message)); \
  } while (false)
