// Recursive-descent parser for the .ein language (grammar in docs/language.md).
#include "ein/Syntax/Parser.h"

#include <algorithm>
#include <optional>

namespace ein {

namespace {

class Parser {
public:
  Parser(std::vector<Token> tokens, DiagnosticEngine &diags)
      : toks(std::move(tokens)), diags(diags) {}

  Module parseModule() {
    Module m;
    skipDocstring();
    while (!at(TokenKind::Eof)) {
      if (accept(TokenKind::Newline))
        continue;
      size_t errorsBefore = diags.errorCount();
      if (pythonImport() || bareString()) {
      } else if (atName("dim")) {
        if (auto d = parseDim())
          m.dims.push_back(std::move(*d));
      } else if (atName("def")) {
        if (auto f = parseFunction())
          m.functions.push_back(std::move(*f));
      } else if (atName("from")) {
        if (auto i = parseImport())
          m.imports.push_back(std::move(*i));
      } else if (atName("mesh")) {
        if (auto d = parseMesh())
          m.meshes.push_back(std::move(*d));
      } else if (atName("shard")) {
        if (auto r = parseShardRule())
          m.shardRules.push_back(std::move(*r));
      } else {
        error(peek(), "expected 'def', 'dim', 'from', 'mesh' or 'shard' at "
                      "the top level, found " +
                          describe(peek()));
      }
      if (diags.errorCount() != errorsBefore)
        return m; // one syntax error at a time: later ones are usually noise
    }
    return m;
  }

private:
  std::vector<Token> toks;
  size_t pos = 0;
  DiagnosticEngine &diags;
  /// Depth of the expression tree being built: bounded so that deeply
  /// nested input gets a diagnostic instead of exhausting the stack.
  unsigned depth = 0;
  static constexpr unsigned kMaxDepth = 500;

  /// A docstring: a string alone on the first line of a file or a
  /// function body. It is accepted, as in Python, and ignored.
  void skipDocstring() {
    while (accept(TokenKind::Newline)) {
    }
    if (at(TokenKind::String) && peek(1).kind == TokenKind::Newline)
      pos += 2;
  }

  /// `import numpy as np` and the like: ein needs no Python library.
  bool pythonImport() {
    static const char *const libraries[] = {"numpy",  "torch",     "jax",
                                            "einops", "jaxtyping", "tensorflow",
                                            "scipy",  "math"};
    if (!atName("import") || peek(1).kind != TokenKind::Name)
      return false;
    for (const char *library : libraries)
      if (peek(1).text == library) {
        error(peek(), "ein needs no 'import " + peek(1).text +
                          "': its operations (einsum, rearrange, reduce, "
                          "exp, ...) are built in");
        return true;
      }
    return false;
  }

  /// A string alone on a line other than a docstring's.
  bool bareString() {
    if (!at(TokenKind::String) || peek(1).kind != TokenKind::Newline)
      return false;
    error(peek(), "a string statement is only allowed as a docstring, the "
                  "first line of a function body or of the file");
    return true;
  }

  bool tooDeep() {
    if (depth <= kMaxDepth)
      return false;
    error(peek(), "expression nested too deeply (more than " +
                      std::to_string(kMaxDepth) + " levels)");
    return true;
  }

  const Token &peek(size_t ahead = 0) const {
    return toks[std::min(pos + ahead, toks.size() - 1)];
  }
  bool at(TokenKind k) const { return peek().kind == k; }
  bool atName(const char *name) const {
    return at(TokenKind::Name) && peek().text == name;
  }
  bool accept(TokenKind k) {
    if (!at(k))
      return false;
    ++pos;
    return true;
  }
  static std::string describe(const Token &t) {
    if (t.kind == TokenKind::Name)
      return "'" + t.text + "'";
    if (t.kind == TokenKind::Int || t.kind == TokenKind::Float)
      return "number " + t.text;
    if (t.kind == TokenKind::String)
      return "string \"" + t.text + "\"";
    return tokenKindName(t.kind);
  }
  void error(const Token &t, const std::string &message) {
    if (t.kind == TokenKind::Error)
      return; // the lexer already reported it
    diags.error(t.loc, message, t.length);
  }
  bool expect(TokenKind k, const std::string &context) {
    if (accept(k))
      return true;
    error(peek(), std::string("expected ") + tokenKindName(k) + " " + context +
                      ", found " + describe(peek()));
    return false;
  }
  std::optional<Token> expectName(const std::string &context) {
    if (at(TokenKind::Name))
      return toks[pos++];
    error(peek(), "expected a name " + context + ", found " + describe(peek()));
    return std::nullopt;
  }

