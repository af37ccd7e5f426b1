// ein::Error, the one error value of library code: its text and exit codes.
#include "ein/Support/Error.h"
#include "ein/Syntax/DiagnosticError.h"

#include <gtest/gtest.h>

namespace ein {
namespace {

TEST(ErrorTest, UnlocatedErrorNamesTheTool) {
  Error e = Error::usage("--dim needs NAME=INT");
  EXPECT_EQ(e.exitCode(), 2);
  EXPECT_EQ(e.str("einc"), "einc: error: --dim needs NAME=INT\n");
}

TEST(ErrorTest, FileAndLocation) {
  Error inFile = Error::inFile(ErrorKind::Program, "a.ein", "cannot read file");
  EXPECT_EQ(inFile.exitCode(), 1);
  EXPECT_EQ(inFile.str("einc"), "a.ein: error: cannot read file\n");
  Error at = Error::at(ErrorKind::Program, "a.ein", 3, 7, "bad");
  EXPECT_EQ(at.str("einc"), "a.ein:3:7: error: bad\n");
}

TEST(ErrorTest, ContextThenNotesEachOnItsOwnLine) {
  Error e = Error::program("cannot compile 'f':");
  e.withContext("first\nsecond").withNote("a note").inFileNamed("f.ein");
  EXPECT_EQ(e.str("einc"), "f.ein: error: cannot compile 'f':\nfirst\nsecond\n"
                           "einc: note: a note\n");
}

TEST(ErrorTest, FromShapeErrorTakesItsResolvedLocation) {
  Error e = Error::fromShapeError(ShapeError::atOperand("rank differs", 1),
                                  "x.ein", 2, 9);
  EXPECT_EQ(e.exitCode(), 1);
  EXPECT_EQ(e.str("einc"), "x.ein:2:9: error: rank differs\n");
}

TEST(ErrorTest, FromDiagnosticsPrintsAsTheEngineDoes) {
  SourceFile file{"t.ein", "def f(x):\n    return y\n"};
  DiagnosticEngine diags(file);
  diags.error({2, 12}, "unknown name 'y'");
  diags.note({1, 7}, "parameters are here");
  Error e = errorFromDiagnostics(diags);
  EXPECT_EQ(e.file, "t.ein");
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.col, 12u);
  EXPECT_EQ(e.message, "unknown name 'y'");
  EXPECT_EQ(e.str("einc"), "t.ein:2:12: error: unknown name 'y'\n"
                           "    return y\n"
                           "           ^\n"
                           "t.ein:1:7: note: parameters are here\n"
                           "def f(x):\n"
                           "      ^\n");
}

TEST(ErrorTest, ErrorOrHoldsAValueOrAnError) {
  ErrorOr<int> value = 4;
  ASSERT_TRUE(value);
  EXPECT_EQ(*value, 4);
  ErrorOr<int> failed = Error::usage("no");
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().exitCode(), 2);
  ErrorOr<void> ok;
  EXPECT_TRUE(ok);
  ErrorOr<void> notOk = Error::program("broken");
  ASSERT_FALSE(notOk);
  EXPECT_EQ(notOk.error().message, "broken");
}

} // namespace
} // namespace ein
