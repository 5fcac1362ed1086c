// engine/tokenizer/pre_tokenizer.cpp — hand-written matchers for the pre-tokenizer regexes (std::regex
// cannot do \p{L} or lookahead over code points). Depends on unicode.h and core/status.h only.
//
// A scheme is a list of stages, each a regex. As in the HF/llama.cpp reference, every stage is
// applied to every piece the previous stage produced: its matches become pieces, and the runs
// between matches become pieces too. A matcher returns the length (in code points) of the match
// that the regex would find starting exactly at `pos`, or 0; trying it at each position in turn
// gives the regex's leftmost-first matches.
#include "engine/tokenizer/pre_tokenizer.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "engine/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

using Matcher = std::size_t (*)(const Cpt* c, std::size_t pos, std::size_t end);
constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

template <class Pred>
std::size_t run(const Cpt* c, std::size_t pos, std::size_t end, Pred pred, std::size_t max = kUnbounded) {
  std::size_t n = 0;
  while (pos + n < end && n < max && pred(c[pos + n])) ++n;
  return n;
}

// `P?C{min,max}`, greedy: with the optional prefix if that leads to a match, else without.
template <class Pre, class Cls>
std::size_t prefixed_run(const Cpt* c, std::size_t pos, std::size_t end, Pre pre, Cls cls,
                         std::size_t min = 1, std::size_t max = kUnbounded) {
  if (pos < end && pre(c[pos])) {
    const std::size_t n = run(c, pos + 1, end, cls, max);
    if (n >= min) return 1 + n;
  }
  const std::size_t n = run(c, pos, end, cls, max);
  return n >= min ? n : 0;
}

// Code point classes used by the regexes.
bool is_ws(const Cpt& x) { return x.flags & kWhitespace; }
bool is_letter_c(const Cpt& x) { return x.flags & kLetter; }
bool is_number_c(const Cpt& x) { return x.flags & kNumber; }
bool is_punct_c(const Cpt& x) { return x.flags & kPunct; }
bool is_space_char(const Cpt& x) { return x.cp == ' '; }
bool is_crlf(const Cpt& x) { return x.cp == '\r' || x.cp == '\n'; }
bool is_ascii_digit(const Cpt& x) { return x.cp >= '0' && x.cp <= '9'; }
bool is_other(const Cpt& x) { return !(x.flags & (kWhitespace | kLetter | kNumber)); }  // [^\s\p{L}\p{N}]
bool is_not_crlf_letter_number(const Cpt& x) {  // [^\r\n\p{L}\p{N}]
  return !is_crlf(x) && !(x.flags & (kLetter | kNumber));
}

