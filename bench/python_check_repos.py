#!/usr/bin/env python3
"""Survey and soundness run of `einc check` over the Python files of fetched public repositories.

Not run in CI: the repositories are not in this tree (issue 32 forbids copying their code). Fetch them
into a scratch directory, one sub-directory per repository, then:

    python3 bench/python_check_repos.py /work/wt/pv-repos                 # survey only
    python3 bench/python_check_repos.py /work/wt/pv-repos --einc build/bin/einc   # survey + check

The survey reads every file with Python's own `ast` and counts, per repository: files, functions with a
jaxtyping annotation, einops calls (by function and by how their keyword sizes are written), the jaxtyping
dimension forms (`*name`, `...`, `#`, `_`, expressions), and the torch operations met in the same functions.
With `--einc`, it runs `einc check` on every file and sorts each reported error by its line's construct, so
that every error on real code can be read as a real bug or a false error.
"""

import argparse
import ast
import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys

JAXTYPING_DTYPES = {
    "Float", "Float16", "Float32", "Float64", "BFloat16", "Int", "Int8", "Int16", "Int32", "Int64",
    "UInt", "UInt8", "UInt16", "UInt32", "UInt64", "Bool", "Shaped", "Num", "Real", "Inexact",
    "Integer", "Complex", "Complex64", "Complex128", "Key", "PRNGKeyArray", "Float8e4m3fn",
}
EINOPS_FUNCS = {"rearrange", "reduce", "repeat", "einsum", "pack", "unpack", "parse_shape"}
EINOPS_LAYERS = {"Rearrange", "Reduce", "EinMix"}


def dotted(node):
    """`a.b.c` as a string, or None when the expression is not a plain dotted name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return base + "." + node.attr if base else None
    return None


def einops_names(tree):
    """Local names bound to einops functions or layers, and module aliases of einops itself."""
    names, modules = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "einops":
            for alias in node.names:
                if alias.name in EINOPS_FUNCS | EINOPS_LAYERS:
                    names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "einops":
                    modules.add(alias.asname or alias.name)
    return names, modules


def jaxtyping_annotation(node):
    """The dimension string of `Float[Tensor, "a b"]` (or `jaxtyping.Float[...]`), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if not isinstance(node, ast.Subscript):
        return None
    name = dotted(node.value)
    if not name or name.split(".")[-1] not in JAXTYPING_DTYPES:
        return None
    sl = node.slice
    if isinstance(sl, ast.Tuple) and len(sl.elts) == 2:
        dims = sl.elts[1]
        if isinstance(dims, ast.Constant) and isinstance(dims.value, str):
            return dims.value
    return None


def dim_forms(dims):
    """The jaxtyping dimension forms one annotation string uses."""
    forms = []
    for tok in dims.split():
        if tok == "...":
            forms.append("...")
        elif tok.startswith("*"):
            forms.append("*name")
        elif tok.startswith("#"):
            forms.append("#broadcast")
        elif tok == "_" or tok.startswith("_"):
            forms.append("_")
        elif tok.isdigit():
            forms.append("literal")
        elif re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", tok):
            forms.append("name")
        else:
            forms.append("expression")
    return forms


def size_kind(node):
    """How an einops keyword size is written: constant, attribute, name, or expression."""
    if isinstance(node, ast.Constant):
        return "constant"
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return "self.attr"
    if isinstance(node, ast.Name):
        return "name"
    if isinstance(node, ast.Attribute) and "cfg" in ast.unparse(node.value):
        return "cfg.attr"
    if isinstance(node, ast.Subscript) and "shape" in ast.unparse(node):
        return "x.shape[i]"
    return "expression"


class Survey:
    def __init__(self):
        self.c = collections.Counter()
        self.einops = collections.Counter()
        self.sizes = collections.Counter()
        self.forms = collections.Counter()
        self.arrays = collections.Counter()
        self.torch_ops = collections.Counter()

    def file(self, path):
        try:
            src = open(path, encoding="utf-8", errors="replace").read()
            tree = ast.parse(src)
        except (SyntaxError, ValueError):
            self.c["unparsable files"] += 1
            return
        self.c["files"] += 1
        names, modules = einops_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.AnnAssign) and jaxtyping_annotation(node.annotation) is not None:
                self.c["jaxtyping-annotated locals"] += 1
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            self.c["functions"] += 1
            anns = [a.annotation for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs]
            anns = [a for a in anns + [fn.returns] if a is not None]
            dims = [d for d in (jaxtyping_annotation(a) for a in anns) if d is not None]
            if dims:
                self.c["jaxtyping-annotated functions"] += 1
                for a in anns:
                    if jaxtyping_annotation(a) is not None:
                        arr = a.slice.elts[0] if isinstance(a, ast.Subscript) else None
                        self.arrays[ast.unparse(arr) if arr is not None else "string"] += 1
                for d in dims:
                    self.c["jaxtyping annotations"] += 1
                    self.forms.update(set(dim_forms(d)))
            has_einops = False
            for call in ast.walk(fn):
                if not isinstance(call, ast.Call):
                    continue
                name = dotted(call.func) or ""
                head, _, last = name.rpartition(".")
                kind = None
                if name in names:
                    kind = names[name]
                elif head in modules and last in EINOPS_FUNCS | EINOPS_LAYERS:
                    kind = last
                if kind:
                    has_einops = True
                    self.einops[kind] += 1
                    for kw in call.keywords:
                        if kw.arg and kw.arg != "reduction":
                            self.sizes[size_kind(kw.value)] += 1
                elif name in ("torch.einsum", "np.einsum", "jnp.einsum"):
                    self.einops[name] += 1
            if has_einops or dims:
                for call in ast.walk(fn):
                    if isinstance(call, ast.Call):
                        name = dotted(call.func)
                        if name and name.split(".")[0] in modules:
                            continue
                        if name and (name.startswith(("torch.", "F.", "nn.")) or isinstance(call.func, ast.Attribute)):
                            op = name if name.startswith(("torch.", "F.", "nn.")) else "." + call.func.attr
                            self.torch_ops[op] += 1
                    elif isinstance(call, ast.BinOp) and isinstance(call.op, ast.MatMult):
                        self.torch_ops["@"] += 1

    def dump(self):
        return {
            "counts": dict(self.c),
            "einops calls": dict(self.einops.most_common()),
            "keyword size forms": dict(self.sizes.most_common()),
            "jaxtyping dim forms (annotations using)": dict(self.forms.most_common()),
            "jaxtyping array types": dict(self.arrays.most_common(8)),
            "ops in annotated/einops functions (top 25)": dict(self.torch_ops.most_common(25)),
        }


