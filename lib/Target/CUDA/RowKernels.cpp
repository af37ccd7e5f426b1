// The CUDA target's row kernels: a chain of reductions along the last axis
// and the elementwise ops that read them and the row (softmax, LayerNorm,
// RMSNorm, a masked softmax) as one ein_rows functor, so that the row is
// read once or a few times and written once, with no temporaries between
// (docs/cuda.md, "Fusion").
#include "FunctionEmitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein {
namespace cuda {

namespace {

/// How a value sits in the row space `s` (the root's shape, its last dim
/// the row): with `s` itself (Row), one value per row with size 1 along the
/// row (RowScalar) or without the row dim (Dropped: broadcast by name, as
/// `x - m` of `b h s t` and `b h s`), or neither.
enum class RowClass { None, Row, RowScalar, Dropped };

RowClass rowClass(EinTensorType t, const Shape &s) {
  const Shape &shape = t.getShape();
  if (s.empty())
    return RowClass::None;
  if (shape.size() + 1 == s.size())
    return std::equal(shape.begin(), shape.end(), s.begin()) ? RowClass::Dropped
                                                             : RowClass::None;
  if (shape.size() != s.size())
    return RowClass::None;
  for (size_t d = 0; d + 1 < s.size(); ++d)
    if (!(shape[d] == s[d]))
      return RowClass::None;
  if (shape.back() == s.back())
    return RowClass::Row;
  auto one =
      shape.back().isPack() ? std::nullopt : shape.back().size.constantValue();
  return one && *one == 1 ? RowClass::RowScalar : RowClass::None;
}

/// Whether the first `q` dims of a transform's input are its output's, as
/// they are (the same elementary axes in the same order).
bool keepsLeading(const TransformInfo &info, size_t q) {
  if (info.inputGroups.size() < q || info.outputGroups.size() < q)
    return false;
  for (size_t d = 0; d < q; ++d)
    if (info.inputGroups[d] != info.outputGroups[d])
      return false;
  return true;
}

/// A float reduction of the row space `s` along its last dim alone: into
/// size 1 there (kept), or without that dim (then `kept` is false: read by
/// name, or through a rearrange appending the 1).
bool isRowReduction(mlir::Operation *op, const Shape &s, bool &kept) {
  auto reduce = mlir::dyn_cast<ReduceOp>(op);
  if (!reduce || rowClass(tensorType(reduce.getOperand()), s) != RowClass::Row)
    return false;
  EinTensorType rt = tensorType(reduce.getResult());
  auto info = getTransformInfo(op);
  size_t q = s.size() - 1;
  if (!isFloat(rt.getDType()) || !info ||
      info->inputGroups.size() != s.size() || !keepsLeading(*info, q))
    return false;
  kept = info->outputGroups.size() == s.size();
  if (kept)
    return info->outputGroups[q].empty() &&
           rowClass(rt, s) == RowClass::RowScalar;
  return info->outputGroups.size() == q && rowClass(rt, s) == RowClass::Dropped;
}

/// A rearrange appending a size-1 row dim to a reduction that dropped it
/// (`r -> r 1`): the reduction's value, read per row.
bool isRowAlias(mlir::Operation *op, const Shape &s) {
  auto rearrange = mlir::dyn_cast<RearrangeOp>(op);
  if (!rearrange)
    return false;
  mlir::Operation *def = rearrange->getOperand(0).getDefiningOp();
  bool kept = true;
  auto info = getTransformInfo(op);
  size_t q = s.size() - 1;
  return def && isRowReduction(def, s, kept) && !kept && info &&
         info->inputGroups.size() == q &&
         info->outputGroups.size() == s.size() && keepsLeading(*info, q) &&
         info->outputGroups[q].empty() &&
         rowClass(tensorType(rearrange->getResult(0)), s) ==
             RowClass::RowScalar;
}

} // namespace

std::vector<int> FunctionEmitter::rowAlignment(const RowGroup &group,
                                               mlir::Operation *op,
                                               unsigned operand) {
  std::vector<int> al = alignment(op, operand);
  // A member of size 1 along the row is the same for the whole row.
  if (group.rowScalar.count(op))
    for (int &a : al)
      if (a == static_cast<int>(group.rank) - 1)
        a = -1;
  return al;
}

/// The row kernel rooted at the elementwise op `root`, if there is one:
/// the ops it reads, transitively, that are last-axis reductions of its
/// shape (its stages), elementwise ops of its shape or of one value per row,
/// and rearranges appending the row dim to a reduction; then pruned until
/// every one of them is read only inside the group (and in place, but for
/// a value per row broadcast along the row) and not returned. At least one
/// reduction must remain, all accumulating in one type. What is left out is
/// an input of the functor, computed as before.
std::optional<FunctionEmitter::RowGroup>
FunctionEmitter::rowGroupAt(mlir::Operation *root) {
  if (!isElementwise(root) || mlir::isa<ConstantOp>(root))
    return std::nullopt;
  EinTensorType rt = tensorType(root->getResult(0));
  const Shape &s = rt.getShape();
  if (s.empty() ||
      std::any_of(s.begin(), s.end(), [](const Dim &d) { return d.isPack(); }))
    return std::nullopt;
  const int last = static_cast<int>(s.size()) - 1;
  auto claimed = [&](mlir::Operation *op) {
    return inEpilogue.count(op) || inRows.count(op) || rowGroups.count(op) ||
           directOutput.count(op->getResult(0).getAsOpaquePointer());
  };
  std::set<mlir::Operation *> group = {root};
  std::vector<mlir::Operation *> work = {root};
  while (!work.empty()) {
    mlir::Operation *op = work.back();
    work.pop_back();
    for (mlir::Value v : op->getOperands()) {
      mlir::Operation *def = v.getDefiningOp();
      if (!def || group.count(def) || claimed(def) || def->getNumResults() != 1)
        continue;
      bool kept = true;
      bool take =
          isRowReduction(def, s, kept) || isRowAlias(def, s) ||
          (isElementwise(def) && !mlir::isa<ConstantOp>(def) &&
           rowClass(tensorType(def->getResult(0)), s) != RowClass::None);
      if (take) {
        group.insert(def);
        work.push_back(def);
      }
    }
  }
  // Whether `user` (in the group) reads `op` as the row kernel computes it.
  auto readsAsRows = [&](mlir::Operation *user, unsigned i,
                         mlir::Operation *op) {
    if (!isElementwise(user))
      return true; // a reduction reads its row, an alias its reduction
    EinTensorType t = tensorType(op->getResult(0));
    RowClass c = rowClass(t, s);
    if (c == RowClass::None)
      return false;
    std::vector<int> al = alignment(user, i);
    for (int d = 0; d < last && d < static_cast<int>(al.size()); ++d) {
      auto one = t.getShape()[d].size.constantValue();
      if (al[d] != d && !(al[d] == -1 && one && *one == 1))
        return false;
    }
    if (c == RowClass::Dropped)
      return true;
    if (c == RowClass::Row)
      return al[last] == last &&
             rowClass(tensorType(user->getResult(0)), s) == RowClass::Row;
    return al[last] == last || al[last] == -1;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (mlir::Operation *op : group) {
      if (op == root)
        continue;
      bool inside = !mlir::isa<RearrangeOp>(op) ||
                    group.count(op->getOperand(0).getDefiningOp());
      for (mlir::OpOperand &use : op->getResult(0).getUses())
        inside = inside && group.count(use.getOwner()) &&
                 readsAsRows(use.getOwner(), use.getOperandNumber(), op);
      if (!inside) {
        group.erase(op);
        changed = true;
        break;
      }
    }
  }
  RowGroup g;
  g.root = root;
  g.rank = s.size();
  // The stages in program order (a reduction reads only earlier ones).
  for (mlir::Operation &op : func.getBody().front().without_terminator())
    if (group.count(&op) && mlir::isa<ReduceOp>(&op))
      g.stages.push_back(&op);
  if (g.stages.empty())
    return std::nullopt;
  int stage = 0;
  std::map<const void *, int> means; // a mean stage by the row it reads
  for (mlir::Operation *op : g.stages) {
    auto reduce = mlir::cast<ReduceOp>(op);
    DType t = tensorType(reduce.getResult()).getDType();
    if (!g.acc.empty() && g.acc != accumulatorType(t))
      return std::nullopt; // one accumulator type per kernel
    g.acc = accumulatorType(t);
    ReduceKind kind = toReduceKind(reduce.getKind());
    const void *row = reduce.getOperand().getAsOpaquePointer();
    if (kind == ReduceKind::Mean)
      means.emplace(row, stage);
    // var is two stages, the mean (unless a mean of the same row is one)
    // then the mean squared deviation from it.
    if (!runtimeReduceKind(kind)) {
      auto mean = means.find(row);
      if (mean != means.end())
        g.varMean[op] = mean->second;
      else
        ++stage;
    }
    g.results[op] = fmt::format("ein_cvt<{}>(r[{}])", storageType(t), stage++);
  }
  for (mlir::Operation *op : group) {
    if (op == root || mlir::isa<ReduceOp>(op))
      continue;
    if (mlir::isa<RearrangeOp>(op)) {
      g.results[op] = g.results.at(op->getOperand(0).getDefiningOp());
      continue;
    }
    g.members.insert(op);
    if (rowClass(tensorType(op->getResult(0)), s) == RowClass::RowScalar)
      g.rowScalar.insert(op);
  }
  // Values per row of a float dtype the accumulator holds exactly, from
  // results, constants and each other.
  std::set<mlir::Operation *> perRow;
  for (mlir::Operation &o : func.getBody().front().without_terminator()) {
    if (!g.members.count(&o))
      continue;
    EinTensorType t = tensorType(o.getResult(0));
    bool fits = isFloat(t.getDType()) &&
                (t.getDType() != DType::F64 || g.acc == "double") &&
                rowClass(t, s) != RowClass::Row;
    for (mlir::Value v : o.getOperands()) {
      mlir::Operation *def = v.getDefiningOp();
      fits = fits && def &&
             (mlir::isa<ConstantOp>(def) || g.results.count(def) ||
              perRow.count(def));
    }
    if (fits) {
      perRow.insert(&o);
      g.perRow.push_back(&o);
    }
  }
  return g;
}

/// Chooses the row kernels: walking backwards, each elementwise op not yet
/// in one roots the group rowGroupAt finds. Before planFusion, which leaves
/// their ops alone; `--no-fusion` makes none.
void FunctionEmitter::planRows() {
  if (!options.fusion)
    return;
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : func.getBody().front().without_terminator())
    ops.push_back(&op);
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    if (inRows.count(*it) || inEpilogue.count(*it))
      continue;
    auto group = rowGroupAt(*it);
    if (!group)
      continue;
    for (mlir::Operation *op : group->members)
      inRows[op] = *it;
    for (auto &entry : group->results)
      inRows[entry.first] = *it;
    rowGroups[*it] = std::move(*group);
  }
}