  std::optional<DimDecl> parseDim() {
    ++pos; // dim
    auto name = expectName("after 'dim'");
    if (!name || !expect(TokenKind::Equal, "after the dim name"))
      return std::nullopt;
    auto value = parseExpr();
    if (!value || !expect(TokenKind::Newline, "after the dim declaration"))
      return std::nullopt;
    return DimDecl{name->text, name->loc, std::move(value)};
  }

  /// `mesh dp, tp`.
  std::optional<MeshDecl> parseMesh() {
    MeshDecl d{peek().loc, {}};
    ++pos; // mesh
    do {
      auto axis = expectName("(a mesh axis such as dp) after 'mesh'");
      if (!axis)
        return std::nullopt;
      d.axes.push_back({axis->text, axis->loc});
    } while (accept(TokenKind::Comma));
    if (!expect(TokenKind::Newline, "after the mesh axes"))
      return std::nullopt;
    return d;
  }

  /// `shard batch -> dp`.
  std::optional<ShardRule> parseShardRule() {
    ++pos; // shard
    auto dim = expectName("(a dim such as batch) after 'shard'");
    if (!dim || !expect(TokenKind::Arrow, "after the dim of a shard rule"))
      return std::nullopt;
    auto axis = expectName("(a mesh axis) after '->'");
    if (!axis || !expect(TokenKind::Newline, "after the shard rule"))
      return std::nullopt;
    return ShardRule{dim->text, dim->loc, axis->text, axis->loc};
  }

  std::optional<Import> parseImport() {
    ++pos; // from
    auto module = expectName("(a module such as layers) after 'from'");
    if (!module)
      return std::nullopt;
    if (!atName("import")) {
      error(peek(), "expected 'import' after the module name, found " +
                        describe(peek()));
      return std::nullopt;
    }
    ++pos;
    Import i{module->text, module->loc, {}, 0};
    do {
      auto name = expectName("(a function to import)");
      if (!name)
        return std::nullopt;
      i.names.push_back({name->text, name->loc});
    } while (accept(TokenKind::Comma));
    if (!expect(TokenKind::Newline, "after the import"))
      return std::nullopt;
    return i;
  }

  std::optional<TypeAnnotation> parseType() {
    auto dtype = expectName("(a dtype such as f32) in the type");
    if (!dtype)
      return std::nullopt;
    if (!expect(TokenKind::LBracket, "after the dtype"))
      return std::nullopt;
    if (!at(TokenKind::String)) {
      error(peek(), "expected a shape string such as \"batch seq\", found " +
                        describe(peek()));
      return std::nullopt;
    }
    Token shape = toks[pos++];
    if (!expect(TokenKind::RBracket, "after the shape string"))
      return std::nullopt;
    return TypeAnnotation{dtype->text, dtype->loc, shape.text, shape.loc};
  }

  std::optional<Function> parseFunction() {
    ++pos; // def
    Function f;
    auto name = expectName("after 'def'");
    if (!name)
      return std::nullopt;
    f.name = name->text;
    f.loc = name->loc;
    if (!expect(TokenKind::LParen, "after the function name"))
      return std::nullopt;
    while (!at(TokenKind::RParen)) {
      auto pname = expectName("(a parameter)");
      if (!pname)
        return std::nullopt;
      if (!expect(TokenKind::Colon, "after the parameter name: every parameter "
                                    "needs a type such as f32[\"n\"]"))
        return std::nullopt;
      auto type = parseType();
      if (!type)
        return std::nullopt;
      f.params.push_back({pname->text, pname->loc, *type});
      if (!accept(TokenKind::Comma))
        break;
    }
    if (!expect(TokenKind::RParen, "after the parameters"))
      return std::nullopt;
    if (!expect(TokenKind::Arrow,
                "after the parameters: a result type is required"))
      return std::nullopt;
    if (accept(TokenKind::LParen)) {
      do {
        auto type = parseType();
        if (!type)
          return std::nullopt;
        f.results.push_back(*type);
      } while (accept(TokenKind::Comma) && !at(TokenKind::RParen));
      if (!expect(TokenKind::RParen, "after the result types"))
        return std::nullopt;
    } else {
      auto type = parseType();
      if (!type)
        return std::nullopt;
      f.results.push_back(*type);
    }
    if (!expect(TokenKind::Colon, "after the signature") ||
        !expect(TokenKind::Newline, "after ':'"))
      return std::nullopt;
    if (!at(TokenKind::Indent)) {
      error(peek(), "expected an indented function body");
      return std::nullopt;
    }
    ++pos;
    skipDocstring();
    if (!parseBlock(f.body))
      return std::nullopt;
    return f;
  }

