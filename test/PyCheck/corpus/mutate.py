#!/usr/bin/env python3
"""The Python corpus's oracle and mutation test for `einc check model.py` (issue 32's Verification).

Clean files (`Inputs/*.py`, small models written in the styles of TransformerLens, SAELens, x-transformers,
vit-pytorch, ...) each define `example()`, which builds random inputs and compares the model against an
independent computation (torch's own attention, `F.layer_norm`, `unfold`, `cdist`, ...). Each file is imported
under jaxtyping's import hook with beartype, so every annotated function's shapes are checked at run time too.

  --clean     run every clean file (the runtime oracle must pass) and `einc check` it (it must report nothing).
  (default)   derive mutants, one injected shape bug each, at known spots found with `ast`:
                swap-annotation  two adjacent dims of a jaxtyping annotation swapped
                swap-pattern     two adjacent output axes of an einops/einsum pattern swapped
                wrong-split      an einops keyword size given to the other axis of its group (`h=` -> `d=`)
                transpose        the right operand of `@`/matmul transposed, or einsum's two operands swapped
                wrong-dim        an integer `dim=`/`axis=` (or a reduction's positional dim) moved to another axis
              Each mutant runs under the same oracle. One that still runs is no bug and is dropped; one that only
              fails a numeric comparison (AssertionError) is a value bug, not a shape bug, and is counted apart.
              The rest (confirmed shape bugs) go to `einc check`, scored by where its first fitting error is:
                at-line     at the mutated line
                via-note    elsewhere, with a note at the mutated line (a declaration's note)
                at-failure  at the line where the run itself failed (torch's or einops' own error there)
                elsewhere   only at other lines
                missed      no error
              The first three are "the right line". `--min-caught N --min-right-line M` fail the run below N / M.

Edits are made in the source text at the nodes' own positions (one line each), so line numbers are kept.
"""

import argparse
import ast
import collections
import concurrent.futures
import contextlib
import importlib
import io
import os
import re
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "Inputs")
KINDS = ["swap-annotation", "swap-pattern", "wrong-split", "transpose", "wrong-dim"]

JAXTYPING_DTYPES = {"Float", "Int", "Bool", "Shaped", "Float32", "Int64", "Num", "Real"}
EINOPS_PATTERN_ARG = {"rearrange": 1, "repeat": 1, "reduce": 1, "Rearrange": 0, "Reduce": 0}
DIM_METHODS = {"mean", "sum", "softmax", "unbind", "argmax", "norm", "max", "amax", "log_softmax", "squeeze"}
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*$")


