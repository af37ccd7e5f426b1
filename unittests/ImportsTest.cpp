// Imports with dotted module names: `ein.NAME` found in ein's library
// directory (libraryDirectory, $EIN_LIBRARY_PATH), `a.b` relative to the
// importing file, and their errors (lib/Syntax/Imports.cpp).
#include "ein/Syntax/Imports.h"
#include "ein/Support/Files.h"
#include "ein/Support/Library.h"
#include "ein/Syntax/Parser.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace ein;

namespace {

namespace fs = std::filesystem;

/// A fresh directory under the system's temporary one, removed at the end,
/// with EIN_LIBRARY_PATH restored.
class ImportsTest : public ::testing::Test {
protected:
  fs::path root;
  std::string savedPath;
  bool hadPath = false;

  void SetUp() override {
    root = fs::temp_directory_path() /
           ("ein-imports-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root / "lib");
    fs::create_directories(root / "src" / "pkg");
    if (const char *p = std::getenv("EIN_LIBRARY_PATH")) {
      hadPath = true;
      savedPath = p;
    }
  }
  void TearDown() override {
    if (hadPath)
      ::setenv("EIN_LIBRARY_PATH", savedPath.c_str(), 1);
    else
      ::unsetenv("EIN_LIBRARY_PATH");
    fs::remove_all(root);
  }
  void write(const fs::path &path, const std::string &text) {
    std::ofstream(path) << text;
  }
  /// The errors of resolving the imports of `text`, read as src/main.ein.
  std::vector<std::string> importErrors(const std::string &text,
                                        size_t *functions = nullptr) {
    SourceFile file{(root / "src" / "main.ein").string(), text};
    DiagnosticEngine diags(file);
    Module module = parseModule(file, diags);
    resolveImports(module, file, diags);
    if (functions)
      *functions = module.importedFunctions.size();
    std::vector<std::string> errors;
    for (auto &d : diags.diagnostics())
      errors.push_back(std::to_string(d.loc.line) + ":" +
                       std::to_string(d.loc.col) + ": " + d.message);
    return errors;
  }
};

const char *kTwice = "def twice(x: f32[\"n\"]) -> f32[\"n\"]:\n"
                     "    return x + x\n";

TEST_F(ImportsTest, LibraryDirectoryFromTheEnvironment) {
  ::setenv("EIN_LIBRARY_PATH", (root / "lib").c_str(), 1);
  auto dir = libraryDirectory();
  ASSERT_TRUE(dir);
  EXPECT_EQ(*dir, (root / "lib").string());
  ::setenv("EIN_LIBRARY_PATH", (root / "none").c_str(), 1);
  dir = libraryDirectory();
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().message, "EIN_LIBRARY_PATH is '" +
                                     (root / "none").string() +
                                     "', which is not a directory");
}

TEST_F(ImportsTest, LibraryDirectoryBesideTheExecutable) {
  // The build copies share/ein/*.ein to build/share/ein, beside build/bin
  // where this test runs.
  ::unsetenv("EIN_LIBRARY_PATH");
  auto dir = libraryDirectory();
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_EQ(fs::path(*dir).filename(), "ein");
  EXPECT_TRUE(fs::exists(fs::path(*dir) / "optim.ein"));
}

TEST_F(ImportsTest, LibraryModule) {
  write(root / "lib" / "tools.ein", kTwice);
  ::setenv("EIN_LIBRARY_PATH", (root / "lib").c_str(), 1);
  size_t functions = 0;
  EXPECT_EQ(importErrors("from ein.tools import twice\n", &functions),
            std::vector<std::string>{});
  EXPECT_EQ(functions, 1u);
  EXPECT_EQ(importErrors("from ein.tool import twice\n"),
            std::vector<std::string>{
                "1:6: no module 'ein.tool' in ein's library (" +
                (root / "lib").string() + "); it has ein.tools"});
  EXPECT_EQ(importErrors("from ein.tools import twice, thrice\n"),
            std::vector<std::string>{
                "1:30: 'thrice' is not a function of ein.tools; it has twice"});
}

TEST_F(ImportsTest, DottedPathRelativeToTheImporter) {
  write(root / "src" / "pkg" / "layers.ein", kTwice);
  size_t functions = 0;
  EXPECT_EQ(importErrors("from pkg.layers import twice\n", &functions),
            std::vector<std::string>{});
  EXPECT_EQ(functions, 1u);
  auto errors = importErrors("from pkg.nothing import twice\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("1:6: cannot import 'pkg.nothing': "),
            std::string::npos)
      << errors[0];
}

// readSourceText refuses what is not a readable text file, with the reason
// the driver and the import resolver both print.
TEST_F(ImportsTest, ReadSourceTextRefusals) {
  write(root / "ok.ein", kTwice);
  auto ok = readSourceText((root / "ok.ein").string());
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, kTwice);
  auto dir = readSourceText((root / "lib").string());
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().message, "not a regular file");
  std::ofstream(root / "nul.ein", std::ios::binary) << std::string("a\0b", 3);
  auto nul = readSourceText((root / "nul.ein").string());
  ASSERT_FALSE(nul);
  EXPECT_EQ(nul.error().message, "not a text file (contains NUL bytes)");
  auto missing = readSourceText((root / "none.ein").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message.rfind("cannot open file: ", 0), 0u);
}

// writeFileAtomically replaces the whole file and leaves no temporary.
TEST_F(ImportsTest, WriteFileAtomically) {
  fs::path path = root / "lib" / "out.txt";
  write(path, "old content, longer than the new");
  ASSERT_TRUE(writeFileAtomically(path.string(), "new"));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "new");
  size_t files = 0;
  for (auto &entry : fs::directory_iterator(root / "lib"))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1u);
  EXPECT_FALSE(writeFileAtomically((root / "none" / "x").string(), "x"));
}

} // namespace