  /// The statements of an indented block, after its INDENT, to its DEDENT.
  bool parseBlock(std::vector<Stmt> &body) {
    while (!at(TokenKind::Dedent) && !at(TokenKind::Eof)) {
      if (accept(TokenKind::Newline))
        continue;
      auto stmt = parseStmt();
      if (!stmt)
        return false;
      body.push_back(std::move(*stmt));
    }
    accept(TokenKind::Dedent);
    return true;
  }

  /// Whether a statement starting here is a `for` loop: `for NAME in`
  /// (there are no reserved words: `for = x` assigns a name).
  bool atFor() const {
    return atName("for") && peek(1).kind == TokenKind::Name &&
           peek(2).kind == TokenKind::Name && peek(2).text == "in";
  }

  /// `for l in range(layers):` and its indented body. What it runs over
  /// is checked by the checker (only range(N) of a size).
  std::optional<Stmt> parseFor() {
    Stmt s;
    s.kind = Stmt::Kind::For;
    s.loc = peek().loc;
    ++pos; // for
    Token var = toks[pos];
    pos += 2; // the variable, in
    s.targets.push_back({var.text, var.loc});
    auto over = parseExpr();
    if (!over)
      return std::nullopt;
    s.values.push_back(std::move(over));
    if (!expect(TokenKind::Colon, "after the loop's range") ||
        !expect(TokenKind::Newline, "after ':'"))
      return std::nullopt;
    if (!at(TokenKind::Indent)) {
      error(peek(), "expected an indented loop body");
      return std::nullopt;
    }
    ++pos;
    if (!parseBlock(s.body))
      return std::nullopt;
    return s;
  }

  std::optional<Stmt> parseStmt() {
    Stmt s;
    s.loc = peek().loc;
    if (at(TokenKind::Indent)) {
      error(peek(), "unexpected indent");
      return std::nullopt;
    }
    if (bareString())
      return std::nullopt;
    if (atFor())
      return parseFor();
    if (atName("for") && peek(1).kind == TokenKind::Name) {
      error(peek(), "ein's one loop is 'for l in range(layers):' (one loop "
                    "variable, over range of a size), which unrolls over "
                    "stacked weights w[l]; write a loop over an axis as one "
                    "operation on the whole tensor (einsum, reduce, repeat, "
                    "rearrange)");
      return std::nullopt;
    }
    if (atName("return")) {
      ++pos;
      s.kind = Stmt::Kind::Return;
      do {
        auto e = parseExpr();
        if (!e)
          return std::nullopt;
        s.values.push_back(std::move(e));
      } while (accept(TokenKind::Comma));
      if (!expect(TokenKind::Newline, "after the return value"))
        return std::nullopt;
      return s;
    }
    s.kind = Stmt::Kind::Assign;
    do {
      auto name = expectName("(an assignment target)");
      if (!name)
        return std::nullopt;
      s.targets.push_back({name->text, name->loc});
    } while (accept(TokenKind::Comma));
    if (augmentedAssignment(s))
      return std::nullopt;
    if (!expect(TokenKind::Equal, "in the assignment"))
      return std::nullopt;
    auto e = parseExpr();
    if (!e)
      return std::nullopt;
    s.values.push_back(std::move(e));
    if (!expect(TokenKind::Newline, "after the assignment"))
      return std::nullopt;
    return s;
  }

