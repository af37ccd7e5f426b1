// Runs python3's `ast` on a file and reads the JSON it prints: the faithful
// reader of Python that `einc check model.py` starts from.
#include "ein/PyCheck/PyAst.h"

#include "ein/Support/Process.h"

#include <fmt/format.h>

#include <cstdlib>

namespace ein::pycheck {
namespace {

// Prints {"module": TREE} or {"syntax_error": MESSAGE, "lineno", "col"} to
// argv[2]. Every node keeps its type (`_t`) and its span; a Constant's value
// is tagged with its kind, since JSON cannot tell 1 from 1.0 or a str from
// bytes. The source is decoded first (its coding cookie honoured): then
// SyntaxError's offset counts characters of its line, turned into bytes here
// as ast's columns and ein's SourceLoc count them.
constexpr const char *kAstScript = R"PY(
import ast, importlib.util, json, sys
sys.setrecursionlimit(100000)
def const(v):
    if v is None: return {"k": "none"}
    if isinstance(v, bool): return {"k": "bool", "v": v}
    if isinstance(v, int): return {"k": "int", "v": str(v)}
    if isinstance(v, float): return {"k": "float", "v": repr(v)}
    if isinstance(v, str): return {"k": "str", "v": v}
    if v is Ellipsis: return {"k": "ellipsis"}
    return {"k": "other"}
def enc(n, depth=0):
    if isinstance(n, ast.AST):
        # Deeper than anyone writes by hand: an opaque node, which the
        # checker reads as unknown (and einc's own readers stay shallow).
        d = {"_t": type(n).__name__ if depth < 400 else "TooDeep"}
        for a in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            v = getattr(n, a, None)
            if v is not None: d[a] = v
        if depth >= 400: return d
        for f, v in ast.iter_fields(n):
            if isinstance(n, ast.Constant) and f == "value": d[f] = const(v)
            elif f not in ("kind", "type_comment"): d[f] = enc(v, depth + 1)
        return d
    if isinstance(n, list): return [enc(x, depth) for x in n]
    if n is None or isinstance(n, (str, bool, int)): return n
    return repr(n)
src, name, out = sys.argv[1], sys.argv[2], sys.argv[3]
with open(src, "rb") as f: data = f.read()
try:
    res = {"module": enc(ast.parse(importlib.util.decode_source(data), filename=name))}
except SyntaxError as e:
    col = e.offset or 0
    if e.text is not None and col > 0:
        col = len(e.text[:col - 1].encode("utf-8", "surrogatepass")) + 1
    res = {"syntax_error": e.msg, "lineno": e.lineno or 0, "col": col}
except (ValueError, UnicodeDecodeError) as e:
    res = {"syntax_error": str(e), "lineno": 0, "col": 0}
# json.dumps, not json.dump: dump's pure-Python encoder is quadratic in depth.
with open(out, "w", encoding="utf-8") as f: f.write(json.dumps(res))
)PY";

} // namespace

std::string pythonInterpreter() {
  const char *env = std::getenv("EIN_PYTHON");
  return env && *env ? env : "python3";
}

ErrorOr<llvm::json::Value> readPythonAst(const SourceFile &file,
                                         const std::string &python) {
  const std::string &path = file.path;
  std::string interpreter = python.empty() ? pythonInterpreter() : python;
  TempDir dir("einc-pycheck");
  if (dir.path.empty())
    return Error::program("cannot create a temporary directory to run " +
                          interpreter + " in");
  // Python parses the very bytes the diagnostics quote (the text read
  // once, or given as a string), not the file again.
  std::string script = dir.file("ast_json.py"), source = dir.file("source.py"),
              json = dir.file("ast.json"), log = dir.file("log");
  if (!writeFileBytes(script, kAstScript,
                      std::char_traits<char>::length(kAstScript)))
    return Error::program("cannot write " + script);
  if (!writeFileBytes(source, file.text.data(), file.text.size()))
    return Error::program("cannot write " + source);
  int status = runProcess({interpreter, script, source, path, json}, log);
  std::string text = readFileText(json);
  if (status != 0 || text.empty()) {
    std::string why =
        status == -1
            ? "it could not be started"
            : fmt::format("it failed:\n{}", lastLines(readFileText(log), 10));
    return Error::usage(fmt::format(
        "checking a Python file runs '{}' (Python 3.8 or later: set "
        "EIN_PYTHON to choose another) to read it with Python's ast, and {}",
        interpreter, why));
  }
  auto parsed = llvm::json::parse(text);
  if (!parsed)
    return Error::program("cannot read the ast that " + interpreter +
                          " printed: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return Error::program("the ast that " + interpreter +
                          " printed is not an object");
  if (auto message = root->getString("syntax_error")) {
    unsigned line = root->getInteger("lineno").value_or(0);
    unsigned col = root->getInteger("col").value_or(0);
    return Error::at(ErrorKind::Program, path, line,
                     line ? std::max(col, 1u) : 0, message->str());
  }
  if (!root->getObject("module"))
    return Error::program("the ast that " + interpreter +
                          " printed has no module");
  return std::move(*parsed);
}

