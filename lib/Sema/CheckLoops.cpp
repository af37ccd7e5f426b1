// The checker of `for l in range(layers):` loops over stacked weights: the
// body is checked once symbolically, then unrolled into the function (one
// call site per iteration), `w[l]` reading row l of one unpack of `w` along
// its leading axis, so that autodiff, the cost model and the back ends see
// ordinary ops and a stacked weight's gradient is one pack of its rows'.
#include "FunctionChecker.h"

#include <fmt/format.h>

namespace ein::sema {

std::string FunctionChecker::Loop::header() const {
  return "for " + var + " in " + exprToString(*stmt->values[0]);
}

namespace {

/// The most iterations a loop is unrolled to: beyond, the program would be
/// too large to compile in reasonable time.
constexpr size_t kMaxLoopIterations = 1024;

std::string typeText(const TensorType &t, const InferContext &ctx) {
  return fmt::format("{}[\"{}\"]", dtypeName(t.dtype),
                     shapeStr(ctx.expand(t.shape)));
}

/// Whether two types are the same: the dtype, and every dim provably the
/// same size (or the same variadic).
bool sameType(const TensorType &a, const TensorType &b,
              const InferContext &ctx) {
  if (a.dtype != b.dtype)
    return false;
  Shape x = ctx.expand(a.shape), y = ctx.expand(b.shape);
  if (x.size() != y.size())
    return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].isPack() || y[i].isPack()) {
      if (!(x[i].isPack() && y[i].isPack() && x[i].pack == y[i].pack))
        return false;
      continue;
    }
    if (!(x[i].size == y[i].size) &&
        ctx.prove(x[i].size, y[i].size) != InferContext::Proof::Equal)
      return false;
  }
  return true;
}

} // namespace

bool FunctionChecker::bindsName(const std::vector<Stmt> &body,
                                const std::string &name) {
  for (const Stmt &s : body) {
    if (s.kind == Stmt::Kind::Assign)
      for (const auto &target : s.targets)
        if (target.first == name)
          return true;
    if (s.kind == Stmt::Kind::For && bindsName(s.body, name))
      return true;
  }
  return false;
}

bool FunctionChecker::checkFor(const Stmt &stmt) {
  const Expr &over = *stmt.values[0];
  const auto &[var, varLoc] = stmt.targets[0];
  const char *usage = "a for loop runs over range(N), N a size (a dim such "
                      "as layers, an integer, or + - * of them): for l in "
                      "range(layers)";
  if (over.kind != Expr::Kind::Call || over.text != "range" ||
      over.args.size() != 1 || !over.keywords.empty()) {
    diags.error(over.loc,
                over.kind == Expr::Kind::Call && over.text == "range"
                    ? std::string("range takes one argument, the number of "
                                  "iterations (from 0, step 1): for l in "
                                  "range(layers)")
                    : std::string(usage),
                over.length);
    return false;
  }
  if (vars.count(var) || scalarVars.count(var) || isDimName(var)) {
    diags.error(varLoc,
                fmt::format("the loop variable '{}' already names {}; choose "
                            "another name",
                            var,
                            vars.count(var)         ? "a tensor"
                            : scalarVars.count(var) ? "a value"
                                                    : "a dim"),
                static_cast<unsigned>(var.size()));
    return false;
  }
  auto count = sizeOf(*over.args[0]);
  if (!count)
    return false;
  std::string written = "for " + var + " in " + exprToString(over);
  std::optional<Int> n = count->substitute(out.ctx.env).constantValue();
  if (n && *n < 0) {
    std::string count = exprToString(*over.args[0]);
    if (over.args[0]->kind == Expr::Kind::Binary && count.size() >= 2)
      count = count.substr(1, count.size() - 2); // `2 - 3`, not `(2 - 3)`
    diags.error(over.args[0]->loc,
                fmt::format("the loop runs range({}) times, a negative number "
                            "({})",
                            count, toString(*n)),
                over.args[0]->length);
    return false;
  }

  Loop loop;
  loop.stmt = &stmt;
  loop.var = var;
  loop.count = *count;
  loop.before = vars;
  // The body once, with the loop variable a symbol, when no iteration will
  // check it: a loop of unknown count, or one that runs no iteration. What
  // it built is dropped. (Otherwise the iterations check it: a symbolic
  // pass too would double the work at each level of nested loops.)
  if (!n || *n == 0) {
    CheckedFunction saved = out;
    bool ok = checkLoopPass(loop, std::nullopt);
    out = std::move(saved);
    vars = loop.before; // the values the pass bound are gone
    loop.rows.clear();
    loop.loopOps.clear();
    if (!ok)
      return false;
  }
  if (!n) {
    std::string size = exprToString(*over.args[0]);
    std::set<std::string> names;
    collectShapeNames(count->str(), names);
    std::string flag = names.empty() ? std::string("--dim NAME=N")
                                     : "--dim " + *names.begin() + "=N";
    std::string message = fmt::format(
        "'{}' is unrolled when it is compiled, so the size '{}' must be "
        "known then: give it with {}, a 'dim' declaration, or an input whose "
        "shape has it (einc run binds it from the inputs)",
        written, size, flag);
    if (scope.loopsMayStaySymbolic) {
      out.symbolicLoops.push_back({stmt.loc, message});
      return true;
    }
    diags.error(stmt.loc, message, 3);
    return false;
  }
  if (*n > Int(kMaxLoopIterations)) {
    diags.error(stmt.loc,
                fmt::format("'{}' runs {} times; loops are unrolled, up to {} "
                            "iterations",
                            written, toString(*n), kMaxLoopIterations),
                3);
    return false;
  }
  size_t iterations = static_cast<size_t>(*n);
  for (size_t i = 0; i < iterations; ++i) {
    int site = static_cast<int>(out.callSites.size());
    out.callSites.push_back(
        {written, stmt.loc, callSite, static_cast<int64_t>(i)});
    size_t firstOp = out.ops.size(), firstSite = out.callSites.size();
    if (!checkLoopPass(loop, i))
      return false;
    // The iteration's ops, and the calls made in it, are the iteration's
    // (those of nested calls and loops name theirs already); the unpacks
    // of stacked tensors belong to the loop.
    for (size_t k = firstOp; k < out.ops.size(); ++k) {
      bool ofALoop = false;
      for (const Loop &l : loops)
        ofALoop |= l.loopOps.count(k) != 0;
      if (out.ops[k].callSite < 0 && !loop.loopOps.count(k) && !ofALoop)
        out.ops[k].callSite = site;
    }
    for (size_t k = firstSite; k < out.callSites.size(); ++k)
      if (out.callSites[k].parent == callSite)
        out.callSites[k].parent = site;
    if (out.ops.size() > kMaxInlinedOps ||
        out.callSites.size() > kMaxInlinedOps) {
      diags.error(stmt.loc,
                  fmt::format("unrolling '{}' makes '{}' larger than {} "
                              "operations or calls (iterations count as "
                              "calls)",
                              written, out.name, kMaxInlinedOps),
                  3);
      return false;
    }
  }
  return true;
}

