// The .ein lexer: names, numbers, strings, operators, and indentation tokens.
#include "ein/Syntax/Lexer.h"
#include "ein/Syntax/Unicode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace ein {

const char *tokenKindName(TokenKind kind) {
  switch (kind) {
  case TokenKind::Name: return "name";
  case TokenKind::Int: return "integer";
  case TokenKind::Float: return "number";
  case TokenKind::String: return "string";
  case TokenKind::LParen: return "'('";
  case TokenKind::RParen: return "')'";
  case TokenKind::LBracket: return "'['";
  case TokenKind::RBracket: return "']'";
  case TokenKind::Comma: return "','";
  case TokenKind::Colon: return "':'";
  case TokenKind::Equal: return "'='";
  case TokenKind::Arrow: return "'->'";
  case TokenKind::Plus: return "'+'";
  case TokenKind::Minus: return "'-'";
  case TokenKind::Star: return "'*'";
  case TokenKind::Slash: return "'/'";
  case TokenKind::StarStar: return "'**'";
  case TokenKind::SlashSlash:
    return "'//'";
  case TokenKind::Percent:
    return "'%'";
  case TokenKind::Less:
    return "'<'";
  case TokenKind::LessEqual:
    return "'<='";
  case TokenKind::Greater:
    return "'>'";
  case TokenKind::GreaterEqual:
    return "'>='";
  case TokenKind::EqualEqual:
    return "'=='";
  case TokenKind::NotEqual:
    return "'!='";
  case TokenKind::Amp:
    return "'&'";
  case TokenKind::Pipe:
    return "'|'";
  case TokenKind::Tilde:
    return "'~'";
  case TokenKind::At:
    return "'@'";
  case TokenKind::Newline: return "end of line";
  case TokenKind::Indent: return "indent";
  case TokenKind::Dedent: return "dedent";
  case TokenKind::Eof: return "end of file";
  case TokenKind::Error: return "error";
  }
  return "token";
}

namespace {

/// Reports every invalid UTF-8 sequence in s[begin, end) (a comment or a
/// string on line `line`, starting at byte column `col`); true if there was
/// one.
bool reportInvalidUtf8(const std::string &s, size_t begin, size_t end,
                       unsigned line, unsigned col, unsigned fileId,
                       DiagnosticEngine &diags) {
  bool bad = false;
  for (size_t i = begin; i < end;) {
    auto d = unicode::decodeUtf8(s, i);
    if (!d.valid()) {
      diags.error({line, col + static_cast<unsigned>(i - begin), fileId},
                  "invalid UTF-8 in source: " +
                      unicode::describeInvalidUtf8(s, i),
                  d.size);
      bad = true;
    }
    i += d.size;
  }
  return bad;
}

/// The error for a Python control-flow statement (`if`, `for`, `while`)
/// whose keyword is s[begin, end): the keyword must start a statement and
/// not be a name being assigned (there are no reserved words).
std::optional<std::string> controlFlowMessage(const std::string &s,
                                              size_t begin, size_t end,
                                              const std::vector<Token> &out) {
  std::string word = s.substr(begin, end - begin);
  if (word != "if" && word != "for" && word != "while")
    return std::nullopt;
  // `for l in range(layers):` is the one loop (the parser reads it); any
  // other `for` gets the parser's message.
  if (word == "for")
    return std::nullopt;
  bool startsStatement = out.empty() || out.back().kind == TokenKind::Newline ||
                         out.back().kind == TokenKind::Indent ||
                         out.back().kind == TokenKind::Dedent;
  size_t next = s.find_first_not_of(" \t", end);
  if (!startsStatement || next == std::string::npos || s[next] == '=' ||
      s[next] == ',' || s[next] == '\n')
    return std::nullopt;
  if (word == "if")
    return std::string(
        "ein has no 'if' (no control flow: every statement runs once); to "
        "choose between two tensors elementwise use where(cond, a, b)");
  return fmt::format(
      "ein has no '{}' loop (no control flow); write the loop over an axis "
      "as one operation on the whole tensor: einsum or reduce to sum over "
      "it, repeat to copy along it, rearrange to move it",
      word);
}

/// Whether the last token of `out` is the module name of a statement
/// `from NAME import ...`, which may be dotted (`ein.optim`).
bool isModuleName(const std::vector<Token> &out) {
  size_t n = out.size();
  if (n < 2 || out[n - 1].kind != TokenKind::Name ||
      out[n - 2].kind != TokenKind::Name || out[n - 2].text != "from")
    return false;
  return n == 2 || out[n - 3].kind == TokenKind::Newline ||
         out[n - 3].kind == TokenKind::Indent ||
         out[n - 3].kind == TokenKind::Dedent;
}

} // namespace

