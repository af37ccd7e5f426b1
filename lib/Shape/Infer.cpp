// Shape inference for rearrange, reduce, repeat, einsum, pack, unpack and
// elementwise broadcasting, with einops' rules and symbolic sizes.
#include "ein/Shape/Infer.h"

#include <algorithm>
#include <set>

namespace ein {

std::optional<ReduceKind> parseReduceKind(const std::string &name) {
#define EIN_REDUCE_KIND(Kind, name_, ...)                                      \
  if (name == #name_)                                                          \
    return ReduceKind::Kind;
#include "ein/Shape/ReduceKinds.def"
  return std::nullopt;
}

const char *reduceKindName(ReduceKind kind) {
  switch (kind) {
#define EIN_REDUCE_KIND(Kind, name, ...)                                       \
  case ReduceKind::Kind:                                                       \
    return #name;
#include "ein/Shape/ReduceKinds.def"
  }
  return "sum";
}

namespace {

/// A row of ReduceKinds.def past its name.
struct ReduceRow {
  ReduceCombine combine;
  ReduceFinish finish;
};

ReduceRow reduceRow(ReduceKind kind) {
  switch (kind) {
#define EIN_REDUCE_KIND(Kind, name, Combine, Finish, ...)                      \
  case ReduceKind::Kind:                                                       \
    return {ReduceCombine::Combine, ReduceFinish::Finish};
#include "ein/Shape/ReduceKinds.def"
  }
  return {}; // every case returns: for GCC's -Wreturn-type
}

} // namespace

ReduceCombine reduceCombine(ReduceKind kind) { return reduceRow(kind).combine; }

ReduceFinish reduceFinish(ReduceKind kind) { return reduceRow(kind).finish; }

//===----------------------------------------------------------------------===//
// Matching one pattern side against a shape
//===----------------------------------------------------------------------===//

namespace {

using SizeMap = std::map<std::string, SizeExpr>;

std::string ellipsisAxis(size_t i) { return "..." + std::to_string(i); }

ShapeError withAnchor(ShapeError e, const PatternAxis &axis) {
  e.anchor = ShapeError::Anchor::Pattern;
  e.offset = axis.offset;
  e.length = axis.length;
  return e;
}
ShapeError withAnchor(ShapeError e, const PatternGroup &group) {
  e.anchor = ShapeError::Anchor::Pattern;
  e.offset = group.offset;
  e.length = std::max(1u, group.length);
  return e;
}

std::string groupText(const PatternGroup &g) {
  PatternSide side;
  side.groups.push_back(g);
  return side.str();
}

/// The result of matching one side: the elementary axes it names, in order
/// (ellipsis dims as `...i`), and the dims matched by the ellipsis.
struct SideMatch {
  std::vector<std::string> axes;
  std::vector<std::vector<std::string>> groups; // per dim of the operand
  Shape ellipsis;
};

/// Binds a pack of unknown rank to `rank` fresh dims.
void bindPack(InferContext &ctx, const std::string &pack, size_t rank) {
  ctx.packBindings[pack] = packDims(pack, rank);
}

/// Matches `side` against `input`, recording elementary axis sizes in
/// `sizes` (which may already hold sizes from keyword arguments or from
/// other operands, which are then checked).
Expected<SideMatch> matchSide(InferContext &ctx, const PatternSide &side,
                              const Shape &input, unsigned operand,
                              SizeMap &sizes) {
  Shape shape = ctx.expand(input);
  size_t groups = side.groups.size();
  std::optional<size_t> ell;
  for (size_t i = 0; i < groups; ++i)
    if (!side.groups[i].parenthesized && !side.groups[i].axes.empty() &&
        side.groups[i].axes[0].kind == PatternAxis::Kind::Ellipsis)
      ell = i;
  std::vector<size_t> packs;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i].isPack())
      packs.push_back(i);

  auto rankError = [&](const std::string &expect) {
    for (auto &d : input)
      if (d.isPack() && ctx.packBindings.count(d.pack))
        return ShapeError::atOperand(
            "variadic " + d.str() + " was bound to rank " +
                std::to_string(ctx.packBindings.at(d.pack).size()) +
                " earlier in this function, so the operand has " +
                std::to_string(shape.size()) + " dims (\"" + shapeStr(shape) +
                "\"), but the pattern '" + side.str() + "' expects " + expect,
            operand);
    return ShapeError::atOperand("the pattern '" + side.str() + "' expects " +
                                     expect + " dims, but the operand has " +
                                     std::to_string(shape.size()) + " (\"" +
                                     shapeStr(shape) + "\")",
                                 operand);
  };

  SideMatch match;
  size_t pre = groups, post = 0;
  if (!ell) {
    if (packs.size() == 1) {
      if (shape.size() - 1 > groups)
        return rankError(std::to_string(groups));
      bindPack(ctx, shape[packs[0]].pack, groups - (shape.size() - 1));
      shape = ctx.expand(shape);
    } else if (packs.size() > 1) {
      return ShapeError::atOperand(
          "cannot match the pattern '" + side.str() +
              "' against several variadic dims; use '...'",
          operand);
    }
    if (shape.size() != groups)
      return rankError(std::to_string(groups));
  } else {
    pre = *ell;
    post = groups - *ell - 1;
    if (shape.size() < pre + post)
      return rankError("at least " + std::to_string(pre + post));
    for (size_t p : packs)
      if (p < pre || p >= shape.size() - post)
        return ShapeError::atOperand(
            "cannot match named axes of '" + side.str() +
                "' against variadic " + shape[p].str() +
                " of unknown rank; match it with '...'",
            operand);
    match.ellipsis.assign(shape.begin() + pre, shape.end() - post);
  }

  for (size_t g = 0; g < groups; ++g) {
    const PatternGroup &group = side.groups[g];
    if (ell && g == *ell) {
      for (size_t i = 0; i < match.ellipsis.size(); ++i) {
        match.axes.push_back(ellipsisAxis(i));
        match.groups.push_back({ellipsisAxis(i)});
      }
      continue;
    }
    const Dim &dim = shape[g < pre ? g : shape.size() - (groups - g)];
    size_t firstAxis = match.axes.size();
    SizeExpr known = SizeExpr::constant(1);
    std::vector<const PatternAxis *> unknown;
    for (auto &axis : group.axes) {
      if (axis.kind == PatternAxis::Kind::Number) {
        known = known * SizeExpr::constant(axis.value);
        match.axes.push_back(axis.name + "@" + std::to_string(axis.offset));
        sizes[match.axes.back()] = SizeExpr::constant(axis.value);
        continue;
      }
      match.axes.push_back(axis.name);
      auto it = sizes.find(axis.name);
      if (it != sizes.end())
        known = known * it->second;
      else
        unknown.push_back(&axis);
    }
    match.groups.emplace_back(match.axes.begin() + firstAxis, match.axes.end());
    if (unknown.empty()) {
      std::string what = group.axes.size() == 1 && !group.parenthesized
                             ? "axis '" + group.axes[0].name + "'"
                             : "composition " + groupText(group);
      auto ok = ctx.unify(known, dim.size, what);
      if (!ok) {
        if (group.axes.size() == 1)
          return withAnchor(ok.error(), group.axes[0]);
        return withAnchor(ok.error(), group);
      }
      continue;
    }
    if (unknown.size() > 1) {
      std::string names;
      for (size_t i = 0; i < unknown.size(); ++i)
        names += (i ? (i + 1 == unknown.size() ? " and '" : ", '") : "'") +
                 unknown[i]->name + "'";
      return withAnchor(ShapeError::atOp("cannot infer the sizes of " + names +
                                         " in " + groupText(group) +
                                         ": give all but one as keyword sizes"),
                        group);
    }
    auto q = ctx.divide(dim.size, known, "composition " + groupText(group));
    if (!q)
      return withAnchor(q.error(), group);
    sizes[unknown[0]->name] = *q;
  }
  return match;
}

/// Builds the output shape of `side` from axis sizes and ellipsis dims.
Shape buildOutput(const InferContext &ctx, const PatternSide &side,
                  const SizeMap &sizes, const Shape &ellipsis,
                  std::vector<std::vector<std::string>> *groupsOut,
                  std::vector<std::string> *axesOut) {
  Shape out;
  for (auto &group : side.groups) {
    if (!group.parenthesized && !group.axes.empty() &&
        group.axes[0].kind == PatternAxis::Kind::Ellipsis) {
      for (size_t i = 0; i < ellipsis.size(); ++i) {
        out.push_back(ellipsis[i]);
        if (groupsOut)
          groupsOut->push_back({ellipsisAxis(i)});
        if (axesOut)
          axesOut->push_back(ellipsisAxis(i));
      }
      continue;
    }
    SizeExpr size = SizeExpr::constant(1);
    std::vector<std::string> members;
    for (auto &axis : group.axes) {
      if (axis.kind == PatternAxis::Kind::Ellipsis) {
        size = size * numElements(ellipsis);
        for (size_t i = 0; i < ellipsis.size(); ++i)
          members.push_back(ellipsisAxis(i));
      } else if (axis.kind == PatternAxis::Kind::Number) {
        size = size * SizeExpr::constant(axis.value);
        members.push_back(axis.name + "@" + std::to_string(axis.offset));
      } else {
        size = size * sizes.at(axis.name);
        members.push_back(axis.name);
      }
    }
    // Merging a split back gives the dim back: `(n/8)*8` is `n`.
    out.push_back(Dim::ofSize(members.size() > 1 ? ctx.simplify(size) : size));
    if (axesOut)
      axesOut->insert(axesOut->end(), members.begin(), members.end());
    if (groupsOut)
      groupsOut->push_back(members);
  }
  return out;
}

const PatternAxis *findAxis(const PatternSide &side, const std::string &name) {
  for (auto &g : side.groups)
    for (auto &a : g.axes)
      if (a.name == name)
        return &a;
  return nullptr;
}

const PatternAxis *findEllipsis(const PatternSide &side) {
  for (auto &g : side.groups)
    for (auto &a : g.axes)
      if (a.kind == PatternAxis::Kind::Ellipsis)
        return &a;
  return nullptr;
}

/// Keyword sizes: each must name an axis of the pattern and not be negative
/// (0 is an empty axis, as in einops: repeat(x, "a -> a b", b=0)).
Expected<SizeMap> checkSizes(InferContext &ctx, const Pattern &pattern,
                             const std::vector<SizeArg> &args) {
  SizeMap sizes;
  for (unsigned i = 0; i < args.size(); ++i) {
    auto &arg = args[i];
    bool used = findAxis(pattern.output, arg.name) != nullptr;
    for (auto &in : pattern.inputs)
      used |= findAxis(in, arg.name) != nullptr;
    if (!used)
      return ShapeError::atKwarg("size '" + arg.name +
                                     "' is not an axis of the pattern '" +
                                     pattern.str() + "'",
                                 i);
    auto v = arg.value.evaluate(ctx.env);
    if (v && *v < 0)
      return ShapeError::atKwarg(
          "size '" + arg.name + "' must not be negative, got " + toString(*v),
          i);
    if (sizes.count(arg.name))
      return ShapeError::atKwarg("size '" + arg.name + "' given twice", i);
    sizes[arg.name] = arg.value;
  }
  return sizes;
}

std::optional<ShapeError> checkAxisSets(const Pattern &pattern,
                                        PatternUse use) {
  const PatternSide &left = pattern.inputs[0];
  const PatternSide &right = pattern.output;
  auto numbers = [](const PatternSide &side) {
    std::vector<const PatternAxis *> out;
    for (auto &g : side.groups)
      for (auto &a : g.axes)
        if (a.kind == PatternAxis::Kind::Number)
          out.push_back(&a);
    return out;
  };
  switch (use) {
  case PatternUse::Rearrange: {
    for (auto *side : {&left, &right})
      for (auto *a : numbers(*side))
        return ShapeError::atPattern(
            "anonymous axis '" + a->name +
                "' in rearrange: only 1 is allowed (use repeat or reduce)",
            a->offset, a->length);
    for (auto *a : left.namedAxes())
      if (!findAxis(right, a->name))
        return ShapeError::atPattern("axis '" + a->name +
                                         "' appears only on the left side "
                                         "of rearrange",
                                     a->offset, a->length);
    for (auto *a : right.namedAxes())
      if (!findAxis(left, a->name))
        return ShapeError::atPattern("axis '" + a->name +
                                         "' appears only on the right side "
                                         "of rearrange",
                                     a->offset, a->length);
    if (auto *e = findEllipsis(left); e && !findEllipsis(right))
      return ShapeError::atPattern(
          "'...' appears only on the left side of rearrange", e->offset, 3);
    return std::nullopt;
  }
  case PatternUse::Reduce:
    for (auto *a : numbers(right))
      return ShapeError::atPattern("anonymous axis '" + a->name +
                                       "' on the right side of reduce",
                                   a->offset, a->length);
    for (auto *a : right.namedAxes())
      if (!findAxis(left, a->name))
        return ShapeError::atPattern(
            "output axis '" + a->name + "' is missing from the input of reduce",
            a->offset, a->length);
    return std::nullopt;
  case PatternUse::Repeat:
    for (auto *a : numbers(left))
      return ShapeError::atPattern("anonymous axis '" + a->name +
                                       "' on the left side of repeat",
                                   a->offset, a->length);
    for (auto *a : left.namedAxes())
      if (!findAxis(right, a->name))
        return ShapeError::atPattern("axis '" + a->name +
                                         "' of the input is missing from the "
                                         "output of repeat",
                                     a->offset, a->length);
    if (auto *e = findEllipsis(left); e && !findEllipsis(right))
      return ShapeError::atPattern(
          "'...' of the input is missing from the output of repeat", e->offset,
          3);
    return std::nullopt;
  case PatternUse::Einsum:
  case PatternUse::Pack:
    return std::nullopt;
  }
  return std::nullopt; // every case returns: for GCC's -Wreturn-type
}

} // namespace

