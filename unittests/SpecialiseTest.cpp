// specialise() against the checker itself run again with the call's sizes (the
// oracle), on every example function.
#include "ein/Sema/Specialise.h"
#include "ein/Sema/Checker.h"
#include "ein/Sema/EntryBinding.h"
#include "ein/Syntax/Imports.h"
#include "ein/Syntax/Parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <algorithm>
#include <filesystem>
#include <sstream>

using namespace ein;

namespace {

namespace fs = std::filesystem;

/// Everything of `fn` that code reading a checked function sees: lowering,
/// costs, the report, result shapes, entry checks.
std::string dump(const CheckedModule &m, const std::string &function) {
  std::ostringstream os;
  os << "path " << m.path << "\n";
  for (auto &f : m.files)
    os << "file " << f << "\n";
  for (auto &[name, value] : m.dims)
    os << "dim " << name << "=" << toString(value) << "\n";
  os << "functions " << m.functions.size() << "\n";
  const CheckedFunction *fn = m.find(function);
  if (!fn)
    return os.str() + "no function\n";
  const InferContext &ctx = fn->ctx;
  for (auto &[name, value] : ctx.env)
    os << "env " << name << "=" << toString(value) << "\n";
  for (auto &name : ctx.entryNames)
    os << "entry name " << name << "\n";
  for (auto &[name, value] : ctx.inferred)
    os << "inferred " << name << "=" << toString(value) << "\n";
  for (auto &[name, shape] : ctx.packBindings)
    os << "pack " << name << " = " << shapeStr(shape) << "\n";
  for (auto &c : ctx.constraints)
    os << "check " << c.str() << " (" << c.reason << ")\n";
  auto ids = [](const std::vector<unsigned> &v) {
    std::string s;
    for (unsigned id : v)
      s += " " + std::to_string(id);
    return s;
  };
  os << "params" << ids(fn->params) << "\nreturns" << ids(fn->returns)
     << "\nwrt" << ids(fn->gradWrt) << "\nlosses" << ids(fn->gradLosses)
     << "\n";
  for (auto &t : fn->results)
    os << "result " << t.str() << "\n";
  for (auto &s : fn->callSites)
    os << "call " << s.callee << " " << s.loc.line << ":" << s.loc.col << " "
       << s.parent << "\n";
  for (size_t i = 0; i < fn->values.size(); ++i) {
    const Value &v = fn->values[i];
    os << "value " << i << " " << v.name << " " << v.type.str() << " expanded "
       << shapeStr(ctx.expand(v.type.shape)) << (v.isPackedShapes ? " ps" : "");
    for (auto &p : v.parts)
      os << " [" << shapeStr(p) << "]";
    os << "\n";
  }
  auto sizes = [](const std::map<std::string, SizeExpr> &m) {
    std::string s;
    for (auto &[a, e] : m)
      s += " " + a + "=" + e.str();
    return s;
  };
  auto groups = [](const std::vector<std::vector<std::string>> &g) {
    std::string s;
    for (auto &group : g) {
      s += " (";
      for (auto &a : group)
        s += a + " ";
      s += ")";
    }
    return s;
  };
  for (const CheckedOp &op : fn->ops) {
    os << "op " << opKindName(op.kind) << " " << opName(op.kind, op.fn) << " "
       << op.loc.line << ":" << op.loc.col << " '" << op.pattern << "'"
       << " reduce " << reduceKindName(op.reduction) << " acc "
       << (op.acc ? dtypeName(*op.acc) : "-") << " constant " << op.constant
       << " " << op.constantIsInt << " " << op.constantInt << " size "
       << op.sizeValue.str() << " slice " << op.sliceAxis << " "
       << op.sliceStart.str() << ".." << op.sliceStop.str() << " in"
       << ids(op.operands) << " out" << ids(op.results) << " axis " << op.axis
       << " site " << op.callSite << " phase " << gradPhaseName(op.phase)
       << " of " << op.gradOf;
    for (auto &s : op.sizes)
      os << " " << s.name << "=" << s.value.str();
    for (auto &p : op.packParts)
      os << " [" << shapeStr(p) << "]";
    if (op.transform)
      os << "\n  transform" << groups(op.transform->inputGroups) << " ->"
         << groups(op.transform->outputGroups) << sizes(op.transform->axisSizes)
         << " : " << shapeStr(op.transform->result);
    if (op.einsum) {
      os << "\n  einsum";
      for (auto &g : op.einsum->operandGroups)
        os << groups(g) << ",";
      os << " ->" << groups(op.einsum->outputGroups)
         << sizes(op.einsum->axisSizes) << " : " << shapeStr(op.einsum->result);
    }
    os << "\n";
  }
  return os.str();
}

/// Input shapes for `fn`: each dim's size with the names the function does
/// not fix given sizes by `pick` (which sees the name's position among the
/// free names), a variadic of unknown rank `rank` dims of size 3.
std::vector<std::vector<int64_t>>
shapesFor(const CheckedFunction &fn, const std::function<Int(size_t)> &pick,
          size_t rank) {
  Bindings env = fn.ctx.env;
  std::vector<std::vector<int64_t>> shapes;
  for (unsigned id : fn.params) {
    std::vector<int64_t> shape;
    for (const Dim &d : fn.ctx.expand(fn.values[id].type.shape)) {
      if (d.isPack()) {
        shape.insert(shape.end(), rank, 3);
        continue;
      }
      for (auto &name : d.size.symbols())
        if (!env.count(name)) {
          size_t k = env.size();
          env[name] = pick(k);
        }
      auto v = d.size.evaluate(env);
      shape.push_back(v ? static_cast<int64_t>(*v) : 1);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

struct Tally {
  size_t compared = 0, rechecked = 0, unbound = 0, failed = 0;
  /// How often each kind of op was specialised (a size op's constant is
  /// counted as a constant).
  std::map<std::string, size_t> ops;
  /// Why each re-checked call was (the reason up to its first '(').
  std::map<std::string, size_t> reasons;
  void add(const Tally &t) {
    compared += t.compared;
    rechecked += t.rechecked;
    for (auto &[k, n] : t.ops)
      ops[k] += n;
    for (auto &[k, n] : t.reasons)
      reasons[k] += n;
  }
  void print(const char *what) const {
    std::printf("%s: %zu specialised and compared, %zu re-checked\n", what,
                compared, rechecked);
    for (auto &[k, n] : reasons)
      std::printf("  re-checked: %s: %zu\n", k.c_str(), n);
    std::string kinds;
    for (auto &[k, n] : ops)
      kinds += " " + k + "=" + std::to_string(n);
    std::printf("  ops compared:%s\n", kinds.c_str());
  }
};

/// For every function of the .ein file at `path` that checks, and a few
/// sets of input shapes that bind: the specialised module is the re-checked
/// one, or specialise says why it cannot be.
Tally compareFile(const std::string &path) {
  Tally tally;
  auto file = readSource(path);
  EXPECT_TRUE(bool(file)) << path;
  if (!file)
    return tally;
  DiagnosticEngine diags(*file);
  Module module = parseModule(*file, diags);
  if (!diags.hadError())
    resolveImports(module, *file, diags);
  if (diags.hadError())
    return tally;
  for (const std::string &name : module.functionNames()) {
    CheckOptions symbolicOptions;
    symbolicOptions.onlyFunction = name;
    DiagnosticEngine symbolicDiags(*file);
    CheckedModule symbolic =
        checkModule(module, symbolicOptions, symbolicDiags);
    const CheckedFunction *fn = symbolic.find(name);
    if (symbolicDiags.hadError() || !fn)
      continue;
    std::vector<std::string> params;
    for (unsigned id : fn->params)
      params.push_back(fn->values[id].name);
    std::vector<std::function<Int(size_t)>> picks = {
        [](size_t) { return Int(4); },
        [](size_t k) { return Int(2 + k); },
        [](size_t k) { return Int(k % 2 ? 6 : 8); },
        [](size_t k) { return Int(k == 0 ? 1 : 12); },
    };
    for (size_t p = 0; p < picks.size(); ++p) {
      auto shapes = shapesFor(*fn, picks[p], 1 + p % 2);
      EntryBinding binding = bindEntryShapes(*fn, params, shapes);
      if (!binding.ok) {
        ++tally.unbound;
        continue;
      }
      // The oracle: the check Engine::bind ran before specialise existed.
      DiagnosticEngine boundDiags(*file);
      CheckedModule concrete = checkModule(
          module, boundCheckOptions(symbolicOptions, *fn, binding), boundDiags);
      SpecialisedModule specialised = specialise(symbolic, name, binding);
      if (!specialised.module) {
        EXPECT_FALSE(specialised.recheck.empty());
        ++tally.rechecked;
        ++tally.reasons[specialised.recheck.substr(
            0, specialised.recheck.find(" ("))];
        continue;
      }
      if (boundDiags.hadError()) {
        ++tally.failed;
        ADD_FAILURE() << path << ": " << name << " with shapes set " << p
                      << " does not check again, but specialise gave a module";
        continue;
      }
      EXPECT_EQ(dump(*specialised.module, name), dump(concrete, name))
          << path << ": " << name << " with shapes set " << p;
      ++tally.compared;
      for (const CheckedOp &op : specialised.module->functions[0].ops)
        ++tally.ops[opKindName(op.kind)];
    }
  }
  return tally;
}

std::vector<std::string> einFiles(const fs::path &dir) {
  std::vector<std::string> files;
  for (auto &entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".ein")
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(SpecialiseTest, ExamplesMatchTheCheckWithTheSizes) {
  Tally total;
  for (const std::string &path :
       einFiles(fs::path(EIN_SOURCE_DIR) / "examples")) {
    Tally t = compareFile(path);
    // Every example has a function whose common call is specialised; but a
    // sharded one (a `mesh`), which no engine runs yet, and whose mesh axes
    // are left to the launcher (entry checks, so re-checked).
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    if (text.find("\nmesh ") != std::string::npos)
      continue;
    EXPECT_GT(t.compared, 0u) << path << " (" << t.rechecked << " re-checked, "
                              << t.unbound << " unbound)";
    total.add(t);
  }
  total.print("examples");
}

TEST(SpecialiseTest, EveryEinFileOfTheTestsMatchesTheCheckWithTheSizes) {
  // Every .ein file of the tests, the benchmarks and the library (those
  // that do not check, written to fail, are skipped).
  Tally total;
  for (const char *dir : {"test", "bench", "share", "examples"}) {
    std::vector<std::string> files;
    for (auto &entry :
         fs::recursive_directory_iterator(fs::path(EIN_SOURCE_DIR) / dir))
      if (entry.path().extension() == ".ein")
        files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    for (const std::string &path : files) {
      Tally t = compareFile(path);
      total.add(t);
    }
  }
  EXPECT_GT(total.compared, 0u);
  total.print("every .ein file");
}

TEST(SpecialiseTest, RefusesWhatChangesTheStructure) {
  SourceFile file{"t.ein",
                  "def f(x: f32[\"#m\"], y: f32[\"m\"]) -> f32[\"m\"]:\n"
                  "    return x + y\n"
                  "def g(x: f32[\"*b n\"]) -> f32[\"*b n\"]:\n"
                  "    return x\n"};
  DiagnosticEngine diags(file);
  Module module = parseModule(file, diags);
  CheckedModule checked = checkModule(module, {}, diags);
  ASSERT_FALSE(diags.hadError());
  // `#m` given 1 is typed 1; `#m` given another size is compared.
  for (std::vector<int64_t> x : {std::vector<int64_t>{1}, {5}}) {
    EntryBinding b = bindEntryShapes(*checked.find("f"), {"x", "y"}, {x, {5}});
    ASSERT_TRUE(b.ok) << b.error;
    EXPECT_FALSE(specialise(checked, "f", b).module);
  }
  // A variadic's rank from the inputs.
  EntryBinding b = bindEntryShapes(*checked.find("g"), {"x"}, {{2, 3, 4}});
  ASSERT_TRUE(b.ok) << b.error;
  SpecialisedModule s = specialise(checked, "g", b);
  EXPECT_FALSE(s.module);
  EXPECT_EQ(s.recheck, "the inputs fix the rank of a variadic");
}

/// Functions the check with their call's sizes refuses, though the symbolic
/// check and the entry checks pass: specialise must not give a module.
TEST(SpecialiseTest, RefusesWhatTheCheckWithTheSizesRejects) {
  SourceFile file{"t.ein", "def big(x: i32[\"n\"]) -> i32[\"n\"]:\n"
                           "    return x * n\n"
                           "def neg(x: f32[\"n\"]) -> i64[\"n-3\"]:\n"
                           "    return arange(n - 3)\n"
                           "def quot(x: f32[\"n m\"]) -> f32[\"n m\"]:\n"
                           "    return x * (n // m)\n"
                           "def self(x: f32[\"n\"]) -> f32[\"1 n\"]:\n"
                           "    return rearrange(x, \"(a b) -> a b\", b=n)\n"};
  DiagnosticEngine diags(file);
  Module module = parseModule(file, diags);
  CheckedModule checked = checkModule(module, {}, diags);
  ASSERT_FALSE(diags.hadError());
  struct Call {
    const char *fn;
    std::vector<std::vector<int64_t>> shapes;
    const char *recheck;
  };
  for (const Call &call :
       {Call{"big", {{int64_t(1) << 40}}, "the size n (= 1099511627776)"},
        Call{"neg", {{2}}, "arange's size (n - 3) is negative"},
        Call{"quot", {{4, 0}}, "the inputs give 'm' size 0"},
        // `n / n` is 1 without the sizes, a division by 0 with them.
        Call{"self", {{0}}, "the inputs give 'n' size 0"}}) {
    const CheckedFunction *fn = checked.find(call.fn);
    std::vector<std::string> params;
    for (unsigned id : fn->params)
      params.push_back(fn->values[id].name);
    EntryBinding b = bindEntryShapes(*fn, params, call.shapes);
    ASSERT_TRUE(b.ok) << call.fn << ": " << b.error;
    SpecialisedModule s = specialise(checked, call.fn, b);
    EXPECT_FALSE(s.module) << call.fn;
    EXPECT_NE(s.recheck.find(call.recheck), std::string::npos)
        << call.fn << ": " << s.recheck;
    // The oracle: the check with the sizes reports an error.
    CheckOptions bound;
    bound.onlyFunction = call.fn;
    bound.entryDims = b.dims;
    for (auto &[name, value] : b.dims)
      bound.entryNames.insert(name); // (the file declares no dim)
    DiagnosticEngine boundDiags(file);
    checkModule(module, bound, boundDiags);
    EXPECT_TRUE(boundDiags.hadError()) << call.fn;
  }
}

} // namespace
