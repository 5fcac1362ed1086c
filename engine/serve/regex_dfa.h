// engine/serve/regex_dfa.h — JSON Schema `pattern`: a subset of ECMA-262 regular expressions
// compiled to a deterministic automaton over the bytes (UTF-8) of a string's value, which the
// JSON recognizer steps through as a string is written. No HTTP, no model.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace strata::serve {

// The subset: literal characters (any UTF-8), `.`, classes `[...]` / `[^...]` with ranges,
// `\d \w \s \D \W \S`, escapes (`\n \t \r \f \v \0 \xHH \uHHHH`, an escaped punctuation
// character), groups `(...)`, `(?:...)`, `(?<name>...)`, alternation `|`, quantifiers
// `* + ? {n} {n,} {n,m}` (lazy `*?` etc. match the same strings), `^` as the first and `$` as the
// last character. Without `^` (`$`) the pattern may match anywhere: JSON Schema patterns are not
// anchored. Classes and `\s` are ASCII (a negated class and `.` also match any non-ASCII
// character; `.` matches neither \n nor \r); a class may list non-ASCII characters but not as
// range ends or negated. Anything else (backreferences, lookaround, `\b`, `\p{…}`, flags, an
// anchor inside the pattern) is InvalidArgument naming the feature.
struct RegexDfa {
  static constexpr int32_t kDead = -1;
  std::vector<std::array<int32_t, 256>> next;  // [state][byte] -> state or kDead (a state that can never accept is dead)
  std::vector<uint8_t> accepting;              // [state]
  int32_t start = 0;
};

// The compile budget: the NFA (a quantifier {n,m} copies its operand) and the DFA are bounded;
// over either, OutOfRange naming the limit. dfa_states_left: the DFA states the schema still has.
constexpr size_t kMaxPatternNfaStates = 32768;
constexpr size_t kMaxPatternDfaStates = 4096;  // all patterns of one schema together (1 KiB each)
constexpr size_t kMaxPatternBytes = 4096;
constexpr int kMaxPatternCompileMs = 250;  // and time, on the request's own thread

Expected<RegexDfa> compile_pattern(const std::string& pattern, size_t dfa_states_left = kMaxPatternDfaStates);

// Whether the whole of `text` is accepted by the automaton (tests; the recognizer steps it).
bool pattern_matches(const RegexDfa& dfa, const std::string& text);

}  // namespace strata::serve