//===----------------------------------------------------------------------===//
// rearrange / reduce / repeat
//===----------------------------------------------------------------------===//

Expected<TransformInfo> analyzeTransform(InferContext &ctx, PatternUse use,
                                         const Pattern &pattern,
                                         const Shape &input,
                                         const std::vector<SizeArg> &args) {
  if (pattern.inputs.size() != 1 || !pattern.hasArrow)
    return ShapeError::atOp("expected a pattern 'input -> output'");
  if (auto e = checkAxisSets(pattern, use))
    return *e;
  auto sizes = checkSizes(ctx, pattern, args);
  if (!sizes)
    return sizes.error();
  // Sizes of axes that only appear on the output (repeat) must be given.
  if (use == PatternUse::Repeat)
    for (auto *a : pattern.output.namedAxes())
      if (!findAxis(pattern.inputs[0], a->name) && !sizes->count(a->name))
        return ShapeError::atPattern("new axis '" + a->name +
                                         "' needs a size: repeat(..., " +
                                         a->name + "=N)",
                                     a->offset, a->length);
  auto match = matchSide(ctx, pattern.inputs[0], input, 0, *sizes);
  if (!match)
    return match.error();
  TransformInfo info;
  info.inputAxes = match->axes;
  info.inputGroups = match->groups;
  info.result = buildOutput(ctx, pattern.output, *sizes, match->ellipsis,
                            &info.outputGroups, &info.outputAxes);
  for (size_t i = 0; i < info.result.size(); ++i) {
    const Dim &dim = info.result[i];
    if (dim.isPack())
      continue;
    if (dim.size.tooComplex())
      return ShapeError::atOp("the output: " + SizeExpr::tooComplexMessage());
    // Reported here, at the op, rather than later as a shape that prints as
    // "0" at the return.
    if (dim.size.overflowed() || dim.size.substitute(ctx.env).overflowed())
      return ShapeError::atOp("the output's dim " + std::to_string(i) +
                              " overflows 128 bits");
  }
  for (size_t i = 0; i < match->ellipsis.size(); ++i)
    (*sizes)[ellipsisAxis(i)] = match->ellipsis[i].isPack()
                                    ? SizeExpr::symbol(match->ellipsis[i].pack)
                                    : match->ellipsis[i].size;
  for (auto &g : pattern.output.groups)
    for (auto &a : g.axes)
      if (a.kind == PatternAxis::Kind::Number)
        (*sizes)[a.name + "@" + std::to_string(a.offset)] =
            SizeExpr::constant(a.value);
  info.axisSizes = *sizes;
  return info;
}

