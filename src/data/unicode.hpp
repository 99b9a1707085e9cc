#pragma once
// UTF-8 decoding and the character classes of the GPT-2 pre-tokeniser (\p{L}, \p{N}, \s).
// Classification is exact for ASCII; for other code points it uses a table of the main letter and number
// blocks (Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic, Devanagari, Thai, Georgian, Hangul, kana, CJK,
// fullwidth forms, ...). Combining marks, symbols, emoji and unlisted scripts count as "other".
// Whitespace is JavaScript's \s (the reference encoder is JavaScript): \t\n\v\f\r, space, U+00A0, U+1680,
// U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF.
#include <cstddef>
#include <cstdint>

namespace gt {

enum class CharClass : uint8_t { Letter, Number, Space, Other };

// Decodes one code point at p (n bytes available); *len gets its byte length. An invalid or truncated
// sequence yields 0xFFFFFFFF with *len = 1 (one raw byte, classified as Other).
uint32_t utf8_next(const unsigned char* p, size_t n, int* len);

CharClass classify(uint32_t cp);

}  // namespace gt