  /// `x += y` (and `-=`, `*=`, `/=`, `**=`): an error that gives the
  /// assignment to write. True when one was reported.
  bool augmentedAssignment(const Stmt &s) {
    const Token &op = peek(), &next = peek(1);
    bool arithmetic =
        op.kind == TokenKind::Plus || op.kind == TokenKind::Minus ||
        op.kind == TokenKind::Star || op.kind == TokenKind::Slash ||
        op.kind == TokenKind::StarStar;
    if (!arithmetic || next.kind != TokenKind::Equal ||
        next.loc.line != op.loc.line || next.loc.col != op.loc.col + op.length)
      return false;
    const std::string &x = s.targets.back().first;
    diags.error(op.loc,
                "augmented assignment '" + op.text +
                    "=' is not supported (values are never modified in "
                    "place); write " +
                    x + " = " + x + " " + op.text + " ...",
                op.length + 1);
    return true;
  }

  ExprPtr make(Expr::Kind kind, const Token &t) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->loc = t.loc;
    e->length = t.length;
    e->text = t.text;
    return e;
  }

  // Python's precedence, lowest first: comparisons, |, &, + -,
  // * / // %, unary - and ~, **.
  ExprPtr parseExpr() { return parseComparison(); }

  static bool isComparison(TokenKind k) {
    return k == TokenKind::Less || k == TokenKind::LessEqual ||
           k == TokenKind::Greater || k == TokenKind::GreaterEqual ||
           k == TokenKind::EqualEqual || k == TokenKind::NotEqual;
  }
  /// One comparison at most: Python's chains (`a < b < c`, meaning
  /// `a < b and b < c`) have no elementwise reading.
  ExprPtr parseComparison() {
    ExprPtr lhs = parseOr();
    if (!lhs || !isComparison(toks[pos].kind))
      return lhs;
    Token op = toks[pos++];
    ExprPtr rhs = parseOr();
    if (!rhs)
      return nullptr;
    if (isComparison(toks[pos].kind)) {
      diags.error(toks[pos].loc,
                  "chained comparisons are not supported; combine two with "
                  "&: (a < b) & (b < c)",
                  toks[pos].length);
      return nullptr;
    }
    auto e = make(Expr::Kind::Binary, op);
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    return e;
  }
  ExprPtr parseOr() {
    return parseBinary(&Parser::parseAnd, {TokenKind::Pipe});
  }
  ExprPtr parseAnd() {
    return parseBinary(&Parser::parseAdditive, {TokenKind::Amp});
  }

  ExprPtr parseBinary(ExprPtr (Parser::*next)(),
                      std::initializer_list<TokenKind> ops) {
    ExprPtr lhs = (this->*next)();
    unsigned chainStart = depth;
    struct Restore {
      unsigned &d, v;
      ~Restore() { d = v; }
    } restore{depth, chainStart};
    while (lhs) {
      ++depth; // a left-deep chain deepens the tree
      if (tooDeep())
        return nullptr;
      bool matched = false;
      for (auto k : ops)
        matched |= at(k);
      if (!matched)
        break;
      Token op = toks[pos++];
      ExprPtr rhs = (this->*next)();
      if (!rhs)
        return nullptr;
      auto e = make(Expr::Kind::Binary, op);
      e->args.push_back(std::move(lhs));
      e->args.push_back(std::move(rhs));
      lhs = std::move(e);
    }
    return lhs;
  }
  ExprPtr parseAdditive() {
    return parseBinary(&Parser::parseMultiplicative,
                       {TokenKind::Plus, TokenKind::Minus});
  }
  ExprPtr parseMultiplicative() {
    // `@` parses as in Python, for the checker to say what to write.
    return parseBinary(&Parser::parseUnary,
                       {TokenKind::Star, TokenKind::Slash,
                        TokenKind::SlashSlash, TokenKind::Percent,
                        TokenKind::At});
  }
  ExprPtr parseUnary() {
    struct Restore {
      unsigned &d, v;
      ~Restore() { d = v; }
    } restore{depth, depth};
    ++depth;
    if (tooDeep())
      return nullptr;
    if (at(TokenKind::Minus) || at(TokenKind::Tilde)) {
      Token op = toks[pos++];
      ExprPtr operand = parseUnary();
      if (!operand)
        return nullptr;
      auto e = make(
          op.kind == TokenKind::Minus ? Expr::Kind::Neg : Expr::Kind::Not, op);
      e->args.push_back(std::move(operand));
      return e;
    }
    return parsePower();
  }
  ExprPtr parsePower() {
    ExprPtr base = parsePrimary();
    if (!base || !at(TokenKind::StarStar))
      return base;
    Token op = toks[pos++];
    ExprPtr exponent = parseUnary();
    if (!exponent)
      return nullptr;
    auto e = make(Expr::Kind::Binary, op);
    e->args.push_back(std::move(base));
    e->args.push_back(std::move(exponent));
    return e;
  }
  /// `w[l]`: a name indexed (which indices are allowed is the checker's
  /// rule: the variable of an enclosing loop, on the leading axis).
  ExprPtr parseIndex(const Token &name) {
    auto index = make(Expr::Kind::Index, toks[pos]);
    index->args.push_back(make(Expr::Kind::Name, name));
    ++pos; // [
    while (!at(TokenKind::RBracket)) {
      ExprPtr item = parseExpr();
      if (!item)
        return nullptr;
      index->args.push_back(std::move(item));
      if (!accept(TokenKind::Comma))
        break;
    }
    if (!expect(TokenKind::RBracket, "to close '['"))
      return nullptr;
    if (index->args.size() == 1) {
      error(toks[pos - 1], "expected an index between '[' and ']'");
      return nullptr;
    }
    return index;
  }