std::vector<Token> lex(const SourceFile &file, DiagnosticEngine &diags) {
  const std::string &s = file.text;
  std::vector<Token> out;
  std::vector<unsigned> indents{0};
  size_t i = 0;
  unsigned line = 1, col = 1;
  // Open brackets not yet closed, innermost last: newlines inside brackets
  // are ignored, and one left open at the end of the file is reported where
  // it opens (Python: "'(' was never closed").
  std::vector<std::pair<char, SourceLoc>> openBrackets;
  const unsigned errorsBefore = diags.errorCount();
  bool atLineStart = true;

  auto push = [&](TokenKind k, std::string text, SourceLoc loc, unsigned len) {
    out.push_back({k, std::move(text), loc, len});
  };

  while (i < s.size()) {
    if (atLineStart && openBrackets.empty()) {
      // Measure indentation; blank and comment-only lines do not count.
      unsigned width = 0;
      size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) {
        width += s[j] == '\t' ? 8 - width % 8 : 1;
        ++j;
      }
      if (j >= s.size() || s[j] == '\n' || s[j] == '#' || s[j] == '\r') {
        size_t rest = j;
        while (j < s.size() && s[j] != '\n')
          ++j;
        reportInvalidUtf8(s, rest, j, line,
                          col + static_cast<unsigned>(rest - i), file.id,
                          diags);
        if (j >= s.size()) {
          // The last line, without a final newline: the end of the file is
          // on this line, not on one past it.
          col += static_cast<unsigned>(j - i);
          i = j;
          continue;
        }
        i = j + 1;
        ++line;
        col = 1;
        continue;
      }
      col += static_cast<unsigned>(j - i);
      i = j;
      SourceLoc loc{line, col, file.id};
      if (width > indents.back()) {
        indents.push_back(width);
        push(TokenKind::Indent, "", loc, 1);
      } else {
        while (width < indents.back()) {
          indents.pop_back();
          push(TokenKind::Dedent, "", loc, 1);
        }
        if (width != indents.back())
          diags.error(loc, "inconsistent indentation");
      }
      atLineStart = false;
    }
    char c = s[i];
    SourceLoc loc{line, col, file.id};
    if (c == '\n') {
      if (openBrackets.empty())
        push(TokenKind::Newline, "", loc, 1);
      ++i;
      ++line;
      col = 1;
      atLineStart = openBrackets.empty(); // inside brackets a line continues
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      ++col;
      continue;
    }
    if (c == '#') {
      size_t j = i;
      while (j < s.size() && s[j] != '\n')
        ++j;
      reportInvalidUtf8(s, i, j, line, col, file.id, diags);
      col += static_cast<unsigned>(j - i);
      i = j;
      continue;
    }
    // Python's identifiers: XID_Start or '_', then XID_Continue.
    if (size_t j = unicode::scanIdentifier(s, i); j > i) {
      // `if`, `for`, `while` starting a statement: recognised here, before
      // the rest of the line is lexed, because a condition holds characters
      // that are no ein token (`<`, `%`, `!`).
      if (auto message = controlFlowMessage(s, i, j, out)) {
        diags.error(loc, *message, static_cast<unsigned>(j - i));
        push(TokenKind::Error, "", loc, 1);
        while (j < s.size() && s[j] != '\n')
          ++j;
        col += static_cast<unsigned>(j - i);
        i = j;
        continue;
      }
      push(TokenKind::Name, s.substr(i, j - i), loc, static_cast<unsigned>(j - i));
      col += static_cast<unsigned>(j - i);
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t j = i;
      bool isFloat = false;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
        ++j;
      if (j < s.size() && s[j] == '.') {
        isFloat = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
          ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-'))
          ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          isFloat = true;
          j = k;
          while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
            ++j;
        }
      }
      auto next =
          j < s.size() ? unicode::decodeUtf8(s, j) : unicode::DecodedChar{};
      if (j < s.size() && next.valid() &&
          unicode::isIdentifierContinue(next.codePoint)) {
        diags.error(loc, "malformed number", static_cast<unsigned>(j - i + 1));
        push(TokenKind::Error, "", loc, 1);
      } else {
        push(isFloat ? TokenKind::Float : TokenKind::Int, s.substr(i, j - i), loc,
             static_cast<unsigned>(j - i));
      }
      col += static_cast<unsigned>(j - i);
      i = j;
      continue;
    }
    if ((c == '"' || c == '\'') && s.compare(i, 3, std::string(3, c)) == 0) {
      // A triple-quoted string (a docstring): it may span lines; its
      // contents are ignored, so backslashes are allowed.
      size_t close = s.find(std::string(3, c), i + 3);
      if (close == std::string::npos) {
        diags.error(loc, "unterminated triple-quoted string", 3);
        push(TokenKind::Error, "", loc, 3);
        break;
      }
      size_t lineEnd = s.find('\n', i);
      unsigned firstLine =
          static_cast<unsigned>(std::min(lineEnd, close + 3) - i);
      bool bad = false;
      unsigned segmentLine = line, segmentCol = col + 3;
      for (size_t k = i + 3, start = k; k <= close; ++k)
        if (k == close || s[k] == '\n') {
          bad |= reportInvalidUtf8(s, start, k, segmentLine, segmentCol,
                                   file.id, diags);
          ++segmentLine;
          segmentCol = 1;
          start = k + 1;
        }
      push(bad ? TokenKind::Error : TokenKind::String,
           s.substr(i + 3, close - i - 3), loc, firstLine);
      out.back().tripleQuoted = true;
      for (; i < close + 3; ++i) {
        if (s[i] == '\n') {
          ++line;
          col = 1;
        } else {
          ++col;
        }
      }
      continue;
    }
    if (c == '.' && !out.empty() && out.back().kind == TokenKind::Name &&
        out.back().loc.line == line &&
        out.back().loc.col + out.back().length == col &&
        unicode::scanIdentifier(s, i + 1) > i + 1) {
      size_t end = unicode::scanIdentifier(s, i + 1);
      if (isModuleName(out)) {
        // `from ein.optim import adamw`: a dotted module name is one name.
        out.back().text += s.substr(i, end - i);
        out.back().length += static_cast<unsigned>(end - i);
        col += static_cast<unsigned>(end - i);
        i = end;
        continue;
      }
      // `np.exp(x)`, `x.shape`: a Python habit, with its own message.
      std::string object = out.back().text,
                  attribute = s.substr(i + 1, end - i - 1);
      static const char *const builtins[] = {
          "rearrange", "reduce", "repeat", "einsum", "pack", "unpack", "astype",
          "exp",       "log",    "sqrt",   "rsqrt",  "relu", "tanh"};
      bool isBuiltin = false;
      for (const char *b : builtins)
        isBuiltin |= attribute == b;
      diags.error(out.back().loc,
                  isBuiltin
                      ? fmt::format("'{}.{}': ein has no modules; its "
                                    "operations are built in: call {}(...)",
                                    object, attribute, attribute)
                      : fmt::format("'{}.{}': ein has no attributes or "
                                    "methods; operations are functions such "
                                    "as einsum, rearrange and reduce",
                                    object, attribute),
                  static_cast<unsigned>(end - i) + out.back().length);
      push(TokenKind::Error, "", loc, 1);
      col += static_cast<unsigned>(end - i);
      i = end;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != c && s[j] != '\n' && s[j] != '\\')
        ++j;
      if (j >= s.size() || s[j] != c) {
        if (j < s.size() && s[j] == '\\')
          diags.error({line, col + static_cast<unsigned>(j - i), file.id},
                      "escape sequences are not supported in strings");
        else
          diags.error(loc, "unterminated string");
        push(TokenKind::Error, "", loc, 1);
        while (j < s.size() && s[j] != '\n')
          ++j;
        col += static_cast<unsigned>(j - i);
        i = j;
        continue;
      }
      // Invalid UTF-8 is reported here; the string then stands for nothing.
      bool bad = reportInvalidUtf8(s, i + 1, j, line, col + 1, file.id, diags);
      push(bad ? TokenKind::Error : TokenKind::String,
           s.substr(i + 1, j - i - 1), loc, static_cast<unsigned>(j - i + 1));
      col += static_cast<unsigned>(j + 1 - i);
      i = j + 1;
      continue;
    }
    auto two = s.substr(i, 2);
    TokenKind kind = TokenKind::Error;
    unsigned len = 1;
    if (two == "->") kind = TokenKind::Arrow, len = 2;
    else if (two == "**") kind = TokenKind::StarStar, len = 2;
    else if (two == "//")
      kind = TokenKind::SlashSlash, len = 2;
    else if (two == "<=")
      kind = TokenKind::LessEqual, len = 2;
    else if (two == ">=")
      kind = TokenKind::GreaterEqual, len = 2;
    else if (two == "==")
      kind = TokenKind::EqualEqual, len = 2;
    else if (two == "!=")
      kind = TokenKind::NotEqual, len = 2;
    else switch (c) {
      case '(': case '[':
        kind = c == '(' ? TokenKind::LParen : TokenKind::LBracket;
        openBrackets.push_back({c, loc});
        break;
      case ')': case ']':
        kind = c == ')' ? TokenKind::RParen : TokenKind::RBracket;
        if (!openBrackets.empty())
          openBrackets.pop_back();
        break;
      case ',': kind = TokenKind::Comma; break;
      case ':': kind = TokenKind::Colon; break;
      case '=': kind = TokenKind::Equal; break;
      case '+': kind = TokenKind::Plus; break;
      case '-': kind = TokenKind::Minus; break;
      case '*': kind = TokenKind::Star; break;
      case '/': kind = TokenKind::Slash; break;
      case '%':
        kind = TokenKind::Percent;
        break;
      case '<':
        kind = TokenKind::Less;
        break;
      case '>':
        kind = TokenKind::Greater;
        break;
      case '&':
        kind = TokenKind::Amp;
        break;
      case '|':
        kind = TokenKind::Pipe;
        break;
      case '~':
        kind = TokenKind::Tilde;
        break;
      case '@':
        kind = TokenKind::At;
        break;
      default: break;
    }
    if (kind == TokenKind::Error) {
      // One error per character (or per invalid UTF-8 sequence).
      auto d = unicode::decodeUtf8(s, i);
      len = d.size;
      if (d.valid())
        diags.error(loc,
                    fmt::format("unexpected character {}",
                                unicode::describeCodePoint(d.codePoint)),
                    len);
      else
        diags.error(loc,
                    "invalid UTF-8 in source: " +
                        unicode::describeInvalidUtf8(s, i),
                    len);
    }
    push(kind, s.substr(i, len), loc, len);
    i += len;
    col += len;
  }
  SourceLoc end{line, col, file.id};
  // Only when nothing else went wrong: an unterminated string, say, has
  // already swallowed the closing bracket.
  if (!openBrackets.empty() && diags.errorCount() == errorsBefore)
    diags.error(openBrackets.back().second,
                fmt::format("'{}' was never closed", openBrackets.back().first));
  if (!out.empty() && out.back().kind != TokenKind::Newline)
    push(TokenKind::Newline, "", end, 1);
  while (indents.size() > 1) {
    indents.pop_back();
    push(TokenKind::Dedent, "", end, 1);
  }
  push(TokenKind::Eof, "", end, 1);
  return out;
}

} // namespace ein
