// UTF-8 decoding and the code point classes (identifier, display width) used by
// the lexer, the pattern parser and the shape parser.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ein::unicode {

/// Why a byte sequence is not UTF-8.
enum class Utf8Error {
  None,
  StrayContinuation, // 0x80-0xBF where a character should start
  InvalidByte,       // 0xF8-0xFF: never part of UTF-8
  Truncated,         // a lead byte without all its continuation bytes
  Overlong,          // a longer encoding than the code point needs
  Surrogate,         // U+D800-U+DFFF, reserved for UTF-16
  TooLarge,          // beyond U+10FFFF
};

/// One character read from UTF-8 text.
struct DecodedChar {
  char32_t codePoint = 0; // meaningful only when valid()
  /// Bytes consumed, at least 1. An invalid sequence is consumed as one unit:
  /// its lead byte and the continuation bytes that follow it (up to the
  /// length the lead byte announces), or a single stray byte.
  unsigned size = 1;
  Utf8Error error = Utf8Error::None;
  bool valid() const { return error == Utf8Error::None; }
};

/// Decodes the character starting at byte `pos` (< text.size()).
DecodedChar decodeUtf8(std::string_view text, size_t pos);

/// "stray continuation byte", "overlong encoding", ...
const char *describe(Utf8Error error);

/// Each byte as `\xNN` (lowercase hex): `"\xce\xb1"`.
std::string escapeBytes(std::string_view bytes);

/// `text` with every invalid UTF-8 sequence replaced by its `\xNN` escapes,
/// so the result is valid UTF-8.
std::string sanitizeUtf8(std::string_view text);

/// Python's identifier rules: the first code point is XID_Start or `_`, the
/// others XID_Continue. Names are compared by code points: no NFKC
/// normalisation is applied (unlike Python source, like einops patterns).
bool isIdentifierStart(char32_t c);
bool isIdentifierContinue(char32_t c);

/// The byte offset where the identifier starting at `pos` ends; `pos` when no
/// identifier starts there. Stops at invalid UTF-8.
size_t scanIdentifier(std::string_view text, size_t pos);

/// True when all of `text` is one identifier.
bool isIdentifier(std::string_view text);

/// Terminal columns the code point takes: 2 for East Asian wide and
/// fullwidth characters, 0 for combining marks and format characters, else 1.
unsigned displayWidth(char32_t c);

/// Code points in `text`; an invalid sequence counts as one.
size_t countCodePoints(std::string_view text);

/// How diagnostics name a code point: `'×' (U+00D7)`; control and invisible
/// characters only by number (`U+0085`), ASCII controls as `'\x01'`.
std::string describeCodePoint(char32_t c);

/// What is wrong with the invalid sequence at `pos`, with its bytes:
/// `truncated sequence '\xce'`.
std::string describeInvalidUtf8(std::string_view text, size_t pos);

/// The UTF-8 encoding of a code point (<= U+10FFFF, not a surrogate).
std::string encodeUtf8(char32_t c);

/// The Unicode version the tables were generated from ("14.0.0").
const char *unicodeVersion();

} // namespace ein::unicode