std::string nodeType(Node n) {
  if (!n)
    return "";
  auto t = n->getString("_t");
  return t ? t->str() : "";
}

bool isa(Node n, const char *type) {
  if (!n)
    return false;
  auto t = n->getString("_t");
  return t && *t == type;
}

Node child(Node n, const char *field) {
  return n ? n->getObject(field) : nullptr;
}

std::vector<Node> children(Node n, const char *field) {
  std::vector<Node> out;
  if (!n)
    return out;
  if (auto *list = n->getArray(field))
    for (auto &v : *list)
      out.push_back(v.getAsObject());
  return out;
}

std::string stringField(Node n, const char *field) {
  if (!n)
    return "";
  auto s = n->getString(field);
  return s ? s->str() : "";
}

SourceLoc nodeLoc(Node n) {
  if (!n)
    return {};
  return {static_cast<unsigned>(n->getInteger("lineno").value_or(0)),
          static_cast<unsigned>(n->getInteger("col_offset").value_or(0)) + 1};
}

unsigned nodeLength(Node n, const SourceFile &file) {
  if (!n)
    return 1;
  auto line = n->getInteger("lineno"), endLine = n->getInteger("end_lineno");
  auto col = n->getInteger("col_offset"),
       endCol = n->getInteger("end_col_offset");
  if (!line || !col)
    return 1;
  long long end = endLine && *endLine == *line && endCol
                      ? *endCol
                      : static_cast<long long>(
                            file.lineText(static_cast<unsigned>(*line)).size());
  return static_cast<unsigned>(std::max(1LL, end - *col));
}

static const llvm::json::Object *constantValue(Node n) {
  return isa(n, "Constant") ? n->getObject("value") : nullptr;
}

std::optional<std::string> stringConstant(Node n) {
  auto *v = constantValue(n);
  if (!v || v->getString("k") != llvm::StringRef("str"))
    return std::nullopt;
  return v->getString("v")->str();
}

std::optional<long long> intConstant(Node n) {
  bool negative = false;
  if (isa(n, "UnaryOp") && isa(child(n, "op"), "USub")) {
    negative = true;
    n = child(n, "operand");
  }
  auto *v = constantValue(n);
  if (!v || v->getString("k") != llvm::StringRef("int"))
    return std::nullopt;
  long long value = 0;
  if (llvm::StringRef(*v->getString("v")).getAsInteger(10, value))
    return std::nullopt; // beyond 64 bits: not a size
  return negative ? -value : value;
}

std::optional<SourceLoc> stringContentLoc(Node n, const SourceFile &file) {
  auto value = stringConstant(n);
  if (!value || n->getInteger("end_lineno") != n->getInteger("lineno"))
    return std::nullopt;
  SourceLoc loc = nodeLoc(n);
  std::string line = file.lineText(loc.line);
  size_t start = loc.col - 1, length = nodeLength(n, file);
  if (start + length > line.size() || length != value->size() + 2)
    return std::nullopt;
  std::string written = line.substr(start, length);
  char quote = written.front();
  if ((quote != '"' && quote != '\'') || written.back() != quote ||
      written.substr(1, value->size()) != *value)
    return std::nullopt;
  return loc.advanced(1);
}

bool isNumberLiteral(Node n) {
  if (isa(n, "UnaryOp") &&
      (isa(child(n, "op"), "USub") || isa(child(n, "op"), "UAdd")))
    n = child(n, "operand");
  auto *v = constantValue(n);
  if (!v)
    return false;
  auto k = v->getString("k");
  return k && (*k == "int" || *k == "float");
}

} // namespace ein::pycheck