  ExprPtr parsePrimary() {
    const Token &t = peek();
    switch (t.kind) {
    case TokenKind::Int:
      ++pos;
      return make(Expr::Kind::Int, t);
    case TokenKind::Float:
      ++pos;
      return make(Expr::Kind::Float, t);
    case TokenKind::String:
      if (t.tripleQuoted) {
        error(t, "a triple-quoted string is only allowed as a docstring; "
                 "patterns and shapes are written in \"...\"");
        return nullptr;
      }
      ++pos;
      return make(Expr::Kind::String, t);
    case TokenKind::LParen: {
      ++pos;
      ExprPtr inner = parseExpr();
      if (!inner || !expect(TokenKind::RParen, "to close '('"))
        return nullptr;
      return inner;
    }
    case TokenKind::LBracket: {
      auto list = make(Expr::Kind::List, t);
      ++pos;
      while (!at(TokenKind::RBracket)) {
        ExprPtr item = parseExpr();
        if (!item)
          return nullptr;
        list->args.push_back(std::move(item));
        if (!accept(TokenKind::Comma))
          break;
      }
      if (!expect(TokenKind::RBracket, "to close '['"))
        return nullptr;
      return list;
    }
    case TokenKind::Name: {
      ++pos;
      if (at(TokenKind::LBracket))
        return parseIndex(t);
      if (!at(TokenKind::LParen))
        return make(Expr::Kind::Name, t);
      auto call = make(Expr::Kind::Call, t);
      ++pos;
      while (!at(TokenKind::RParen)) {
        if (at(TokenKind::Name) && peek(1).kind == TokenKind::Equal) {
          Token key = toks[pos];
          pos += 2;
          ExprPtr value = parseExpr();
          if (!value)
            return nullptr;
          call->keywords.push_back({key.text, key.loc, std::move(value)});
        } else {
          if (!call->keywords.empty()) {
            error(peek(), "positional argument after keyword arguments");
            return nullptr;
          }
          ExprPtr arg = parseExpr();
          if (!arg)
            return nullptr;
          call->args.push_back(std::move(arg));
        }
        if (!accept(TokenKind::Comma))
          break;
      }
      if (!expect(TokenKind::RParen, "to close the call"))
        return nullptr;
      return call;
    }
    default:
      error(t, "expected an expression, found " + describe(t));
      return nullptr;
    }
  }
};

} // namespace

Module parseModule(const SourceFile &file, DiagnosticEngine &diags) {
  auto tokens = lex(file, diags);
  if (diags.hadError())
    return Module();
  return Parser(std::move(tokens), diags).parseModule();
}

} // namespace ein
