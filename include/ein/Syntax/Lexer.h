// Tokens of the .ein language, with Python-style INDENT/DEDENT.
#pragma once

#include "ein/Syntax/Diagnostics.h"

#include <string>
#include <vector>

namespace ein {

enum class TokenKind {
  Name,
  Int,
  Float,
  String,
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Colon,
  Equal,
  Arrow,
  Plus,
  Minus,
  Star,
  Slash,
  StarStar,
  At,
  SlashSlash,
  Percent,
  Less,
  LessEqual,
  Greater,
  GreaterEqual,
  EqualEqual,
  NotEqual,
  Amp,
  Pipe,
  Tilde,
  Newline,
  Indent,
  Dedent,
  Eof,
  Error
};

const char *tokenKindName(TokenKind kind);

struct Token {
  TokenKind kind;
  std::string text; // for String: the contents without quotes
  SourceLoc loc;    // for String: the opening quote
  unsigned length = 1; // bytes on the token's (first) line
  /// A String written `"""..."""` or `'''...'''` (may span lines): only
  /// a docstring may be one.
  bool tripleQuoted = false;
};

/// Splits `file` into tokens; reports malformed input to `diags`.
std::vector<Token> lex(const SourceFile &file, DiagnosticEngine &diags);

} // namespace ein