/// One functor: per stage `Acc operator()(EinStage<k>, const Acc *r, ...)`
/// giving the element its reduction combines, and `operator()(const Acc
/// *r, ...)` the root's element; the inputs are the group's leaves, picked
/// into the root's index space.
void FunctionEmitter::emitRowKernel(const RowGroup &group) {
  mlir::Operation *root = group.root;
  mlir::Value result = root->getResult(0);
  EinTensorType rt = tensorType(result);
  struct Method {
    std::string tag, type, value;
    FunctorBody body;
  };
  std::vector<Method> methods;
  std::vector<std::string> kinds;
  std::vector<std::pair<mlir::Value, std::vector<int>>> leaves;
  auto method = [&](std::string tag, std::string type) -> Method & {
    methods.push_back(Method{std::move(tag), std::move(type), "", {}});
    methods.back().body.rows = &group;
    methods.back().body.leaves = leaves;
    return methods.back();
  };
  for (mlir::Operation *op : group.stages) {
    ReduceKind kind = toReduceKind(mlir::cast<ReduceOp>(op).getKind());
    const char *runtime = runtimeReduceKind(kind);
    auto shared = group.varMean.find(op);
    if (shared == group.varMean.end()) {
      Method &m = method(fmt::format("EinStage<{}>, ", kinds.size()), "Acc");
      m.value = fmt::format("ein_cvt<Acc>({})", operandText(op, 0, m.body));
      leaves = m.body.leaves;
      kinds.push_back(runtime ? runtime : "EIN_REDUCE_MEAN");
    }
    if (runtime)
      continue;
    // var: the mean of the squared deviations from the mean (in Acc, as
    // ein_reduce_var).
    size_t mean =
        shared == group.varMean.end() ? kinds.size() - 1 : shared->second;
    Method &d = method(fmt::format("EinStage<{}>, ", kinds.size()), "Acc");
    d.body.lets.push_back(fmt::format("const Acc d = ein_cvt<Acc>({}) - r[{}];",
                                      operandText(op, 0, d.body), mean));
    d.body.readsRows = true;
    d.value = "d * d";
    leaves = d.body.leaves;
    kinds.push_back("EIN_REDUCE_MEAN");
  }
  // The values per row, each into the next slot of r after the stages',
  // and read from there by the output.
  RowGroup late = group;
  std::string values;
  for (mlir::Operation *op : group.perRow) {
    FunctorBody body;
    body.rows = &late;
    std::string value = expression(op, body);
    size_t slot = kinds.size() + late.results.size() - group.results.size();
    fmt::format_to(std::back_inserter(values), "    {{\n");
    for (auto &l : body.lets)
      values += "      " + l + "\n";
    fmt::format_to(std::back_inserter(values),
                   "      r[{}] = ein_cvt<Acc>({});\n    }}\n", slot, value);
    late.members.erase(op);
    late.results[op] =
        fmt::format("ein_cvt<{}>(r[{}])",
                    storageType(tensorType(op->getResult(0)).getDType()), slot);
  }
  Method &o = method("", storageType(rt.getDType()));
  o.body.rows = &late;
  o.value = expression(root, o.body);
  leaves = o.body.leaves;

  size_t rank = rt.getShape().size();
  std::string z = sizeArray(shapeSizes(rt, root));
  FunctorBody all;
  all.leaves = leaves;
  std::vector<std::string> types, views;
  functorInputs(all, rank, z, root, types, views);
  if (views.empty())
    return fail(root, "a row kernel without a tensor input");
  std::string functor =
      fmt::format("ein_{}_rows{}", cName(fn.name), functorCount++);
  std::string text = fmt::format(
      "struct {} {{\n  using Acc = {};\n  static constexpr int stages = {};\n"
      "  static constexpr EinReduceKind kinds[{}] = {{{}}};\n"
      "  static constexpr int values = {};\n"
      "  EIN_HD void operator()(EinRowValues, Acc *{}) const {{\n{}  }}\n",
      functor, group.acc, kinds.size(), kinds.size(), fmt::join(kinds, ", "),
      group.perRow.size(), group.perRow.empty() ? "" : "r", values);
  for (Method &m : methods) {
    std::vector<std::string> params;
    for (size_t k = 0; k < types.size(); ++k)
      params.push_back(m.body.used.count(k) ? fmt::format("{} a{}", types[k], k)
                                            : types[k]);
    std::string lets;
    for (auto &l : m.body.lets)
      lets += "    " + l + "\n";
    fmt::format_to(std::back_inserter(text),
                   "  EIN_HD {} operator()({}const Acc *{}, {}) const {{\n"
                   "{}    return {};\n  }}\n",
                   m.type, m.tag, m.body.readsRows ? "r" : "",
                   fmt::join(params, ", "), lets, m.value);
  }
  functors += text + "};\n";
  int owner;
  std::string w = destination(result, owner);
  fmt::format_to(out(), "  ein_rows(stream, {}(), {}, {});\n", functor, w,
                 fmt::join(views, ", "));
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

} // namespace cuda
} // namespace ein
