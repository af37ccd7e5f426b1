// Unit tests of the Python checker: jaxtyping shape specs as ein shapes, and
// the abstract interpreter's rules on small files (read through python3;
// skipped where no Python runs).
#include "ein/PyCheck/PyCheck.h"
#include "ein/PyCheck/Annotations.h"
#include "ein/Support/Process.h"

#include <gtest/gtest.h>

using namespace ein;
using namespace ein::pycheck;

namespace {

TEST(PyCheckAnnotations, SpecsBecomeEinShapes) {
  EXPECT_EQ(einShapeOfSpec("batch seq hidden", nullptr), "batch seq hidden");
  EXPECT_EQ(einShapeOfSpec("*batch d", nullptr), "*batch d");
  EXPECT_EQ(einShapeOfSpec("... d", nullptr), "... d");
  EXPECT_EQ(einShapeOfSpec("", nullptr), "");
  // What may be 1 or any size is anonymous: ein never refuses it.
  EXPECT_EQ(einShapeOfSpec("_ _foo #n *#b *_rest", nullptr), "_ _ _ ... ...");
  EXPECT_EQ(einShapeOfSpec("rows=3 cols ?leaf", nullptr), "3 cols leaf");
  // Python's `//` is ein's floor quotient; `/` (a float) and calls are not
  // read.
  EXPECT_EQ(einShapeOfSpec("n+1 2*n n//2 n/2 min(a,b)", nullptr),
            "(n+1) (2*n) (n/2) _ _");
}

TEST(PyCheckAnnotations, DeclaredOffsets) {
  std::map<std::string, unsigned> declared;
  einShapeOfSpec("batch *rest rows=3 cols batch", &declared);
  EXPECT_EQ(declared.size(), 3u);
  EXPECT_EQ(declared["batch"], 0u);
  EXPECT_EQ(declared["rest"], 7u);
  EXPECT_EQ(declared["cols"], 19u);
}

TEST(PyCheckAnnotations, JaxtypingDTypes) {
  EXPECT_TRUE(isJaxtypingDType("jaxtyping.Float"));
  EXPECT_TRUE(isJaxtypingDType("jaxtyping.Shaped"));
  EXPECT_TRUE(isJaxtypingDType("jaxtyping.UInt8"));
  EXPECT_FALSE(isJaxtypingDType("Float"));
  EXPECT_FALSE(isJaxtypingDType("jaxtyping.jaxtyped"));
  EXPECT_FALSE(isJaxtypingDType("typing.List"));
}

/// Checks `source` as a Python file: its diagnostics and report.
struct Checked {
  unsigned errors = 0;
  std::vector<Diagnostic> diagnostics;
  PyCheckReport report;
};

std::optional<Checked> check(const std::string &source) {
  TempDir dir("ein-pycheck-test");
  std::string path = dir.file("model.py");
  if (!writeFileBytes(path, source.data(), source.size()))
    return std::nullopt;
  SourceFile file{path, source};
  DiagnosticEngine diags(file);
  auto report = checkPython(diags);
  if (!report)
    return std::nullopt;
  return Checked{diags.errorCount(), diags.diagnostics(), *report};
}

#define CHECK_OR_SKIP(var, source)                                             \
  auto var = check(source);                                                    \
  if (!var)                                                                    \
    GTEST_SKIP() << "no Python interpreter runs here";

const char *kPrelude = "from einops import rearrange\n"
                       "from jaxtyping import Float\n"
                       "from torch import Tensor\n";

/// The prelude and the header of a torch module class `M`.
const std::string kModule = std::string(kPrelude) + "import torch\n"
                                                    "from torch import nn\n"
                                                    "class M(nn.Module):\n";

/// One error, at `line`, whose message has `fragment`.
void expectOneError(const Checked &r, unsigned line,
                    const std::string &fragment) {
  ASSERT_EQ(r.errors, 1u);
  EXPECT_EQ(r.diagnostics[0].loc.line, line);
  EXPECT_NE(r.diagnostics[0].message.find(fragment), std::string::npos)
      << r.diagnostics[0].message;
}

TEST(PyCheckInterpreter, ReturnMismatchIsAnError) {
  CHECK_OR_SKIP(r,
                std::string(kPrelude) +
                    "def f(x: Float[Tensor, 'a b']) -> Float[Tensor, 'a b']:\n"
                    "    return rearrange(x, 'a b -> b a')\n");
  ASSERT_EQ(r->errors, 1u);
  EXPECT_EQ(r->diagnostics[0].loc.line, 5u);
  EXPECT_EQ(r->diagnostics[0].loc.col, 12u);
  ASSERT_EQ(r->report.functions.size(), 1u);
  EXPECT_EQ(r->report.returnsChecked, 1u);
  // Either side may be the bug: the last note is at the result annotation.
  const Diagnostic &note = r->diagnostics.back();
  EXPECT_EQ(note.severity, Severity::Note);
  EXPECT_EQ(note.message, "the result of 'f' is declared here");
  EXPECT_EQ(note.loc.line, 4u);
  EXPECT_EQ(note.loc.col, 49u);
}

TEST(PyCheckInterpreter, UnknownsPropagateQuietly) {
  CHECK_OR_SKIP(r,
                std::string(kPrelude) +
                    "def f(x: Float[Tensor, 'a b']) -> Float[Tensor, 'a b']:\n"
                    "    y = mystery(x)\n"
                    "    z = y @ x + y[0]\n"
                    "    return z.transpose(0, 1)\n");
  EXPECT_EQ(r->errors, 0u);
  ASSERT_EQ(r->report.functions.size(), 1u);
  EXPECT_EQ(r->report.functions[0].status, FunctionSummary::Status::Partial);
}

TEST(PyCheckInterpreter, BranchStoresAreUnknownAfter) {
  // After the branch `x` may be either: the return is not checked.
  CHECK_OR_SKIP(
      r, std::string(kPrelude) +
             "def f(x: Float[Tensor, 'a b'], c) -> Float[Tensor, 'a b']:\n"
             "    if c:\n"
             "        x = rearrange(x, 'a b -> b a')\n"
             "    return x\n");
  EXPECT_EQ(r->errors, 0u);
  EXPECT_EQ(r->report.returnsChecked, 0u);
}

TEST(PyCheckInterpreter, DecidedShapeBranchRunsAlone) {
  CHECK_OR_SKIP(r,
                std::string(kPrelude) +
                    "def f(x: Float[Tensor, 'a b']) -> Float[Tensor, 'b a']:\n"
                    "    if x.ndim != 2:\n"
                    "        x = rearrange(x, 'a b c -> a (b c)')\n"
                    "    return rearrange(x, 'a b -> b a')\n");
  EXPECT_EQ(r->errors, 0u);
  EXPECT_EQ(r->report.returnsChecked, 1u);
}

TEST(PyCheckInterpreter, SizesFromShapeAndAttributes) {
  CHECK_OR_SKIP(
      r, std::string(kPrelude) +
             "class M:\n"
             "    def __init__(self):\n"
             "        self.heads = 4\n"
             "    def forward(self, x: Float[Tensor, 'b n 12']) -> "
             "Float[Tensor, 'b 4 n 3']:\n"
             "        b, n, _ = x.shape\n"
             "        return x.view(b, n, self.heads, -1).transpose(1, 2)\n");
  EXPECT_EQ(r->errors, 0u);
  EXPECT_EQ(r->report.returnsChecked, 1u);
  EXPECT_EQ(r->report.torchChecked, 2u);
}

TEST(PyCheckInterpreter, ParametersBuiltInInit) {
  // `W` is read as "4 __init__.d"; `V`'s scale may be a tensor, and `U`'s
  // lone size a whole shape: both unknown, so their rearranges are skipped.
  CHECK_OR_SKIP(
      r, kModule + "    def __init__(self, d: int, s, g):\n"
                   "        self.W = nn.Parameter(torch.randn(4, d) / d**0.5)\n"
                   "        self.V = nn.Parameter(torch.randn(4, d) * g)\n"
                   "        self.U = nn.Parameter(torch.zeros(s))\n"
                   "    def f(self) -> Float[Tensor, 'a b c']:\n"
                   "        rearrange(self.V, 'a -> a')\n"
                   "        rearrange(self.U, 'a -> a')\n"
                   "        return rearrange(self.W, 'a b -> b a')\n");
  expectOneError(*r, 14, "\"__init__.d 4\"");
  EXPECT_EQ(r->report.skipped.size(), 2u);
}

TEST(PyCheckInterpreter, VariadicOperandsWhereExact) {
  // `"... k" @ "k m" + "m"` is `"... m"` whatever `...` holds; `"... k" +
  // "n k"` may reach into `...`, so its result is unknown.
  CHECK_OR_SKIP(
      r, std::string(kPrelude) +
             "def f(x: Float[Tensor, '... k'], w: Float[Tensor, 'k m'], "
             "b: Float[Tensor, 'm']) -> Float[Tensor, '... k']:\n"
             "    return (x @ w + b).pow(2)\n"
             "def g(x: Float[Tensor, '... k'], y: Float[Tensor, 'n k']) -> "
             "Float[Tensor, 'n']:\n"
             "    return x + y\n");
  expectOneError(*r, 5, "cannot prove k == m");
  EXPECT_EQ(r->report.returnsChecked, 1u);
}

TEST(PyCheckInterpreter, ConvAndEmbeddingShapes) {
  // Conv2d(2, 4, 3, padding=1) keeps h and w; Embedding(10, 6) appends 6;
  // a stride of 2 is not read.
  CHECK_OR_SKIP(
      r, kModule +
             "    def __init__(self):\n"
             "        self.conv = nn.Conv2d(2, 4, 3, padding=1)\n"
             "        self.down = nn.Conv2d(2, 4, 3, stride=2)\n"
             "        self.emb = nn.Embedding(10, 6)\n"
             "    def f(self, x: Float[Tensor, 'b 2 h w']) -> "
             "Float[Tensor, 'b 4 h w']:\n"
             "        rearrange(self.down(x), 'a -> a')\n"
             "        return self.conv(x)\n"
             "    def g(self, t: Float[Tensor, 'n']) -> Float[Tensor, 'n 7']:\n"
             "        return self.emb(t)\n");
  expectOneError(*r, 15, "\"n 6\"");
  EXPECT_EQ(r->report.returnsChecked, 2u);
}

TEST(PyCheckInterpreter, SyntaxErrorAtPythonsColumn) {
  CHECK_OR_SKIP(r, "x = (1 +\n");
  ASSERT_EQ(r->errors, 1u);
  EXPECT_EQ(r->diagnostics[0].loc.line, 1u);
  EXPECT_EQ(r->diagnostics[0].loc.col, 5u);
  EXPECT_FALSE(r->report.parsed);
}

} // namespace
