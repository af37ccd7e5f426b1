#!/usr/bin/env python3
"""Prints every ein op with every element type (and every `acc`, and every
cast pair) as one function per `// -----` chunk, for
`ein-opt --split-input-file --verify-diagnostics --ein-lower-to-llvm`.

The combinations the dtype rules reject (docs/dialect.md, "Dtype rules") are
written here a second time, independently of lib/Shape/DTypeRules.cpp, and
carry their `expected-error`; every other one must verify and lower to the
LLVM dialect without a diagnostic.
"""

MLIR = {"f64": "f64", "f32": "f32", "f16": "f16", "bf16": "bf16",
        "f8e4m3": "f8E4M3FN", "f8e5m2": "f8E5M2", "i64": "i64", "i32": "i32",
        "bool": "i1"}
DTYPES = list(MLIR)
FLOATS = {"f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2"}
NUMBERS = set(DTYPES) - {"bool"}
# Each elementwise function: arity, the dtypes its operands admit, whether
# the result is bool. `where`'s first operand is a bool condition.
FLOAT_FNS = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "gelu",
             "gelu_tanh", "softplus", "sin", "cos", "erf", "floor", "ceil",
             "round"]
ELEMENTWISE = {fn: (1, FLOATS, False) for fn in FLOAT_FNS}
ELEMENTWISE.update({fn: (1, NUMBERS, False)
                    for fn in ["neg", "relu", "abs", "sign", "square"]})
ELEMENTWISE.update({fn: (2, NUMBERS, False)
                    for fn in ["add", "sub", "mul", "div", "pow", "floordiv",
                               "mod", "min", "max"]})
ELEMENTWISE["clip"] = (3, NUMBERS, False)
ELEMENTWISE.update({fn: (2, NUMBERS, True) for fn in ["lt", "le", "gt", "ge"]})
ELEMENTWISE.update({fn: (2, set(DTYPES), True) for fn in ["eq", "ne"]})
ELEMENTWISE.update({fn: (2, {"bool"}, False) for fn in ["and", "or"]})
ELEMENTWISE["not"] = (1, {"bool"}, False)
SET_TEXT = {id(FLOATS): "a float tensor", id(NUMBERS): "a number tensor (not bool)"}
SYMBOLS = {"add": "'+'", "sub": "'-'", "mul": "'*'", "div": "'/'",
           "pow": "'**'", "floordiv": "'//'", "mod": "'%'", "neg": "'-'",
           "lt": "'<'", "le": "'<='", "gt": "'>'", "ge": "'>='", "eq": "'=='",
           "ne": "'!='", "and": "'&'", "or": "'|'", "not": "'~'"}
chunks = []


def t(shape, dtype):
    return f'!ein.tensor<"{shape}", {MLIR[dtype]}>'


def case(name, args, body, error=None):
    lines = ["module attributes {ein.dims = {}} {",
             f"  func.func @{name}({args}) {{"]
    if error:
        lines.append(f"    // expected-error @+1 {{{{{error}}}}}")
    lines += [f"    {line}" for line in body] + ["    return", "  }", "}"]
    chunks.append("\n".join(lines))