Expected<Shape> inferRearrange(InferContext &ctx, const Pattern &pattern,
                               const Shape &input,
                               const std::vector<SizeArg> &sizes) {
  auto info =
      analyzeTransform(ctx, PatternUse::Rearrange, pattern, input, sizes);
  if (!info)
    return info.error();
  return info->result;
}

Expected<Shape> inferReduce(InferContext &ctx, const Pattern &pattern,
                            const Shape &input,
                            const std::vector<SizeArg> &sizes) {
  auto info = analyzeTransform(ctx, PatternUse::Reduce, pattern, input, sizes);
  if (!info)
    return info.error();
  return info->result;
}

Expected<bool> requireNonEmptyReduction(InferContext &ctx, ReduceKind kind,
                                        const Pattern &pattern,
                                        const TransformInfo &info) {
  if (kind != ReduceKind::Max && kind != ReduceKind::Min)
    return true;
  const char *name = reduceKindName(kind);
  // Elementary axes as the user wrote them: `...1` is a dim of the
  // ellipsis, `2@7` the anonymous axis 2 at offset 7.
  auto display = [](const std::string &a) {
    if (a.rfind("...", 0) == 0)
      return "dim " + a.substr(3) + " of '...'";
    return "'" + a.substr(0, a.find('@')) + "'";
  };
  SizeExpr count = SizeExpr::constant(1);
  std::string axes;
  for (auto &a : info.inputAxes) {
    if (std::find(info.outputAxes.begin(), info.outputAxes.end(), a) !=
        info.outputAxes.end())
      continue;
    auto it = info.axisSizes.find(a);
    if (it == info.axisSizes.end())
      continue;
    count = count * it->second;
    axes += (axes.empty() ? "" : ", ") + display(a);
    if (it->second.evaluate(ctx.env) != Int(0))
      continue;
    std::string message = std::string(name) +
                          " over an empty axis: " + display(a) +
                          " has size 0, and " + name +
                          " has no identity (numpy: zero-size array to "
                          "reduction operation " +
                          (kind == ReduceKind::Max ? "maximum" : "minimum") +
                          " which has no identity)";
    const PatternAxis *axis = a.rfind("...", 0) == 0
                                  ? findEllipsis(pattern.inputs[0])
                                  : findAxis(pattern.inputs[0], a);
    if (!axis)
      return ShapeError::atOp(message);
    return ShapeError::atPattern(message, axis->offset,
                                 a.rfind("...", 0) == 0 ? 3 : axis->length);
  }
  auto known = count.evaluate(ctx.env);
  if (known && *known >= 1)
    return true;
  // Sizes are never negative, so a product of names is 0 or at least 1.
  if (!count.isConstant())
    ctx.constraints.push_back({Constraint::Kind::NonEmpty, count, SizeExpr(),
                               std::string(name) + " over " + axes +
                                   " needs at least one element (" + name +
                                   " has no identity)"});
  return true;
}

