// Small helpers shared by the front-end unit tests.
#pragma once

#include "ein/Shape/Infer.h"
#include "ein/Shape/Shape.h"
#include "ein/Support/BigInt.h"
#include "ein/Support/Expected.h"
#include "ein/Syntax/Pattern.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ein {

/// Readable gtest failure output for symbolic sizes and shapes.
inline void PrintTo(const SizeExpr &e, std::ostream *os) { *os << e.str(); }
inline void PrintTo(const Dim &d, std::ostream *os) { *os << d.str(); }

namespace test {

/// 10^exp as a 128-bit integer.
inline Int pow10(unsigned exp) {
  Int v = 1;
  for (unsigned i = 0; i < exp; ++i)
    v *= 10;
  return v;
}

inline const char *anchorName(ShapeError::Anchor a) {
  switch (a) {
  case ShapeError::Anchor::Op:
    return "op";
  case ShapeError::Anchor::Pattern:
    return "pattern";
  case ShapeError::Anchor::Operand:
    return "operand";
  case ShapeError::Anchor::Kwarg:
    return "kwarg";
  }
  return "?";
}

/// "pattern@9+1: message", for failure messages.
inline std::string describeError(const ShapeError &e) {
  return std::string(anchorName(e.anchor)) + "@" + std::to_string(e.offset) +
         "+" + std::to_string(e.length) + "#" + std::to_string(e.index) + ": " +
         e.message;
}

/// Parses a shape the test relies on; a malformed one fails the test.
inline Shape shapeOf(const std::string &text, unsigned *counter = nullptr) {
  auto s = parseShape(text, counter);
  if (!s) {
    ADD_FAILURE() << "bad test shape \"" << text
                  << "\": " << describeError(s.error());
    return {};
  }
  return *s;
}

/// Parses a size expression the test relies on.
inline SizeExpr sizeOf(const std::string &text) {
  auto s = parseSizeExpr(text);
  if (!s) {
    ADD_FAILURE() << "bad test size \"" << text
                  << "\": " << describeError(s.error());
    return {};
  }
  return *s;
}

/// Parses a pattern the test relies on.
inline Pattern patternOf(const std::string &text, PatternUse use) {
  auto p = parsePattern(text, use);
  if (!p) {
    ADD_FAILURE() << "bad test pattern \"" << text
                  << "\": " << describeError(p.error());
    return {};
  }
  return *p;
}

/// Keyword sizes from "h=8 d=heads" (values are size expressions).
inline std::vector<SizeArg> sizeArgsOf(const std::string &text) {
  std::vector<SizeArg> out;
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ') {
      ++pos;
      continue;
    }
    size_t end = text.find(' ', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(pos, end - pos);
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      ADD_FAILURE() << "bad keyword size '" << item << "'";
      return out;
    }
    out.push_back({item.substr(0, eq), sizeOf(item.substr(eq + 1))});
    pos = end;
  }
  return out;
}

/// Bindings from "n=4 m=8".
inline Bindings bindingsOf(const std::string &text) {
  Bindings env;
  for (auto &arg : sizeArgsOf(text)) {
    auto v = arg.value.constantValue();
    if (!v) {
      ADD_FAILURE() << "binding of '" << arg.name << "' is not a number";
      continue;
    }
    env[arg.name] = *v;
  }
  return env;
}

} // namespace test
} // namespace ein
