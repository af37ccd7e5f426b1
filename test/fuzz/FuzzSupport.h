// Shared helpers of the libFuzzer targets: findings, UTF-8/JSON oracles, input directives.
#pragma once

#include "ein/Sema/Program.h"
#include "ein/Shape/Shape.h"
#include "ein/Support/BigInt.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace ein::fuzz {

/// A finding that is not a crash by itself (a broken invariant): print it and
/// abort, so that libFuzzer saves the input as a crash reproducer.
[[noreturn]] inline void finding(std::string_view what, std::string_view detail) {
  std::string text = fmt::format("ein-fuzz finding: {}\n{}\n", what, detail);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  std::abort();
}

/// Whether the oracle `name` is relaxed by EIN_FUZZ_IGNORE (a comma-separated
/// list). Long runs use it to look past a known bug until its fix lands;
/// CI never sets it.
inline bool ignored(std::string_view name) {
  static const std::string list = [] {
    const char *env = std::getenv("EIN_FUZZ_IGNORE");
    return std::string(",") + (env ? env : "") + ",";
  }();
  return list.find(fmt::format(",{},", name)) != std::string::npos;
}

/// 64-bit FNV-1a: a deterministic per-input seed for derived choices.
inline uint64_t hashBytes(std::string_view bytes, uint64_t seed = 0) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
inline bool isValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = s[i];
    unsigned need;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      need = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      need = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      need = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + need >= s.size())
      return false; // truncated sequence
    for (unsigned k = 1; k <= need; ++k) {
      unsigned char d = s[i + k];
      if ((d & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static const uint32_t minimum[] = {0, 0x80, 0x800, 0x10000};
    if (cp < minimum[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += need + 1;
  }
  return true;
}

/// A strict JSON (RFC 8259) recogniser for one value followed by optional
/// whitespace; strings must be valid UTF-8. Returns "" or what is wrong.
class JsonChecker {
public:
  explicit JsonChecker(std::string_view text) : s(text) {}
  std::string check() {
    if (!isValidUtf8(s))
      return "not valid UTF-8";
    skipSpace();
    if (!value(0))
      return fmt::format("invalid JSON at byte {}: {}", pos, why);
    skipSpace();
    if (pos != s.size())
      return fmt::format("trailing text at byte {}", pos);
    return "";
  }

private:
  std::string_view s;
  size_t pos = 0;
  std::string why;

  bool fail(const char *reason) {
    why = reason;
    return false;
  }
  void skipSpace() {
    while (pos < s.size() &&
           (s[pos] == ' ' || s[pos] == '\n' || s[pos] == '\r' || s[pos] == '\t'))
      ++pos;
  }
  bool literal(std::string_view word) {
    if (s.substr(pos, word.size()) != word)
      return fail("unknown literal");
    pos += word.size();
    return true;
  }
  bool digits() {
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
      ++pos;
    return pos > start;
  }
  bool number() {
    if (s[pos] == '-')
      ++pos;
    if (pos < s.size() && s[pos] == '0')
      ++pos;
    else if (!digits())
      return fail("bad number");
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      if (!digits())
        return fail("bad fraction");
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
        ++pos;
      if (!digits())
        return fail("bad exponent");
    }
    return true;
  }
  bool string() {
    ++pos; // opening quote
    while (pos < s.size()) {
      unsigned char c = s[pos];
      if (c == '"') {
        ++pos;
        return true;
      }
      if (c < 0x20)
        return fail("control character in a string");
      if (c == '\\') {
        ++pos;
        if (pos >= s.size())
          return fail("unterminated escape");
        char e = s[pos];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k)
            if (pos + k >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[pos + k])))
              return fail("bad \\u escape");
          pos += 4;
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return fail("bad escape");
        }
      }
      ++pos;
    }
    return fail("unterminated string");
  }
  bool value(unsigned depth) {
    if (depth > 64)
      return fail("nested too deeply");
    if (pos >= s.size())
      return fail("unexpected end");
    char c = s[pos];
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++pos;
      skipSpace();
      if (pos < s.size() && s[pos] == close) {
        ++pos;
        return true;
      }
      while (true) {
        skipSpace();
        if (c == '{') {
          if (pos >= s.size() || s[pos] != '"')
            return fail("object key is not a string");
          if (!string())
            return false;
          skipSpace();
          if (pos >= s.size() || s[pos] != ':')
            return fail("missing ':'");
          ++pos;
          skipSpace();
        }
        if (!value(depth + 1))
          return false;
        skipSpace();
        if (pos < s.size() && s[pos] == ',') {
          ++pos;
          continue;
        }
        if (pos < s.size() && s[pos] == close) {
          ++pos;
          return true;
        }
        return fail("missing ',' or closing bracket");
      }
    }
    if (c == '"')
      return string();
    if (c == 't')
      return literal("true");
    if (c == 'f')
      return literal("false");
    if (c == 'n')
      return literal("null");
    if (c == '-' || (c >= '0' && c <= '9'))
      return number();
    return fail("unexpected character");
  }
};