def require_oracle():
    """jaxtyping and beartype are the runtime oracle; refuse by name without them."""
    missing = []
    for mod in ("torch", "einops", "jaxtyping", "beartype", "numpy"):
        try:
            importlib.import_module(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        sys.exit("mutate.py: the runtime oracle needs %s: python3 -m pip install %s"
                 % (", ".join(missing), " ".join(missing)))


# ---------------------------------------------------------------- source edits

class Source:
    """A file's text with ast positions (UTF-8 byte columns) turned into edits that keep every line."""

    def __init__(self, path):
        self.path = path
        self.text = open(path, encoding="utf-8").read()
        self.lines = self.text.encode("utf-8").split(b"\n")
        self.tree = ast.parse(self.text)

    def segment(self, node):
        assert node.lineno == node.end_lineno, "edits stay on one line"
        return self.lines[node.lineno - 1][node.col_offset:node.end_col_offset].decode("utf-8")

    def edit(self, edits):
        """`edits`: (node, new text) pairs, each on one line; returns the new file text."""
        lines = list(self.lines)
        for node, new in sorted(edits, key=lambda e: (e[0].lineno, -e[0].col_offset)):
            line = lines[node.lineno - 1]
            lines[node.lineno - 1] = line[:node.col_offset] + new.encode("utf-8") + line[node.end_col_offset:]
        return b"\n".join(lines).decode("utf-8")


class Mutant:
    def __init__(self, kind, file, line, before, after, text):
        self.kind, self.file, self.line, self.before, self.after, self.text = kind, file, line, before, after, text
        self.runtime = None  # "runs", "value", "shape"
        self.error = ""
        self.failed_at = 0  # the line where the run failed, when the traceback names one
        self.verdict = None  # "at-line", "via-note", "elsewhere", "missed"
        self.reported = ""


def call_name(node):
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def str_const(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def int_const(node):
    """The value of an integer literal (`2`, `-1`), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and int_const(node.operand) is not None:
        return -int_const(node.operand)
    return None


def swap_first_pair(tokens):
    """Swaps the first two adjacent distinct plain names; None when there is no such pair."""
    for i in range(len(tokens) - 1):
        a, b = tokens[i], tokens[i + 1]
        if NAME_RE.match(a) and NAME_RE.match(b) and a != b:
            return tokens[:i] + [b, a] + tokens[i + 2:]
    return None


def pattern_tokens(side):
    """The top-level items of one side of an einops pattern: names, `...`, `1`, and `(groups)` whole."""
    return re.findall(r"\([^)]*\)|\S+", side)


def einops_pattern(call):
    """(pattern node, kind) of an einops or einsum call, or None."""
    name = call_name(call)
    if name in EINOPS_PATTERN_ARG:
        idx = EINOPS_PATTERN_ARG[name]
        if len(call.args) > idx and str_const(call.args[idx]):
            return call.args[idx]
    if name == "einsum" and call.args:
        if str_const(call.args[-1]):  # einops.einsum(a, b, "pattern")
            return call.args[-1]
        if str_const(call.args[0]):  # torch.einsum("pattern", a, b)
            return call.args[0]
    return None


def skip_nodes(tree):
    """Nodes inside `example()` (the oracle) are never mutated."""
    skipped = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name == "example":
            skipped.update(id(n) for n in ast.walk(fn))
    return skipped


def mutants_of(path):
    src = Source(path)
    skipped = skip_nodes(src.tree)
    uses_torch = "import torch" in src.text
    out = []

    def add(kind, node, new, line=None):
        text = src.edit([(node, new)])
        out.append(Mutant(kind, os.path.basename(path), line or node.lineno, src.segment(node), new, text))

    for node in ast.walk(src.tree):
        if id(node) in skipped:
            continue
        # swap-annotation: Float[Tensor, "a b c"] -> Float[Tensor, "b a c"]
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in JAXTYPING_DTYPES:
            sl = node.slice
            if isinstance(sl, ast.Tuple) and len(sl.elts) == 2 and str_const(sl.elts[1]):
                swapped = swap_first_pair(sl.elts[1].value.split())
                if swapped:
                    add("swap-annotation", sl.elts[1], repr(" ".join(swapped)).replace("'", '"'))
        if not isinstance(node, ast.Call):
            continue
        name = call_name(node)
        pat = einops_pattern(node)
        if pat is not None:
            # swap-pattern: the output side's first adjacent pair of distinct names
            lhs, arrow, rhs = pat.value.partition("->")
            if arrow:
                swapped = swap_first_pair(pattern_tokens(rhs))
                if swapped:
                    add("swap-pattern", pat, repr(lhs + arrow + " " + " ".join(swapped)).replace("'", '"'))
            # wrong-split: h=... given to the other axis of its group
            groups = [g[1:-1].split() for g in re.findall(r"\([^)]*\)", pat.value)]
            given = {kw.arg for kw in node.keywords}
            for kw in node.keywords:
                others = [o for g in groups if kw.arg in g for o in g if o != kw.arg and NAME_RE.match(o)]
                others = [o for o in others if o not in given]
                if others and kw.value.lineno == kw.lineno:
                    kwnode = ast.Name(id=kw.arg)
                    kwnode.lineno = kwnode.end_lineno = kw.lineno
                    kwnode.col_offset = kw.col_offset
                    kwnode.end_col_offset = kw.col_offset + len(kw.arg.encode("utf-8"))
                    add("wrong-split", kwnode, others[0])
                    break
        # transpose: einsum operands swapped
        if name == "einsum" and pat is not None and len(node.args) == 3:
            a, b = (node.args[0], node.args[1]) if pat is node.args[2] else (node.args[1], node.args[2])
            if a.lineno == a.end_lineno == b.lineno == b.end_lineno:
                text = src.edit([(a, src.segment(b)), (b, src.segment(a))])
                out.append(Mutant("transpose", os.path.basename(path), a.lineno,
                                  src.segment(a) + ", " + src.segment(b), src.segment(b) + ", " + src.segment(a), text))
        # transpose: matmul's right operand
        if name == "matmul" and len(node.args) == 2:
            b = node.args[1]
            if b.lineno == b.end_lineno:
                add("transpose", b, transposed(src.segment(b), b, uses_torch))
        # wrong-dim: dim=/axis= integer, or a reduction's positional dim
        for kw in node.keywords:
            if kw.arg in ("dim", "axis") and int_const(kw.value) is not None:
                add("wrong-dim", kw.value, str(other_dim(int_const(kw.value))))
        if name in DIM_METHODS and isinstance(node.func, ast.Attribute) and node.args:
            k = int_const(node.args[0])
            if k is not None:
                add("wrong-dim", node.args[0], str(other_dim(k)))
    for node in ast.walk(src.tree):
        if id(node) not in skipped and isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            b = node.right
            if b.lineno == b.end_lineno:
                add("transpose", b, transposed(src.segment(b), b, uses_torch))
    return out


def transposed(text, node, uses_torch):
    if not isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        text = "(" + text + ")"
    return text + (".transpose(-1, -2)" if uses_torch else ".T")


def other_dim(k):
    return {-1: -2, -2: -1}.get(k, k + 1 if k >= 0 else k - 1)


# ---------------------------------------------------------------- the runtime oracle

def run_example(path_or_text, name, workdir):
    """Imports a file under jaxtyping's import hook (beartype) and runs its `example()`.

    Returns ("runs" | "value" | "shape", message, line): the line is where the run failed, the innermost
    frame in the file outside `example()` (0 when none, as when jaxtyping refuses an argument)."""
    import jaxtyping

    path = os.path.join(workdir, name + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(path_or_text)
    sys.path.insert(0, workdir)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            with jaxtyping.install_import_hook(name, "beartype.beartype"):
                module = importlib.import_module(name)
            module.example()
        return "runs", "", 0
    except AssertionError as e:
        return "value", "AssertionError: " + (str(e).splitlines() or [""])[0], 0
    except Exception as e:  # every other failure of a mutant is the shape bug showing itself
        first = (str(e).strip().splitlines() or [""])[0]
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == path and f.name != "example"]
        return "shape", type(e).__name__ + ": " + first[:120], frames[-1].lineno if frames else 0
    finally:
        sys.path.remove(workdir)
        sys.modules.pop(name, None)


# ---------------------------------------------------------------- einc check

DIAG_RE = re.compile(r"^(?P<file>[^\n:]+\.py):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|note): (?P<msg>.*)$", re.M)


def einc_check(einc, path):
    """Runs `einc check path`; returns (exit status, [(line, msg, [note lines])], output)."""
    p = subprocess.run([einc, "check", path], capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    errors = []
    for m in DIAG_RE.finditer(out):
        if m["sev"] == "error":
            errors.append((int(m["line"]), m["msg"], []))
        elif m["sev"] == "note" and errors:
            errors[-1][2].append(int(m["line"]))
    return p.returncode, errors, out


def clean(args, files, workdir):
    failures = 0
    for path in files:
        name = "clean_" + os.path.basename(path)[:-3]
        runtime, msg, _ = run_example(open(path, encoding="utf-8").read(), name, workdir)
        line = "%-18s runtime: %s" % (os.path.basename(path), "ok" if runtime == "runs" else "FAIL " + msg)
        if runtime != "runs":
            failures += 1
        if args.einc:
            rc, errors, out = einc_check(args.einc, path)
            line += "  einc check: %d errors" % len(errors)
            if errors or rc != 0:
                failures += 1
                line += " (exit %d)\n%s" % (rc, out)
        print(line)
    print("clean files: %d, failures: %d" % (len(files), failures))
    return 1 if failures else 0


def score(m, errors):
    """Where `einc check`'s errors fall against the mutant's injected bug."""
    if any(line == m.line for line, _, _ in errors):
        return "at-line"
    if any(m.line in notes for _, _, notes in errors):
        return "via-note"
    if m.failed_at and any(line == m.failed_at for line, _, _ in errors):
        return "at-failure"
    return "elsewhere" if errors else "missed"


def mutate(args, files, workdir):
    mutants = [m for path in files for m in mutants_of(path)][:: args.sample]
    for i, m in enumerate(mutants):
        m.runtime, m.error, m.failed_at = run_example(m.text, "mutant_%d" % i, workdir)

    def check_one(i):
        m = mutants[i]
        os.makedirs(os.path.join(workdir, str(i)))
        path = os.path.join(workdir, str(i), m.file)
        with open(path, "w", encoding="utf-8") as f:
            f.write(m.text)
        rc, errors, out = einc_check(args.einc, path)
        if rc not in (0, 1) or (rc == 1 and not errors):
            return "einc check crashed or failed without a diagnostic on a mutant of %s:%d\n%s" % (m.file, m.line, out)
        m.verdict = score(m, errors)
        m.reported = "; ".join("%d: %s" % (line, msg) for line, msg, _ in errors[:2])
        return None

    if args.einc:
        confirmed = [i for i, m in enumerate(mutants) if m.runtime == "shape"]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            problems = [p for p in pool.map(check_one, confirmed) if p]
        if problems:
            sys.exit("mutate.py: " + problems[0])

    if args.verbose:
        for m in mutants:
            print("%-16s %s:%d  %r -> %r  runtime=%s %s (line %d)  check=%s %s"
                  % (m.kind, m.file, m.line, m.before, m.after, m.runtime, m.error, m.failed_at, m.verdict,
                     m.reported))
    cols = ["mutants", "runs", "value-only", "confirmed", "at-line", "via-note", "at-failure", "elsewhere", "missed"]
    print("%-16s" % "kind" + "".join("%11s" % c for c in cols))
    totals = collections.Counter()
    for kind in KINDS + ["TOTAL"]:
        ms = [m for m in mutants if kind in (m.kind, "TOTAL")]
        row = collections.Counter(mutants=len(ms))
        for m in ms:
            row[{"runs": "runs", "value": "value-only", "shape": "confirmed"}[m.runtime]] += 1
            if m.verdict:
                row[m.verdict] += 1
        if kind == "TOTAL":
            totals = row
        print("%-16s" % kind + "".join("%11d" % row[c] for c in cols))
    right = totals["at-line"] + totals["via-note"] + totals["at-failure"]
    caught = right + totals["elsewhere"]
    if args.einc:
        print("caught: %d of %d confirmed shape bugs, %d at the right line (the mutated one, a note there, or where the run failed)"
              % (caught, totals["confirmed"], right))
    status = 0
    if args.min_confirmed is not None and totals["confirmed"] < args.min_confirmed:
        print("FAIL: %d confirmed mutants, expected at least %d" % (totals["confirmed"], args.min_confirmed))
        status = 1
    if args.min_caught is not None and caught < args.min_caught:
        print("FAIL: %d caught, expected at least %d" % (caught, args.min_caught))
        status = 1
    if args.min_right_line is not None and right < args.min_right_line:
        print("FAIL: %d caught at the right line, expected at least %d" % (right, args.min_right_line))
        status = 1
    return status


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", help="einc to check with; without it only the runtime oracle runs")
    ap.add_argument("--clean", action="store_true", help="check the clean files instead of mutating them")
    ap.add_argument("--verbose", action="store_true", help="list every mutant")
    ap.add_argument("--sample", type=int, default=1, help="keep every N-th mutant (the fast tier)")
    ap.add_argument("--jobs", type=int, default=2, help="einc checks run side by side")
    ap.add_argument("--min-confirmed", type=int)
    ap.add_argument("--min-caught", type=int)
    ap.add_argument("--min-right-line", type=int)
    ap.add_argument("files", nargs="*", help="clean files (default: every Inputs/*.py)")
    args = ap.parse_args()
    require_oracle()
    files = args.files or sorted(os.path.join(INPUTS, f) for f in os.listdir(INPUTS) if f.endswith(".py"))
    with tempfile.TemporaryDirectory() as workdir:
        return clean(args, files, workdir) if args.clean else mutate(args, files, workdir)


if __name__ == "__main__":
    sys.exit(main())
