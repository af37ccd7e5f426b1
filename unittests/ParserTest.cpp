// The .ein lexer and parser: tokens with locations, indentation, the AST and
// syntax errors at line:col.
#include "ein/Syntax/Parser.h"
#include "ein/Syntax/AST.h"
#include "ein/Syntax/Diagnostics.h"
#include "ein/Syntax/Lexer.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace ein;

namespace {

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

/// "kind:text@line:col" for every token but the trailing Eof.
std::vector<std::string> tokensOf(const std::string &text,
                                  unsigned *errors = nullptr) {
  SourceFile file{"t.ein", text};
  DiagnosticEngine diags(file);
  std::vector<std::string> out;
  for (auto &t : lex(file, diags)) {
    if (t.kind == TokenKind::Eof)
      break;
    std::string s = tokenKindName(t.kind);
    if (!t.text.empty())
      s += ":" + t.text;
    s += "@" + std::to_string(t.loc.line) + ":" + std::to_string(t.loc.col);
    out.push_back(s);
  }
  if (errors)
    *errors = diags.errorCount();
  return out;
}

using Tokens = std::vector<std::string>;

TEST(Lexer, OperatorsAndNumbers) {
  unsigned errors = 0;
  EXPECT_EQ(tokensOf("x = a + 1.5e3 ** 2 - .5", &errors),
            (Tokens{"name:x@1:1", "'=':=@1:3", "name:a@1:5", "'+':+@1:7",
                    "number:1.5e3@1:9", "'**':**@1:15", "integer:2@1:18",
                    "'-':-@1:20", "number:.5@1:22", "end of line@1:24"}));
  EXPECT_EQ(errors, 0u);
}

TEST(Lexer, UnicodeNames) {
  // Python's identifiers: Greek and CJK letters start names, combining marks
  // and other digits continue them. Columns count bytes.
  EXPECT_EQ(tokensOf("\xce\xb1 = \xe4\xb8\xad\xe6\x96\x87\n"),
            (Tokens{"name:\xce\xb1@1:1", "'=':=@1:4",
                    "name:\xe4\xb8\xad\xe6\x96\x87@1:6", "end of line@1:12"}));
  EXPECT_EQ(tokensOf("e\xcc\x81 x\xd9\xa3 _\xce\xb2"),
            (Tokens{"name:e\xcc\x81@1:1", "name:x\xd9\xa3@1:5",
                    "name:_\xce\xb2@1:9", "end of line@1:12"}));
  // A number followed by a letter of any script is malformed.
  unsigned errors = 0;
  tokensOf("x = 2\xce\xb1", &errors);
  EXPECT_EQ(errors, 1u);
}

TEST(Lexer, StringsKeepContentsAndQuoteLocation) {
  SourceFile file{"t.ein", "f32[\"b s\"] 'x'"};
  DiagnosticEngine diags(file);
  auto toks = lex(file, diags);
  ASSERT_GE(toks.size(), 5u);
  EXPECT_EQ(toks[2].kind, TokenKind::String);
  EXPECT_EQ(toks[2].text, "b s");
  EXPECT_EQ(toks[2].loc.col, 5u);
  EXPECT_EQ(toks[2].length, 5u);
  EXPECT_EQ(toks[4].kind, TokenKind::String);
  EXPECT_EQ(toks[4].text, "x");
  EXPECT_FALSE(diags.hadError());
}

TEST(Lexer, IndentDedentAndComments) {
  const char *src = "# header\n"
                    "def f():  # trailing\n"
                    "\n"
                    "    return x\n"
                    "y\n";
  EXPECT_EQ(tokensOf(src),
            (Tokens{"name:def@2:1", "name:f@2:5", "'(':(@2:6", "')':)@2:7",
                    "':'::@2:8", "end of line@2:21", "indent@4:5",
                    "name:return@4:5", "name:x@4:12", "end of line@4:13",
                    "dedent@5:1", "name:y@5:1", "end of line@5:2"}));
}

TEST(Lexer, NewlinesInsideBracketsAreIgnored) {
  EXPECT_EQ(tokensOf("f(a,\n  b)\n"),
            (Tokens{"name:f@1:1", "'(':(@1:2", "name:a@1:3", "',':,@1:4",
                    "name:b@2:3", "')':)@2:4", "end of line@2:5"}));
}

TEST(Lexer, DedentsClosedAtEndOfFile) {
  Tokens t = tokensOf("def f():\n    x\n        y");
  ASSERT_GE(t.size(), 3u);
  EXPECT_EQ(t[t.size() - 3], "end of line@3:10");
  EXPECT_EQ(t[t.size() - 2], "dedent@3:10");
  EXPECT_EQ(t[t.size() - 1], "dedent@3:10");
}

TEST(Lexer, DottedModuleNameAfterFrom) {
  // `from ein.optim import adamw`: the module name is one name, dots and
  // all; elsewhere `a.b` stays the Python habit it is (an error).
  unsigned errors = 0;
  EXPECT_EQ(tokensOf("from ein.optim import adamw\n", &errors),
            (Tokens{"name:from@1:1", "name:ein.optim@1:6", "name:import@1:16",
                    "name:adamw@1:23", "end of line@1:28"}));
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(tokensOf("from a.b.c import f", &errors)[1], "name:a.b.c@1:6");
  EXPECT_EQ(errors, 0u);
  tokensOf("x = a.b\n", &errors);
  EXPECT_EQ(errors, 1u);
  tokensOf("y = from.b\n", &errors);
  EXPECT_EQ(errors, 1u);
}

struct LexErrorCase {
  const char *name;
  const char *text;
  unsigned line, col;
  const char *message;
};

void PrintTo(const LexErrorCase &c, std::ostream *os) { *os << c.name; }

class LexErrorTest : public ::testing::TestWithParam<LexErrorCase> {};

TEST_P(LexErrorTest, Reports) {
  const LexErrorCase &c = GetParam();
  SourceFile file{"t.ein", c.text};
  DiagnosticEngine diags(file);
  lex(file, diags);
  ASSERT_EQ(diags.errorCount(), 1u);
  const Diagnostic &d = diags.diagnostics()[0];
  EXPECT_EQ(d.loc.line, c.line);
  EXPECT_EQ(d.loc.col, c.col);
  EXPECT_EQ(d.message, c.message);
}

const LexErrorCase kLexErrors[] = {
    {"MalformedNumber", "x = 12ab", 1, 5, "malformed number"},
    {"UnterminatedString", "x = \"abc\ny", 1, 5, "unterminated string"},
    {"EscapeInString", "x = \"a\\n\"", 1, 7,
     "escape sequences are not supported in strings"},
    {"UnknownCharacter", "x = a $ b", 1, 7, "unexpected character '$'"},
    {"ControlByte", "x = \x7f", 1, 5, "unexpected character '\\x7f'"},
    {"NonIdentifierCharacter", "x = a \xc3\x97 b", 1, 7,
     "unexpected character '\xc3\x97' (U+00D7)"},
    {"EmojiIsNotAName", "x = \xf0\x9f\x98\x80", 1, 5,
     "unexpected character '\xf0\x9f\x98\x80' (U+1F600)"},
    {"CombiningMarkCannotStartName", "x = \xcc\x81", 1, 5,
     "unexpected character U+0301"},
    // Invalid UTF-8, anywhere in the file; columns count bytes internally.
    {"StrayContinuation", "x = \x80", 1, 5,
     "invalid UTF-8 in source: stray continuation byte '\\x80'"},
    {"TruncatedInName", "x\xce = 1", 1, 2,
     "invalid UTF-8 in source: truncated sequence '\\xce'"},
    {"OverlongInString", "x = \"a\xc0\xaf\"", 1, 7,
     "invalid UTF-8 in source: overlong encoding '\\xc0\\xaf'"},
    {"SurrogateInComment", "x # \xed\xa0\x80\n", 1, 5,
     "invalid UTF-8 in source: encoded UTF-16 surrogate '\\xed\\xa0\\x80'"},
    {"InvalidInCommentLine", "  # \xff\nx\n", 1, 5,
     "invalid UTF-8 in source: byte that never occurs in UTF-8 '\\xff'"},
    {"InconsistentDedent", "def f():\n    x\n  y\n", 3, 3,
     "inconsistent indentation"},
};

INSTANTIATE_TEST_SUITE_P(Lexer, LexErrorTest, ::testing::ValuesIn(kLexErrors),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

std::string astOf(const std::string &text, unsigned *errors = nullptr) {
  SourceFile file{"t.ein", text};
  DiagnosticEngine diags(file);
  Module m = parseModule(file, diags);
  if (errors)
    *errors = diags.errorCount();
  std::ostringstream os;
  printAST(m, os);
  return os.str();
}

TEST(Parser, ModuleStructure) {
  const char *src = "dim heads = 8\n"
                    "def f(x: f32[\"b (h d)\"]) -> f32[\"b h d\"]:\n"
                    "    y = rearrange(x, \"b (h d) -> b h d\", h=heads)\n"
                    "    return y\n";
  unsigned errors = 0;
  EXPECT_EQ(astOf(src, &errors),
            "module\n"
            "  dim heads = 8  @1:5\n"
            "  def f  @2:5\n"
            "    param x: f32[\"b (h d)\"]\n"
            "    result f32[\"b h d\"]\n"
            "    y = rearrange(x, \"b (h d) -> b h d\", h=heads)  @3:5\n"
            "    return y  @4:5\n");
  EXPECT_EQ(errors, 0u);
}

TEST(Parser, SeveralResultsAndTargets) {
  const char *src =
      "def p(x: f32[\"b n c\"], y: f32[\"b c\"]) -> (f32[\"b n+1 c\"], "
      "f32[\"b n c\"]):\n"
      "    z, ps = pack([x, y], \"b * c\")\n"
      "    u, v = unpack(z, ps, \"b * c\")\n"
      "    return z, u\n";
  unsigned errors = 0;
  EXPECT_EQ(astOf(src, &errors), "module\n"
                                 "  def p  @1:5\n"
                                 "    param x: f32[\"b n c\"]\n"
                                 "    param y: f32[\"b c\"]\n"
                                 "    result f32[\"b n+1 c\"]\n"
                                 "    result f32[\"b n c\"]\n"
                                 "    z, ps = pack([x, y], \"b * c\")  @2:5\n"
                                 "    u, v = unpack(z, ps, \"b * c\")  @3:5\n"
                                 "    return z, u  @4:5\n");
  EXPECT_EQ(errors, 0u);
}

struct ExprCase {
  const char *name;
  const char *expr;
  const char *printed; // exprToString: fully parenthesised
};

void PrintTo(const ExprCase &c, std::ostream *os) { *os << c.name; }

class ExprTest : public ::testing::TestWithParam<ExprCase> {};

TEST_P(ExprTest, Precedence) {
  std::string src = std::string("def f() -> f32[\"\"]:\n    return ") +
                    GetParam().expr + "\n";
  SourceFile file{"t.ein", src};
  DiagnosticEngine diags(file);
  Module m = parseModule(file, diags);
  ASSERT_FALSE(diags.hadError()) << diags.diagnostics()[0].message;
  ASSERT_EQ(m.functions.size(), 1u);
  ASSERT_EQ(m.functions[0].body.size(), 1u);
  EXPECT_EQ(exprToString(*m.functions[0].body[0].values[0]),
            GetParam().printed);
}

const ExprCase kExprs[] = {
    {"PowerBindsTighterThanMinus", "-a ** 2", "(-(a ** 2))"},
    {"NegativeExponent", "2 ** -1", "(2 ** (-1))"},
    {"PowerIsRightAssociative", "a ** b ** c", "(a ** (b ** c))"},
    {"MinusIsLeftAssociative", "a - b - c", "((a - b) - c)"},
    {"TimesBeforePlus", "a + b * c / d", "(a + ((b * c) / d))"},
    {"Parentheses", "(a + b) * c", "((a + b) * c)"},
    {"CallWithListAndKeyword", "f(x, [a, b], k=2)", "f(x, [a, b], k=2)"},
    {"NestedCalls", "exp(relu(x))", "exp(relu(x))"},
    {"StringArgument", "reduce(x, \"a b -> a\", \"sum\")",
     "reduce(x, \"a b -> a\", \"sum\")"},
    {"Floats", "x * 0.5 + 1e-3", "((x * 0.5) + 1e-3)"},
    {"EmptyList", "pack([], \"*\")", "pack([], \"*\")"},
};

INSTANTIATE_TEST_SUITE_P(Parser, ExprTest, ::testing::ValuesIn(kExprs),
                         [](const auto &info) { return info.param.name; });

struct SyntaxErrorCase {
  const char *name;
  const char *source;
  unsigned line, col;
  const char *message;
};

void PrintTo(const SyntaxErrorCase &c, std::ostream *os) { *os << c.name; }

class SyntaxErrorTest : public ::testing::TestWithParam<SyntaxErrorCase> {};

TEST_P(SyntaxErrorTest, FirstErrorOnly) {
  const SyntaxErrorCase &c = GetParam();
  SourceFile file{"t.ein", c.source};
  DiagnosticEngine diags(file);
  parseModule(file, diags);
  ASSERT_EQ(diags.errorCount(), 1u);
  const Diagnostic &d = diags.diagnostics()[0];
  EXPECT_EQ(d.loc.line, c.line) << d.message;
  EXPECT_EQ(d.loc.col, c.col) << d.message;
  EXPECT_EQ(d.message, c.message);
}

const SyntaxErrorCase kSyntaxErrors[] = {
    {"MissingColonAfterSignature",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]\n    return x\n", 1, 31,
     "expected ':' after the signature, found end of line"},
    {"ParameterWithoutType", "def f(x) -> f32[\"n\"]:\n    return x\n", 1, 8,
     "expected ':' after the parameter name: every parameter needs a type "
     "such as f32[\"n\"], found ')'"},
    {"MissingResultType", "def f(x: f32[\"n\"]):\n    return x\n", 1, 19,
     "expected '->' after the parameters: a result type is required, found "
     "':'"},
    {"ShapeNotAString", "def f(x: f32[n]) -> f32[\"n\"]:\n    return x\n", 1,
     14, "expected a shape string such as \"batch seq\", found 'n'"},
    {"TopLevelStatement", "x = 1\n", 1, 1,
     "expected 'def', 'dim', 'from', 'mesh' or 'shard' at the top level, found "
     "'x'"},
    {"BodyNotIndented", "def f(x: f32[\"n\"]) -> f32[\"n\"]:\nreturn x\n", 2, 1,
     "expected an indented function body"},
    {"PositionalAfterKeyword",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n    return f(x, k=1, y)\n", 2, 22,
     "positional argument after keyword arguments"},
    {"DimWithoutName", "dim = 3\n", 1, 5,
     "expected a name after 'dim', found '='"},
    {"DimWithoutValue", "dim n =\n", 1, 8,
     "expected an expression, found end of line"},
    {"UnclosedParenthesis",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n    return (x\n", 2, 12,
     "'(' was never closed"},
    {"AssignToNumber", "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n    1 = x\n", 2, 5,
     "expected a name (an assignment target), found number 1"},
    {"TwoStatementsOnALine",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n    return x x\n", 2, 14,
     "expected end of line after the return value, found 'x'"},
};

INSTANTIATE_TEST_SUITE_P(Parser, SyntaxErrorTest,
                         ::testing::ValuesIn(kSyntaxErrors),
                         [](const auto &info) { return info.param.name; });

TEST(Parser, LexerErrorsStopParsing) {
  SourceFile file{"t.ein", "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
                           "    return x $ x\n"};
  DiagnosticEngine diags(file);
  Module m = parseModule(file, diags);
  ASSERT_EQ(diags.errorCount(), 1u);
  EXPECT_EQ(diags.diagnostics()[0].message, "unexpected character '$'");
  EXPECT_TRUE(m.functions.empty());
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

TEST(Diagnostics, PrintsLocationLineAndCaret) {
  SourceFile file{"t.ein", "def f():\n    return x $ x\n"};
  DiagnosticEngine diags(file);
  diags.error({2, 12}, "undefined name 'x'", 1);
  diags.note({2, 14}, "here", 3);
  diags.error({}, "no location");
  std::ostringstream os;
  diags.print(os);
  EXPECT_EQ(os.str(), "t.ein:2:12: error: undefined name 'x'\n"
                      "    return x $ x\n"
                      "           ^\n"
                      "t.ein:2:14: note: here\n"
                      "    return x $ x\n"
                      "             ^~~\n"
                      "t.ein: error: no location\n");
  EXPECT_EQ(diags.errorCount(), 2u); // notes are not errors
}

TEST(Diagnostics, CaretFollowsTabs) {
  SourceFile file{"t.ein", "\tx = y\n"};
  DiagnosticEngine diags(file);
  diags.error({1, 6}, "undefined name 'y'");
  std::ostringstream os;
  diags.print(os);
  EXPECT_EQ(os.str(), "t.ein:1:6: error: undefined name 'y'\n"
                      "\tx = y\n"
                      "\t    ^\n");
}

TEST(Diagnostics, ColumnsCountCodePointsAndCaretsFollowDisplayWidth) {
  // "    return α·2": the error at byte column 14 is code point column 13.
  SourceFile file{"t.ein", "    return \xce\xb1\xc2\xb7 2\n"
                           "    y = \xe4\xb8\xad\xe6\x96\x87 + z\n"};
  DiagnosticEngine diags(file);
  diags.error({1, 14}, "unexpected character '\xc2\xb7' (U+00B7)", 2);
  diags.error({2, 18}, "undefined name 'z'");
  diags.note({2, 9}, "here", 6); // both CJK characters: 4 terminal columns
  std::ostringstream os;
  diags.print(os);
  EXPECT_EQ(os.str(),
            "t.ein:1:13: error: unexpected character '\xc2\xb7' (U+00B7)\n"
            "    return \xce\xb1\xc2\xb7 2\n"
            "            ^\n"
            "t.ein:2:14: error: undefined name 'z'\n"
            "    y = \xe4\xb8\xad\xe6\x96\x87 + z\n"
            "               ^\n"
            "t.ein:2:9: note: here\n"
            "    y = \xe4\xb8\xad\xe6\x96\x87 + z\n"
            "        ^~~~\n");
}

TEST(Diagnostics, InvalidUtf8IsEscapedInEchoAndMessage) {
  // The echoed line shows the bad byte as \xce; the caret lines up with the
  // escape and with what follows it.
  SourceFile file{"t\xff.ein", "x\xce = y\n"};
  DiagnosticEngine diags(file);
  diags.error({1, 2}, "invalid UTF-8 in source: truncated sequence '\\xce'");
  diags.error({1, 6}, "undefined name 'y' \xce");
  std::ostringstream os;
  diags.print(os);
  EXPECT_EQ(os.str(),
            "t\\xff.ein:1:2: error: invalid UTF-8 in source: truncated "
            "sequence '\\xce'\n"
            "x\\xce = y\n"
            " ^~~~\n"
            "t\\xff.ein:1:6: error: undefined name 'y' \\xce\n"
            "x\\xce = y\n"
            "        ^\n");
}

TEST(Diagnostics, CaretPastEndOfNonAsciiLine) {
  SourceFile file{"t.ein", "\xce\xb1"};
  DiagnosticEngine diags(file);
  diags.error({1, 3}, "expected ':'");
  std::ostringstream os;
  diags.print(os);
  EXPECT_EQ(os.str(), "t.ein:1:2: error: expected ':'\n"
                      "\xce\xb1\n"
                      " ^\n");
}

TEST(Diagnostics, LineText) {
  SourceFile file{"t.ein", "one\r\ntwo\nthree"};
  EXPECT_EQ(file.lineText(1), "one");
  EXPECT_EQ(file.lineText(2), "two");
  EXPECT_EQ(file.lineText(3), "three");
  EXPECT_EQ(file.lineText(4), "");
}

} // namespace