/// Options a fuzz input carries in comment lines, so that seeds stay valid
/// `.ein` files and mutations reach the options too:
///   #! dim NAME=INT      (as `--dim`)
///   #! device NAME       (report: a100, h100, h200)
///   #! fn NAME           (report: one function)
///   #! tiles KEY=INT,... (lowering: as `--tiles`)
struct Directives {
  std::map<std::string, Int> dims;
  std::string device, function, tiles;
};

inline Directives parseDirectives(std::string_view text) {
  Directives d;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.substr(0, 3) != "#! ")
      continue;
    line.remove_prefix(3);
    size_t space = line.find(' ');
    if (space == std::string_view::npos)
      continue;
    std::string_view key = line.substr(0, space);
    std::string value(line.substr(space + 1));
    if (key == "dim") {
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0)
        continue;
      if (auto n = parseInt(value.substr(eq + 1)))
        d.dims[value.substr(0, eq)] = *n;
    } else if (key == "device") {
      d.device = value;
    } else if (key == "fn") {
      d.function = value;
    } else if (key == "tiles") {
      d.tiles = value;
    }
  }
  return d;
}

/// Names of sizes the checked module's types depend on (packs expanded)
/// that no binding covers.
inline std::set<std::string> freeSizeNames(const CheckedModule &module) {
  std::set<std::string> names;
  for (auto &fn : module.functions) {
    auto add = [&](const SizeExpr &e) {
      for (auto &name : e.symbols())
        if (!fn.ctx.env.count(name) && !fn.ctx.inferred.count(name))
          names.insert(name);
    };
    for (auto &value : fn.values)
      for (auto &dim : fn.ctx.expand(value.type.shape))
        if (!dim.isPack())
          add(dim.size);
    for (auto &c : fn.ctx.constraints) {
      add(c.lhs);
      add(c.rhs);
    }
  }
  return names;
}

/// Every type of a checked program prints as a shape string that parses back
/// to the same shape. Returns false (when the oracle is relaxed) if not.
inline bool checkShapesRoundTrip(const CheckedModule &module) {
  auto failed = [](const std::string &detail) {
    if (!ignored("shape-roundtrip"))
      finding("shape-roundtrip", detail);
    return false;
  };
  for (auto &fn : module.functions)
    for (auto &value : fn.values) {
      Shape shape = fn.ctx.expand(value.type.shape);
      std::string text = shapeStr(shape);
      auto again = parseShape(text);
      if (!again)
        return failed(fmt::format("function {}: the shape \"{}\" does not "
                                  "parse back: {}",
                                  fn.name, text, again.error().message));
      if (*again != shape || shapeStr(*again) != text)
        return failed(fmt::format("function {}: the shape \"{}\" parses back "
                                  "as \"{}\"",
                                  fn.name, text, shapeStr(*again)));
    }
  return true;
}

} // namespace ein::fuzz
