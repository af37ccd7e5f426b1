// libFuzzer target: the einops pattern parser (lib/Syntax/Pattern.cpp) for
// every use (rearrange, reduce, repeat, einsum, pack), bytes taken as the
// pattern text.
//
// Oracles beyond "no crash, no sanitizer report":
//   pattern-roundtrip  an accepted pattern's canonical text parses back, for
//                      the same use, to the same canonical text;
//   pattern-offsets    token and error offsets lie inside the text.
#include "FuzzSupport.h"

#include "ein/Syntax/Pattern.h"

using namespace ein;

namespace {

void checkSpan(const std::string &text, unsigned offset, unsigned length,
               const char *what, const std::string &name = "") {
  if (fuzz::ignored("pattern-offsets"))
    return;
  // A caret may sit one past the end (for "missing ')'" and the like).
  if (offset > text.size() || offset + uint64_t(length) > text.size() + 1)
    fuzz::finding("pattern-offsets",
                  fmt::format("{} '{}': offset {} length {} in a pattern of {} bytes",
                              what, name, offset, length, text.size()));
}

void checkSide(const std::string &text, const PatternSide &side) {
  checkSpan(text, side.offset, side.length, "side");
  for (auto &g : side.groups) {
    checkSpan(text, g.offset, g.length, "group");
    for (auto &a : g.axes)
      checkSpan(text, a.offset, a.length, "axis", a.name);
  }
  (void)side.hasEllipsis();
  (void)side.hasEllipsisInParens();
  (void)side.starIndex();
  (void)side.namedAxes();
  (void)side.str();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  for (PatternUse use : {PatternUse::Rearrange, PatternUse::Reduce,
                         PatternUse::Repeat, PatternUse::Einsum, PatternUse::Pack}) {
    auto pattern = parsePattern(text, use);
    if (!pattern) {
      const ShapeError &e = pattern.error();
      checkSpan(text, e.offset, e.length, "error", e.message);
      continue;
    }
    for (auto &side : pattern->inputs)
      checkSide(text, side);
    if (pattern->hasArrow)
      checkSide(text, pattern->output);
    std::string canonical = pattern->str();
    if (fuzz::ignored("pattern-roundtrip"))
      continue;
    auto again = parsePattern(canonical, use);
    if (!again)
      fuzz::finding("pattern-roundtrip",
                    fmt::format("use {}: \"{}\" is accepted, its canonical text "
                                "\"{}\" is rejected: {}",
                                int(use), text, canonical, again.error().message));
    if (again->str() != canonical)
      fuzz::finding("pattern-roundtrip",
                    fmt::format("use {}: canonical text \"{}\" reprints as \"{}\"",
                                int(use), canonical, again->str()));
  }
  std::string name = text.substr(0, 64);
  (void)isValidAxisName(name, false);
  (void)isValidAxisName(name, true);
  return 0;
}