Expected<Shape> inferRepeat(InferContext &ctx, const Pattern &pattern,
                            const Shape &input,
                            const std::vector<SizeArg> &sizes) {
  auto info = analyzeTransform(ctx, PatternUse::Repeat, pattern, input, sizes);
  if (!info)
    return info.error();
  return info->result;
}

//===----------------------------------------------------------------------===//
// einsum
//===----------------------------------------------------------------------===//

Expected<EinsumInfo> analyzeEinsum(InferContext &ctx, const Pattern &pattern,
                                   const std::vector<Shape> &inputs,
                                   const std::vector<SizeArg> &args) {
  if (!pattern.hasArrow)
    return ShapeError::atOp("einsum pattern needs '->'");
  if (pattern.inputs.size() != inputs.size())
    return ShapeError::atOp("the pattern '" + pattern.str() + "' has " +
                            std::to_string(pattern.inputs.size()) +
                            " operand(s) but einsum got " +
                            std::to_string(inputs.size()));
  std::vector<const PatternSide *> sides;
  for (auto &in : pattern.inputs)
    sides.push_back(&in);
  sides.push_back(&pattern.output);
  for (auto *side : sides)
    for (auto &g : side->groups) {
      if (g.axes.empty())
        return withAnchor(ShapeError::atOp("anonymous axes '1' and '()' are "
                                           "not supported in einsum"),
                          g);
      for (auto &a : g.axes)
        if (a.kind == PatternAxis::Kind::Number)
          return withAnchor(ShapeError::atOp("anonymous axis '" + a.name +
                                             "' is not supported in einsum"),
                            a);
    }
  for (auto *a : pattern.output.namedAxes()) {
    bool found = false;
    for (auto &in : pattern.inputs)
      found |= findAxis(in, a->name) != nullptr;
    if (!found)
      return ShapeError::atPattern("output axis '" + a->name +
                                       "' appears in no input of einsum",
                                   a->offset, a->length);
  }
  auto sizes = checkSizes(ctx, pattern, args);
  if (!sizes)
    return sizes.error();

  EinsumInfo info;
  // Ellipsis dims broadcast right-aligned across operands, as in numpy.
  std::vector<SideMatch> matches;
  size_t rank = 0;
  for (unsigned i = 0; i < inputs.size(); ++i) {
    auto match = matchSide(ctx, pattern.inputs[i], inputs[i], i, *sizes);
    if (!match) {
      ShapeError e = match.error();
      if (e.anchor == ShapeError::Anchor::Op)
        e = ShapeError::atOperand(e.message, i);
      return e;
    }
    rank = std::max(rank, match->ellipsis.size());
    matches.push_back(*match);
  }
  auto isOne = [](const Dim &d) {
    return !d.isPack() && d.size.constantValue() == Int(1);
  };
  Shape ellipsis(rank, Dim::ofSize(SizeExpr::constant(1)));
  for (unsigned i = 0; i < matches.size(); ++i) {
    const Shape &mine = matches[i].ellipsis;
    size_t shift = rank - mine.size();
    for (size_t k = 0; k < mine.size(); ++k) {
      Dim &have = ellipsis[shift + k];
      const Dim &dim = mine[k];
      if (isOne(dim))
        continue;
      if (isOne(have)) {
        have = dim;
        continue;
      }
      if (dim.isPack() || have.isPack()) {
        if (dim.pack == have.pack)
          continue;
        // An anonymous `...` of unknown rank: compared at entry, once the
        // inputs give its rank (numpy broadcasts the dims of `...`).
        if (!isAnonymousDim(dim) && !isAnonymousDim(have))
          return ShapeError::atOperand("'...' of operand " + std::to_string(i) +
                                           " (" + dim.str() +
                                           ") does not match " + have.str(),
                                       i);
        ctx.requireEqualAtEntry(sizeOrPack(have), sizeOrPack(dim),
                                "'...' dims");
        if (isAnonymousDim(have) && !isAnonymousDim(dim))
          have = dim;
        continue;
      }
      auto ok = ctx.unify(have.size, dim.size, "'...' dims");
      if (!ok)
        return ShapeError::atOperand(ok.error().message, i);
      // Equal (or equal by an entry check): the result keeps a name over an
      // anonymous size.
      if (isAnonymousDim(have) && !isAnonymousDim(dim))
        have = dim;
    }
  }
  for (unsigned i = 0; i < matches.size(); ++i) {
    const Shape &mine = matches[i].ellipsis;
    size_t shift = rank - mine.size();
    // Ellipsis axes are renumbered right-aligned to the widest ellipsis; a
    // size-1 dim broadcast against a larger one is not an axis here.
    auto renumber = [&](const std::string &ax) -> std::optional<std::string> {
      if (ax.rfind("...", 0) != 0)
        return ax;
      size_t k = std::stoul(ax.substr(3));
      if (isOne(mine[k]) && !isOne(ellipsis[shift + k]))
        return std::nullopt;
      return ellipsisAxis(shift + k);
    };
    std::vector<std::string> axes;
    for (auto &ax : matches[i].axes)
      if (auto r = renumber(ax))
        axes.push_back(*r);
    std::vector<std::vector<std::string>> groups;
    for (auto &g : matches[i].groups) {
      groups.emplace_back();
      for (auto &ax : g)
        if (auto r = renumber(ax))
          groups.back().push_back(*r);
    }
    info.operandAxes.push_back(axes);
    info.operandGroups.push_back(groups);
  }
  if (!ellipsis.empty() && !pattern.output.hasEllipsis()) {
    const PatternAxis *dots = nullptr;
    for (auto &in : pattern.inputs)
      if (!dots)
        dots = findEllipsis(in);
    return ShapeError::atPattern(
        "'...' covers " + std::to_string(ellipsis.size()) +
            " dim(s) in the inputs but is missing from the output of einsum",
        dots->offset, 3);
  }
  for (size_t k = 0; k < ellipsis.size(); ++k)
    (*sizes)[ellipsisAxis(k)] = ellipsis[k].isPack()
                                    ? SizeExpr::symbol(ellipsis[k].pack)
                                    : ellipsis[k].size;
  info.result = buildOutput(ctx, pattern.output, *sizes, ellipsis,
                            &info.outputGroups, &info.outputAxes);
  info.axisSizes = *sizes;
  return info;
}