// 's|'t|'re|'ve|'m|'ll|'d, optionally ASCII case-insensitive (Llama 3, Qwen2).
std::size_t contraction(const Cpt* c, std::size_t pos, std::size_t end, bool fold_case) {
  if (c[pos].cp != '\'' || pos + 1 >= end) return 0;
  auto at = [&](std::size_t i) -> uint32_t {
    if (i >= end) return 0;
    uint32_t v = c[i].cp;
    if (fold_case && v >= 'A' && v <= 'Z') v += 'a' - 'A';
    return v;
  };
  const uint32_t a = at(pos + 1);
  const uint32_t b = at(pos + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S): the whole run at the end of the piece, else all but its last code point.
std::size_t ws_not_before_nonspace(const Cpt* c, std::size_t pos, std::size_t end) {
  const std::size_t n = run(c, pos, end, is_ws);
  if (n == 0) return 0;
  return pos + n == end ? n : n - 1;
}

// \s*[\r\n]+: up to and including the last CR/LF of the whitespace run.
std::size_t ws_then_newlines(const Cpt* c, std::size_t pos, std::size_t end) {
  const std::size_t n = run(c, pos, end, is_ws);
  for (std::size_t k = n; k > 0; --k) {
    if (is_crlf(c[pos + k - 1])) return k;
  }
  return 0;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+     (D = 3 for Llama 3, 1 for Qwen2)
template <std::size_t kMaxDigits>
std::size_t llama3_like(const Cpt* c, std::size_t pos, std::size_t end) {
  if (std::size_t m = contraction(c, pos, end, true)) return m;
  if (std::size_t m = prefixed_run(c, pos, end, is_not_crlf_letter_number, is_letter_c)) return m;
  if (std::size_t m = run(c, pos, end, is_number_c, kMaxDigits)) return m;
  if (std::size_t m = prefixed_run(c, pos, end, is_space_char, is_other)) {
    return m + run(c, pos + m, end, is_crlf);
  }
  if (std::size_t m = ws_then_newlines(c, pos, end)) return m;
  if (std::size_t m = ws_not_before_nonspace(c, pos, end)) return m;
  return run(c, pos, end, is_ws);
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (the references without the final \s+ give the same pieces: a lone unmatched space becomes
// a piece of its own either way)
std::size_t gpt2(const Cpt* c, std::size_t pos, std::size_t end) {
  if (std::size_t m = contraction(c, pos, end, false)) return m;
  if (std::size_t m = prefixed_run(c, pos, end, is_space_char, is_letter_c)) return m;
  if (std::size_t m = prefixed_run(c, pos, end, is_space_char, is_number_c)) return m;
  if (std::size_t m = prefixed_run(c, pos, end, is_space_char, is_other)) return m;
  if (std::size_t m = ws_not_before_nonspace(c, pos, end)) return m;
  return run(c, pos, end, is_ws);
}

// GPT-4o / o200k (gpt-oss, Llama 4), in llama.cpp's form of the HF regex (which defines the GGUF
// behaviour; std::regex has no \p{Lu} / \p{Ll}): an "upper" letter is any letter but a-z, a
// "lower" one any letter but A-Z (so a non-ASCII letter is both; marks are not letters here).
//   [^\r\n\p{L}\p{N}]?U*L+C?|[^\r\n\p{L}\p{N}]?U+L*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+          (C: 's 't 're 've 'm 'll 'd, any case)
bool is_upperish(const Cpt& x) { return (x.flags & kLetter) && !(x.cp >= 'a' && x.cp <= 'z'); }
bool is_lowerish(const Cpt& x) { return (x.flags & kLetter) && !(x.cp >= 'A' && x.cp <= 'Z'); }

// U*L+ at pos, with the regex's backtracking: the greedy U* gives back code points until L+ can
// start (the first that does wins, L+ then as long as it goes); 0: no match.
std::size_t upper_then_lower(const Cpt* c, std::size_t pos, std::size_t end) {
  const std::size_t u = run(c, pos, end, is_upperish);
  for (std::size_t k = u + 1; k-- > 0;) {
    if (const std::size_t l = run(c, pos + k, end, is_lowerish)) return k + l;
  }
  return 0;
}
// U+L* at pos.
std::size_t upper_plus_lower(const Cpt* c, std::size_t pos, std::size_t end) {
  const std::size_t u = run(c, pos, end, is_upperish);
  return u == 0 ? 0 : u + run(c, pos + u, end, is_lowerish);
}

// [^\r\n\p{L}\p{N}]?X(contraction)?: with the optional prefix when X then matches, else without.
template <std::size_t (*X)(const Cpt*, std::size_t, std::size_t)>
std::size_t gpt4o_word(const Cpt* c, std::size_t pos, std::size_t end) {
  std::size_t m = 0;
  if (pos < end && is_not_crlf_letter_number(c[pos])) {
    if (const std::size_t w = X(c, pos + 1, end)) m = 1 + w;
  }
  if (m == 0) m = X(c, pos, end);
  if (m == 0) return 0;
  return pos + m < end ? m + contraction(c, pos + m, end, true) : m;
}

std::size_t gpt4o(const Cpt* c, std::size_t pos, std::size_t end) {
  if (std::size_t m = gpt4o_word<upper_then_lower>(c, pos, end)) return m;
  if (std::size_t m = gpt4o_word<upper_plus_lower>(c, pos, end)) return m;
  if (std::size_t m = run(c, pos, end, is_number_c, 3)) return m;
  if (std::size_t m = prefixed_run(c, pos, end, is_space_char, is_other)) {
    return m + run(c, pos + m, end, [](const Cpt& x) { return is_crlf(x) || x.cp == '/'; });
  }
  if (std::size_t m = ws_then_newlines(c, pos, end)) return m;
  if (std::size_t m = ws_not_before_nonspace(c, pos, end)) return m;
  return run(c, pos, end, is_ws);
}

std::size_t single_number(const Cpt* c, std::size_t pos, std::size_t end) {  // \p{N}
  return run(c, pos, end, is_number_c, 1);
}
std::size_t numbers(const Cpt* c, std::size_t pos, std::size_t end) {  // \p{N}+
  return run(c, pos, end, is_number_c);
}
std::size_t three_ascii_digits(const Cpt* c, std::size_t pos, std::size_t end) {  // [0-9][0-9][0-9]
  return run(c, pos, end, is_ascii_digit, 3) == 3 ? 3 : 0;
}
std::size_t single_crlf(const Cpt* c, std::size_t pos, std::size_t end) {  // [\r\n]
  return run(c, pos, end, is_crlf, 1);
}

// Default: [\p{P}\$\+<=>\^~\|]+ ; Falcon adds the backtick.
bool is_default_punct(const Cpt& x) {
  return (x.flags & kPunct) || x.cp == '$' || x.cp == '+' || x.cp == '<' || x.cp == '=' ||
         x.cp == '>' || x.cp == '^' || x.cp == '~' || x.cp == '|';
}
std::size_t default_punct(const Cpt* c, std::size_t pos, std::size_t end) {
  return run(c, pos, end, is_default_punct);
}
std::size_t falcon_punct(const Cpt* c, std::size_t pos, std::size_t end) {
  return run(c, pos, end, [](const Cpt& x) { return is_default_punct(x) || x.cp == '`'; });
}

// [一-龥ࠀ-一가-퟿]+ (DeepSeek): U+4E00-9FA5, U+0800-4E00, U+AC00-D7FF.
std::size_t deepseek_cjk(const Cpt* c, std::size_t pos, std::size_t end) {
  return run(c, pos, end, [](const Cpt& x) {
    return (x.cp >= 0x800 && x.cp <= 0x9FA5) || (x.cp >= 0xAC00 && x.cp <= 0xD7FF);
  });
}

// The cased-letter class of DeepSeek LLM's second split regex, as code point ranges.
constexpr std::pair<uint32_t, uint32_t> kDeepseekLetters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
    {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377},
    {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C},
    {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
    {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF},
    {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
    {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC},
    {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
    {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
    {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
    {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE},
    {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787},
    {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

bool is_deepseek_letter(const Cpt& x) {
  for (const auto& [lo, hi] : kDeepseekLetters) {
    if (x.cp < lo) return false;  // the table is sorted
    if (x.cp <= hi) return true;
  }
  return false;
}

// \s?[A-Za-zµÀ-Ö...]+
std::size_t deepseek_letters(const Cpt* c, std::size_t pos, std::size_t end) {
  return prefixed_run(c, pos, end, is_ws, is_deepseek_letter);
}
// \s?[!-/:-~！-／：-～‘-‟　-。]+
std::size_t deepseek_punct(const Cpt* c, std::size_t pos, std::size_t end) {
  return prefixed_run(c, pos, end, is_ws, [](const Cpt& x) {
    const uint32_t v = x.cp;
    return (v >= 0x21 && v <= 0x2F) || (v >= 0x3A && v <= 0x7E) || (v >= 0xFF01 && v <= 0xFF0F) ||
           (v >= 0xFF1A && v <= 0xFF5E) || (v >= 0x2018 && v <= 0x201F) || (v >= 0x3000 && v <= 0x3002);
  });
}
// \s+$
std::size_t trailing_ws(const Cpt* c, std::size_t pos, std::size_t end) {
  const std::size_t n = run(c, pos, end, is_ws);
  return pos + n == end ? n : 0;
}
// \s?\p{L}+ and \s?\p{P}+
std::size_t ws_letters(const Cpt* c, std::size_t pos, std::size_t end) {
  return prefixed_run(c, pos, end, is_ws, is_letter_c);
}
std::size_t ws_punct(const Cpt* c, std::size_t pos, std::size_t end) {
  return prefixed_run(c, pos, end, is_ws, is_punct_c);
}
// " ?[^(\s|.,!?…。，、।۔،)]+" (BLOOM): the parentheses and bar are literal class members.
std::size_t bloom(const Cpt* c, std::size_t pos, std::size_t end) {
  return prefixed_run(c, pos, end, is_space_char, [](const Cpt& x) {
    switch (x.cp) {
      case '(': case ')': case '|': case '.': case ',': case '!': case '?':
      case 0x2026: case 0x3002: case 0xFF0C: case 0x3001: case 0x0964: case 0x06D4: case 0x060C:
        return false;
      default:
        return !is_ws(x);
    }
  });
}

struct Scheme {
  const Matcher* stages;
  std::size_t count;
};

constexpr Matcher kDefault[] = {default_punct, gpt2, numbers, three_ascii_digits};
constexpr Matcher kLlama3[] = {llama3_like<3>};
constexpr Matcher kQwen2[] = {llama3_like<1>};
constexpr Matcher kGpt2[] = {gpt2};
constexpr Matcher kStarcoder[] = {single_number, gpt2};
constexpr Matcher kFalcon[] = {falcon_punct, gpt2, three_ascii_digits};
constexpr Matcher kDeepseekLlm[] = {single_crlf, deepseek_letters, deepseek_punct, trailing_ws, deepseek_cjk, numbers};
constexpr Matcher kDeepseekCoder[] = {single_crlf, ws_letters, ws_punct, deepseek_cjk, single_number};
constexpr Matcher kBloom[] = {bloom};
constexpr Matcher kViking[] = {bloom, single_number};
constexpr Matcher kGpt4o[] = {gpt4o};

template <std::size_t N>
constexpr Scheme scheme(const Matcher (&m)[N]) { return Scheme{m, N}; }

Scheme scheme_of(PreTokenizerKind kind) {
  switch (kind) {
    case PreTokenizerKind::Default: return scheme(kDefault);
    case PreTokenizerKind::Llama3: return scheme(kLlama3);
    case PreTokenizerKind::Qwen2: return scheme(kQwen2);
    case PreTokenizerKind::Gpt2: return scheme(kGpt2);
    case PreTokenizerKind::Starcoder: return scheme(kStarcoder);
    case PreTokenizerKind::Falcon: return scheme(kFalcon);
    case PreTokenizerKind::DeepseekLlm: return scheme(kDeepseekLlm);
    case PreTokenizerKind::DeepseekCoder: return scheme(kDeepseekCoder);
    case PreTokenizerKind::Bloom: return scheme(kBloom);
    case PreTokenizerKind::Viking: return scheme(kViking);
    case PreTokenizerKind::Gpt4o: return scheme(kGpt4o);
  }
  return scheme(kDefault);
}

using Span = std::pair<std::size_t, std::size_t>;  // code point index range [first, second)

void apply_stage(Matcher match, const Cpt* c, const std::vector<Span>& in, std::vector<Span>& out) {
  out.clear();
  for (const auto& [begin, end] : in) {
    std::size_t gap = begin;
    std::size_t pos = begin;
    while (pos < end) {
      const std::size_t m = match(c, pos, end);
      if (m == 0) {
        ++pos;
        continue;
      }
      if (gap < pos) out.emplace_back(gap, pos);
      out.emplace_back(pos, pos + m);
      pos += m;
      gap = pos;
    }
    if (gap < end) out.emplace_back(gap, end);
  }
}

}  // namespace

Expected<PreTokenizerInfo> pre_tokenizer_from_name(std::string_view pre) {
  auto any_of = [&](std::initializer_list<std::string_view> names) {
    for (auto n : names) {
      if (pre == n) return true;
    }
    return false;
  };
  PreTokenizerInfo info;
  if (pre.empty() || pre == "default") {
    info.kind = PreTokenizerKind::Default;
  } else if (any_of({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"})) {
    info = {PreTokenizerKind::Llama3, true, true};
  } else if (any_of({"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"})) {
    info.kind = PreTokenizerKind::Llama3;
  } else if (any_of({"qwen2", "deepseek-r1-qwen", "kormo", "megrez", "stablelm2", "hunyuan", "grok-2"})) {
    info.kind = PreTokenizerKind::Qwen2;
  } else if (any_of({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es",
                     "jina-v2-de", "jina-v2-code", "roberta-bpe", "a.x-4.0", "mellum", "mpt", "olmo",
                     "jais", "trillion", "granite-docling", "exaone4"})) {
    info.kind = PreTokenizerKind::Gpt2;
  } else if (any_of({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"})) {
    info.kind = PreTokenizerKind::Starcoder;
  } else if (pre == "falcon") {
    info.kind = PreTokenizerKind::Falcon;
  } else if (pre == "deepseek-llm") {
    info.kind = PreTokenizerKind::DeepseekLlm;
  } else if (pre == "deepseek-coder") {
    info.kind = PreTokenizerKind::DeepseekCoder;
  } else if (any_of({"bloom", "poro-chat", "gpt3-finnish"})) {
    info.kind = PreTokenizerKind::Bloom;
  } else if (pre == "viking") {
    info.kind = PreTokenizerKind::Viking;
  } else if (any_of({"gpt-4o", "llama4", "kanana2", "talkie"})) {
    info.kind = PreTokenizerKind::Gpt4o;
  } else {
    return make_error(Code::Unsupported, "tokenizer.ggml.pre '" + std::string(pre) +
                                             "': pre-tokenizer not supported");
  }
  return info;
}

std::vector<Piece> pre_tokenize(PreTokenizerKind kind, std::string_view text) {
  std::vector<Piece> pieces;
  if (text.empty()) return pieces;
  const std::vector<Cpt> cps = decode_utf8(text);
  std::vector<Span> spans{{0, cps.size()}};
  std::vector<Span> next;
  const Scheme s = scheme_of(kind);
  for (std::size_t i = 0; i < s.count; ++i) {
    apply_stage(s.stages[i], cps.data(), spans, next);
    spans.swap(next);
  }
  pieces.reserve(spans.size());
  for (const auto& [first, last] : spans) {
    const std::size_t b = cps[first].offset;
    const std::size_t e = last < cps.size() ? cps[last].offset : text.size();
    pieces.push_back(Piece{b, e});
  }
  return pieces;
}

}  // namespace strata::tokenizer