bool FunctionChecker::checkLoopPass(Loop &loop, std::optional<size_t> i) {
  const Stmt &stmt = *loop.stmt;
  auto savedScalars = scalarVars;
  auto savedPins = readByDeferred;
  Operand index;
  index.size = i ? SizeExpr::constant(Int(static_cast<int64_t>(*i)))
                 : SizeExpr::symbol(loop.var);
  scalarVars[loop.var] = index;
  loop.iteration = i;
  loops.push_back(std::move(loop));
  bool ok = true;
  for (const Stmt &s : stmt.body)
    if (!(ok = checkStmt(s)))
      break;
  loop = std::move(loops.back());
  loops.pop_back();
  // What the body bound first ends with the iteration: only the values
  // bound before the loop carry over (with their new values).
  for (auto it = vars.begin(); it != vars.end();)
    if (!loop.before.count(it->first)) {
      loopLocals.emplace(it->first, stmt.loc);
      it = vars.erase(it);
    } else {
      ++it;
    }
  for (auto &[name, value] : scalarVars)
    if (!savedScalars.count(name) && name != loop.var)
      loopLocals.emplace(name, stmt.loc);
  scalarVars = std::move(savedScalars);
  readByDeferred = std::move(savedPins);
  return ok;
}

bool FunctionChecker::keepsLoopType(const std::string &name, SourceLoc loc,
                                    const Operand &value, size_t index) {
  if (loops.empty())
    return true;
  const Loop &loop = loops.back();
  auto before = loop.before.find(name);
  if (before == loop.before.end())
    return true;
  const TensorType &was = typeOf(before->second);
  if (value.isScalar() || index >= value.values.size() ||
      out.values[value.values[index]].isPackedShapes) {
    diags.error(loc,
                fmt::format("'{}' is carried through the loop '{}' (it is "
                            "bound before it) and must stay a tensor of type "
                            "{}",
                            name, loop.header(), typeText(was, out.ctx)),
                static_cast<unsigned>(name.size()));
    return false;
  }
  const TensorType &now = typeOf(value.values[index]);
  if (sameType(was, now, out.ctx))
    return true;
  diags.error(loc,
              fmt::format("'{}' is carried through the loop '{}' (it is bound "
                          "before it), so it keeps its type: it is {} before "
                          "the loop but {} here",
                          name, loop.header(), typeText(was, out.ctx),
                          typeText(now, out.ctx)),
              static_cast<unsigned>(name.size()));
  return false;
}