Expected<Shape> inferEinsum(InferContext &ctx, const Pattern &pattern,
                            const std::vector<Shape> &inputs,
                            const std::vector<SizeArg> &sizes) {
  auto info = analyzeEinsum(ctx, pattern, inputs, sizes);
  if (!info)
    return info.error();
  return info->result;
}

//===----------------------------------------------------------------------===//
// pack / unpack
//===----------------------------------------------------------------------===//

namespace {
struct PackLayout {
  size_t before = 0, after = 0;
};
PackLayout packLayout(const Pattern &pattern) {
  const PatternSide &side = pattern.inputs[0];
  size_t star = side.starIndex();
  return {star, side.groups.size() - star - 1};
}
} // namespace

Expected<PackResult> inferPack(InferContext &ctx, const Pattern &pattern,
                               const std::vector<Shape> &inputs) {
  if (pattern.inputs.size() != 1 || pattern.hasArrow)
    return ShapeError::atOp("expected a pack pattern such as 'b * c'");
  if (inputs.empty())
    return ShapeError::atOp("pack needs at least one tensor");
  PackLayout layout = packLayout(pattern);
  const PatternSide &side = pattern.inputs[0];
  PackResult result;
  SizeMap sizes;
  SizeExpr total;
  for (unsigned i = 0; i < inputs.size(); ++i) {
    Shape shape = ctx.expand(inputs[i]);
    if (shape.size() < layout.before + layout.after)
      return ShapeError::atOperand(
          "pack pattern '" + side.str() + "' needs at least " +
              std::to_string(layout.before + layout.after) +
              " dims, but the tensor has " + std::to_string(shape.size()),
          i);
    for (size_t k = 0; k < layout.before + layout.after; ++k) {
      size_t pos = k < layout.before
                       ? k
                       : shape.size() - (layout.before + layout.after - k);
      const PatternGroup &g = side.groups[k < layout.before ? k : k + 1];
      const Dim &dim = shape[pos];
      if (dim.isPack())
        return ShapeError::atOperand("cannot match axis '" + g.axes[0].name +
                                         "' against variadic " + dim.str(),
                                     i);
      auto it = sizes.find(g.axes[0].name);
      if (it == sizes.end()) {
        sizes[g.axes[0].name] = dim.size;
        continue;
      }
      auto ok =
          ctx.unify(it->second, dim.size, "axis '" + g.axes[0].name + "'");
      if (!ok)
        return withAnchor(ok.error(), g.axes[0]);
    }
    Shape part(shape.begin() + layout.before, shape.end() - layout.after);
    total = total + numElements(part);
    result.parts.push_back(part);
  }
  for (size_t k = 0; k < side.groups.size(); ++k) {
    const PatternAxis &a = side.groups[k].axes[0];
    result.packed.push_back(Dim::ofSize(
        a.kind == PatternAxis::Kind::Star ? total : sizes.at(a.name)));
  }
  return result;
}