for d in DTYPES:
    x = t("4 3", d)
    for fn, (arity, admits, bool_result) in ELEMENTWISE.items():
        shapes = ["4 3", "3", "4 1"][:arity]
        types = [t(shape, d) for shape in shapes]
        operands = ", ".join(f"%a{k}" for k in range(arity))
        args = ", ".join(f"%a{k}: {types[k]}" for k in range(arity))
        result = t("4 3", "bool" if bool_result else d)
        error = None
        if d not in admits:
            what = "a bool tensor" if admits == {"bool"} else SET_TEXT[id(admits)]
            error = (f"'ein.elementwise' op {SYMBOLS.get(fn, fn)} needs {what}, "
                     f"got {d}; use astype")
        case(f"{fn}_{d}", args,
             [f'%0 = ein.elementwise "{fn}" {operands} : {", ".join(types)} -> {result}'],
             error)
    cond = t("4 1", "bool")
    case(f"where_{d}", f"%c: {cond}, %x: {x}, %v: {t('3', d)}",
         [f'%0 = ein.elementwise "where" %c, %x, %v : {cond}, {x}, {t("3", d)} -> {x}'])
    if d != "bool":
        case(f"where_condition_{d}", f"%c: {t('4 1', d)}, %x: {x}",
             [f'%0 = ein.elementwise "where" %c, %x, %x : {t("4 1", d)}, {x}, {x} -> {x}'],
             f"'ein.elementwise' op the condition of where must be a bool "
             f"tensor, got {d}")
    for to in DTYPES:
        case(f"cast_{d}_to_{to}", f"%x: {x}",
             [f"%0 = ein.cast %x : {x} -> {t('4 3', to)}"])
    for kind in ["sum", "mean", "max", "min", "prod", "any", "all"]:
        for acc in [None] + DTYPES:
            result = acc or d
            accs = f" acc {MLIR[acc]}" if acc else ""
            error = None
            admits = (FLOATS if kind == "mean" else
                      {"bool"} if kind in ("any", "all") else NUMBERS)
            what = ("a float tensor" if kind == "mean" else
                    "a bool tensor" if kind in ("any", "all") else
                    "a number tensor (not bool)")
            if d not in admits:
                error = f"'ein.reduce' op {kind} needs {what}, got {d}"
            elif kind == "mean" and acc and acc not in FLOATS:
                error = f"'ein.reduce' op mean accumulates in a float dtype, got acc={acc}"
            elif acc and acc not in admits:
                error = f"'ein.reduce' op {kind} cannot accumulate in {acc}"
            case(f"reduce_{kind}_{d}_acc_{acc}", f"%x: {x}",
                 [f'%0 = ein.reduce {kind} %x "a b -> a"{accs} : {x} -> {t("4", result)}'],
                 error)
    y = t("3 5", d)
    for acc in [None] + DTYPES:
        accs = f" acc {MLIR[acc]}" if acc else ""
        error = None
        if d not in NUMBERS:
            error = f"'ein.einsum' op einsum needs a number tensor (not bool), got {d}"
        elif acc and acc not in NUMBERS:
            error = f"'ein.einsum' op einsum cannot accumulate in {acc}"
        case(f"einsum_{d}_acc_{acc}", f"%x: {x}, %y: {y}",
             [f'%0 = ein.einsum %x, %y "a b, b c -> a c"{accs} : {x}, {y} -> {t("4 5", acc or d)}'],
             error)
    case(f"rearrange_{d}", f"%x: {x}",
         [f'%0 = ein.rearrange %x "a b -> b a" : {x} -> {t("3 4", d)}'])
    case(f"repeat_{d}", f"%x: {x}",
         [f'%0 = ein.repeat %x "a b -> a b c" {{c = 2}} : {x} -> {t("4 3 2", d)}'])
    v = t("3", d)
    case(f"pack_unpack_{d}", f"%x: {x}, %v: {v}",
         [f'%0 = ein.pack %x, %v "*" : {x}, {v} -> {t("15", d)}',
          f'%1:2 = ein.unpack %0 "*" ["4 3", "3"] : {t("15", d)} -> {x}, {v}'])
    if d == "bool":
        continue
    if d in FLOATS:
        values = ["-1.500000e+00", "0.000000e+00"]
    else:
        bits = 64 if d == "i64" else 32
        values = [str(-2 ** (bits - 1)), str(2 ** (bits - 1) - 1), "0"]
    for i, value in enumerate(values):
        case(f"constant_{d}_{i}", "",
             [f"%0 = ein.constant {value} : {MLIR[d]}",
              '%1 = ein.elementwise "add" %0, %0 : '
              f"{t('', d)}, {t('', d)} -> {t('', d)}"])

print("// Generated by dtype_matrix.py.\n\n" + "\n\n// -----\n\n".join(chunks))
