// Tensors built in __init__ (`self.W = nn.Parameter(torch.randn(d_in, d_out)
// / d_in**0.5)`): recognised there by their creation call, and read by the
// other methods as a tensor of those sizes, in __init__'s names.
#include "Interpreter.h"

#include <set>

namespace ein::pycheck {

// The creation functions whose positional arguments are the sizes (or one
// tuple or list of them), and torch.full, whose first argument is.
static bool sizedCreation(const std::string &q) {
  static const std::set<std::string> names = {
      "torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty"};
  return names.count(q) > 0;
}

// The size arguments of a creation call as written: its positional
// arguments, or the items of a lone tuple or list literal.
static std::vector<Node> sizeNodes(Node call, const std::string &q) {
  std::vector<Node> a = FunctionInterp::args(call);
  if (q == "torch.full")
    a.resize(std::min<size_t>(a.size(), 1));
  if (a.size() == 1 && (isa(a[0], "Tuple") || isa(a[0], "List")))
    return children(a[0], "elts");
  return a;
}

// Whether the sizes of a creation call are read: two or more positional
// arguments are each an integer (torch refuses anything else there); a lone
// one must be a tuple or list literal, or an integer __init__ knows, since
// a name may hold a whole shape.
static bool sizesRead(FunctionInterp &f, Node call, const std::string &q) {
  std::vector<Node> a = FunctionInterp::args(call);
  if (a.empty() || FunctionInterp::keyword(call, "size") ||
      FunctionInterp::keyword(call, "out") ||
      (q == "torch.full" && !isa(a[0], "Tuple") && !isa(a[0], "List")))
    return false;
  if (a.size() == 1 && !isa(a[0], "Tuple") && !isa(a[0], "List")) {
    Node n = a[0];
    AbsVal v =
        isa(n, "Name") ? f.lookup(stringField(n, "id")) : AbsVal::unknown();
    if (!intConstant(n) && v.kind != AbsVal::Kind::Size &&
        v.kind != AbsVal::Kind::Number)
      return false;
  }
  std::vector<Node> sizes = sizeNodes(call, q);
  return !sizes.empty() && std::none_of(sizes.begin(), sizes.end(), [](Node n) {
    return isa(n, "Starred") || (isNumberLiteral(n) && !intConstant(n));
  });
}

// Whether `e` is a Python number, read without evaluating it: a literal, a
// name bound to a number, one of the creation's own sizes (`cfg.d_model`
// given as a size is an integer), and arithmetic or math.sqrt of those.
static bool isScalar(FunctionInterp &f, Node e,
                     const std::set<std::string> &sizes) {
  if (isNumberLiteral(e) || sizes.count(f.textOf(e)))
    return true;
  if (isa(e, "Name")) {
    AbsVal v = f.lookup(stringField(e, "id"));
    return v.kind == AbsVal::Kind::Size || v.kind == AbsVal::Kind::Number;
  }
  if (isa(e, "UnaryOp"))
    return isScalar(f, child(e, "operand"), sizes);
  if (isa(e, "BinOp"))
    return isScalar(f, child(e, "left"), sizes) &&
           isScalar(f, child(e, "right"), sizes);
  if (isa(e, "Call") && children(e, "keywords").empty() &&
      FunctionInterp::args(e).size() == 1) {
    std::string q = f.file().names.qualified(child(e, "func"));
    if (q == "math.sqrt" || q == "float" || q == "int")
      return isScalar(f, FunctionInterp::args(e)[0], sizes);
  }
  return false;
}

// The creation call under `e`, through nn.Parameter, nn.init.X_ (which
// fills its argument in place and returns it) and scaling by a number;
// null when `e` is anything else.
static Node creationUnder(FunctionInterp &f, Node e,
                          std::set<std::string> &sizes) {
  if (isa(e, "BinOp")) {
    std::string op = nodeType(child(e, "op"));
    Node l = child(e, "left"), r = child(e, "right");
    if (op != "Mult" && op != "Div")
      return nullptr;
    // The tensor's side first: its sizes make `x / d**0.5` a scalar.
    if (Node c = creationUnder(f, l, sizes))
      return isScalar(f, r, sizes) ? c : nullptr;
    if (op == "Mult")
      if (Node c = creationUnder(f, r, sizes))
        return isScalar(f, l, sizes) ? c : nullptr;
    return nullptr;
  }
  if (!isa(e, "Call"))
    return nullptr;
  std::string q = f.file().names.qualified(child(e, "func"));
  std::vector<Node> a = FunctionInterp::args(e);
  bool init = q.rfind("torch.nn.init.", 0) == 0 && q.back() == '_';
  if ((q == "torch.nn.Parameter" || init) && !a.empty())
    return creationUnder(f, a[0], sizes);
  if (!sizedCreation(q) && q != "torch.full")
    return nullptr;
  if (!sizesRead(f, e, q))
    return nullptr;
  for (Node n : sizeNodes(e, q))
    sizes.insert(f.textOf(n));
  return e;
}

std::optional<AbsVal> FunctionInterp::initParameter(Node value) {
  std::set<std::string> sizes;
  Node c = creationUnder(*this, value, sizes);
  if (!c)
    return std::nullopt;
  return AbsVal::built(AbsVal::Kind::Parameter, c);
}

AbsVal FunctionInterp::parameterTensor(const AbsVal &param) {
  Node c = param.layer;
  std::string q = cx.names.qualified(child(c, "func"));
  Shape shape;
  for (Node n : sizeNodes(c, q))
    shape.push_back(Dim::ofSize(initSize(n)));
  return newTensor(shape);
}

} // namespace ein::pycheck