Expected<std::vector<Shape>> inferUnpack(InferContext &ctx,
                                         const Pattern &pattern,
                                         const Shape &input,
                                         const std::vector<Shape> &parts) {
  if (pattern.inputs.size() != 1 || pattern.hasArrow)
    return ShapeError::atOp("expected a pack pattern such as 'b * c'");
  PackLayout layout = packLayout(pattern);
  Shape shape = ctx.expand(input);
  size_t rank = layout.before + 1 + layout.after;
  if (shape.size() != rank)
    return ShapeError::atOperand("unpack pattern '" + pattern.inputs[0].str() +
                                     "' expects " + std::to_string(rank) +
                                     " dims, but the tensor has " +
                                     std::to_string(shape.size()),
                                 0);
  const Dim &starDim = shape[layout.before];
  if (starDim.isPack())
    return ShapeError::atOperand("the '*' dim cannot be variadic", 0);
  SizeExpr total;
  for (auto &p : parts)
    total = total + numElements(p);
  auto ok = ctx.unify(total, starDim.size, "the '*' dim of unpack");
  if (!ok) {
    ShapeError e = ok.error();
    e.anchor = ShapeError::Anchor::Operand;
    return e;
  }
  std::vector<Shape> out;
  for (auto &p : parts) {
    Shape s(shape.begin(), shape.begin() + layout.before);
    s.insert(s.end(), p.begin(), p.end());
    s.insert(s.end(), shape.end() - layout.after, shape.end());
    out.push_back(s);
  }
  return out;
}

} // namespace ein