def py_files(root):
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(dirpath, f)


def check(einc, path):
    """Runs `einc check --json` on one file; returns (exit status, diagnostics text, report dict or None)."""
    p = subprocess.run([einc, "check", "--json", path], capture_output=True, text=True, timeout=120)
    try:
        report = json.loads(p.stdout)
    except ValueError:
        report = None
    return p.returncode, p.stderr, report


def tally(report, checked):
    """Adds one file's `--json` report to the repository's counts."""
    for key in ("einops_checked", "torch_checked", "calls_checked", "returns_checked"):
        checked[key] += report.get(key, 0)
    for fn in report.get("functions", []):
        checked["functions " + fn["status"]] += 1
    for skip in report.get("skipped", []):
        if skip["what"].startswith("einops."):
            pattern_only = "its pattern is checked" in skip["reason"]
            checked["einops pattern-only" if pattern_only else "einops skipped"] += 1
    checked["entry checks"] += len(report.get("entry_checks", []))


ERROR_RE = re.compile(r"^(?P<file>[^:\n]+\.py):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$", re.M)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="directory with one sub-directory per fetched repository")
    ap.add_argument("--einc", help="path to einc; without it only the survey runs")
    ap.add_argument("--json", help="write the whole result here")
    ap.add_argument("--jobs", type=int, default=2, help="einc checks run side by side")
    args = ap.parse_args()

    result = {}
    totals = Survey()
    for repo in sorted(os.listdir(args.root)):
        rdir = os.path.join(args.root, repo)
        if not os.path.isdir(rdir):
            continue
        s = Survey()
        for f in py_files(rdir):
            s.file(f)
            totals.file(f)
        entry = {"survey": s.dump()}
        if args.einc:
            errors, crashes, checked = [], [], collections.Counter()
            files = list(py_files(rdir))
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                outs = list(pool.map(lambda f: check(args.einc, f), files))
            for f, (rc, out, report) in zip(files, outs):
                checked["files run"] += 1
                src = open(f, encoding="utf-8", errors="replace").read().splitlines()
                for m in ERROR_RE.finditer(out):
                    line = int(m["line"])
                    errors.append({"file": os.path.relpath(f, args.root), "line": line, "msg": m["msg"],
                                   "source": src[line - 1].strip() if line <= len(src) else ""})
                if rc not in (0, 1) or (rc != 0 and not ERROR_RE.search(out)) or report is None:
                    crashes.append({"file": os.path.relpath(f, args.root), "rc": rc, "out": out[-400:]})
                if report is not None:
                    tally(report, checked)
            print("%s: %d files checked" % (repo, len(files)), file=sys.stderr)
            entry["check"] = {"errors": errors, "crashes": crashes, "summary": dict(checked)}
        result[repo] = entry
    result["ALL"] = {"survey": totals.dump()}
    if args.json:
        open(args.json, "w").write(json.dumps(result, indent=1))
    print_tables(result)


def print_tables(result):
    """The survey as one row per repository, then the forms met over all of them, then the check run."""
    cols = ["files", "jaxtyping-annotated functions", "jaxtyping annotations", "jaxtyping-annotated locals"]
    print("%-40s %6s %9s %6s %6s %7s" % ("repository", "files", "ann.fns", "anns", "locals", "einops"))
    for repo, entry in result.items():
        s = entry["survey"]
        calls = sum(n for f, n in s["einops calls"].items() if "." not in f)
        print("%-40s %6d %9d %6d %6d %7d" % ((repo,) + tuple(s["counts"].get(c, 0) for c in cols) + (calls,)))
    for key, val in list(result["ALL"]["survey"].items())[1:]:
        print("%s: %s" % (key, ", ".join("%s %d" % kv for kv in val.items())))
    for repo, entry in result.items():
        if "check" not in entry:
            continue
        chk = entry["check"]
        print("\n%s: %s; %d errors, %d crashes" % (repo, ", ".join("%s %d" % kv for kv in chk["summary"].items()),
                                                  len(chk["errors"]), len(chk["crashes"])))
        for e in chk["errors"]:
            print("  %s:%d: %s\n      %s" % (e["file"], e["line"], e["msg"], e["source"]))
        for c in chk["crashes"]:
            print("  CRASH %s (exit %d): %s" % (c["file"], c["rc"], c["out"]))


if __name__ == "__main__":
    sys.exit(main())