std::optional<Operand> FunctionChecker::indexed(const Expr &e) {
  const Expr &base = *e.args[0];
  const char *allowed = "a tensor is indexed only inside a for loop, by the "
                        "loop variable, on its leading axis (w[l] in 'for l "
                        "in range(layers)'); to select along an axis use "
                        "slice(x, \"axis\", start, stop) or take(x, ids, "
                        "\"axis\")";
  if (loops.empty()) {
    diags.error(e.loc, allowed, 1);
    return std::nullopt;
  }
  if (e.args.size() > 2) {
    diags.error(e.args[2]->loc,
                fmt::format("only the leading axis can be indexed: write "
                            "{}[{}] (one index, the loop variable); rearrange "
                            "the axis to index to the front first",
                            exprToString(base), loops.back().var),
                e.args[2]->length);
    return std::nullopt;
  }
  const Expr &at = *e.args[1];
  Loop *loop = nullptr;
  if (at.kind == Expr::Kind::Name)
    for (Loop &l : loops)
      if (l.var == at.text)
        loop = &l;
  if (!loop) {
    std::string names;
    for (const Loop &l : loops)
      names += (names.empty() ? "" : ", ") + l.var;
    diags.error(at.loc,
                fmt::format("the index must be the variable of an enclosing "
                            "for loop ({}), not '{}': {}",
                            names, exprToString(at), allowed),
                at.length);
    return std::nullopt;
  }
  auto x = tensorOf(base);
  if (!x)
    return std::nullopt;
  Shape shape = out.ctx.expand(typeOf(*x).shape);
  DType dtype = typeOf(*x).dtype;
  std::string loopText = loop->header();
  if (shape.empty() || shape[0].isPack()) {
    diags.error(base.loc,
                fmt::format("'{}' ({}) has no leading axis of fixed size to "
                            "index: its leading axis is the loop's range "
                            "('{}')",
                            exprToString(base), typeText(typeOf(*x), out.ctx),
                            loopText),
                base.length);
    return std::nullopt;
  }
  const SizeExpr &lead = shape[0].size;
  auto known = [&](const SizeExpr &s) {
    return s.substitute(out.ctx.env).constantValue();
  };
  bool same = lead == loop->count ||
              out.ctx.prove(lead, loop->count) == InferContext::Proof::Equal ||
              (known(lead) && known(loop->count) &&
               *known(lead) == *known(loop->count));
  if (!same) {
    diags.error(base.loc,
                fmt::format("'{}' ({}) is indexed by '{}', but its leading "
                            "axis ({}) is not the loop's range ('{}'): a "
                            "stacked tensor has one row per iteration",
                            exprToString(base), typeText(typeOf(*x), out.ctx),
                            loop->var, lead.str(), loopText),
                base.length);
    return std::nullopt;
  }
  Shape row(shape.begin() + 1, shape.end());
  if (!loop->iteration) {
    // The symbolic pass: a value of the row's type stands for every row.
    return single(builder(e.loc).param(TensorType{row, dtype}));
  }
  auto rows = loop->rows.find(*x);
  if (rows == loop->rows.end()) {
    // One unpack along the leading axis, its parts one row each: a view
    // forward, and a stacked weight's gradient is one pack of its rows'.
    std::string text = "*";
    for (size_t k = 0; k < row.size(); ++k)
      text += fmt::format(" r{}", k);
    auto pattern = parsePattern(text, PatternUse::Pack);
    size_t iterations = static_cast<size_t>(*known(loop->count));
    BuildOr<std::vector<unsigned>> parts =
        pattern
            ? builder(e.loc).unpack(*x, *pattern,
                                    std::vector<Shape>(iterations))
            : BuildOr<std::vector<unsigned>>(BuildError{
                  ShapeError::atOp(pattern.error().message), "unpack", text});
    if (!parts) {
      diags.error(e.loc,
                  fmt::format("cannot split '{}' into its rows: {}",
                              exprToString(base), parts.error().error.message),
                  1);
      return std::nullopt;
    }
    loop->loopOps.insert(out.ops.size() - 1);
    for (size_t k = 0; k < (*parts).size(); ++k)
      out.values[(*parts)[k]].name = fmt::format("{}[{}]", base.text, k);
    rows = loop->rows.emplace(*x, *parts).first;
  }
  return single(rows->second[*loop->iteration]);
}

} // namespace ein::sema
