# `grad` where it has no answer: an op without a gradient rule on the path
# from the loss (reduce "prod"), and a loss that is not a scalar.
#
#   grad_errors.py EINC TMPDIR [EXTRA EINC ARGS...]
#
# Each case is written to TMPDIR and given to `einc check` and to `einc run`
# (with the EXTRA arguments); both must exit with 1, write no output, and
# print the expected message. Prints `ok NAME COMMAND` or `FAIL NAME COMMAND:
# why`, then `N failure(s)`; exits 1 on any failure.
import os
import subprocess
import sys

import numpy as np

CASES = [
    ("reduce_prod", "cannot differentiate",
     'def f(x: f64["a b"]) -> (f64[""], f64["a b"]):\n'
     '    l = reduce(x, "a b ->", "prod")\n'
     '    g = grad(l, wrt=[x])\n'
     '    return l, g\n',
     {"x": np.full((2, 3), 1.5)}),
    # The op without a rule inside a called function.
    ("reduce_prod_in_call", "cannot differentiate",
     'def p(u: f64["m"]) -> f64[""]:\n'
     '    return reduce(exp(u), "m ->", "prod")\n'
     '\n'
     'def f(x: f64["a"]) -> (f64[""], f64["a"]):\n'
     '    l = p(x) * 2.0\n'
     '    g = grad(l, wrt=[x])\n'
     '    return l, g\n',
     {"x": np.full((3,), 0.5)}),
    ("non_scalar_loss", "grad needs a scalar loss",
     'def f(x: f64["a b"], w: f64["a b"]) -> f64["a b"]:\n'
     '    y = x * w\n'
     '    g = grad(y, wrt=[w])\n'
     '    return g\n',
     {"x": np.ones((2, 3)), "w": np.ones((2, 3))}),
]


def main():
    if len(sys.argv) < 3:
        print("usage: grad_errors.py EINC TMPDIR [EXTRA EINC ARGS...]", file=sys.stderr)
        return 2
    einc, tmp, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(tmp, exist_ok=True)
    failures = 0
    for name, message, text, inputs in CASES:
        path = os.path.join(tmp, f"{name}.ein")
        with open(path, "w") as f:
            f.write(text)
        out = os.path.join(tmp, f"{name}-out.npy")
        run = [einc, "run", path, "--fn", "f", *extra]
        for param, value in inputs.items():
            p = os.path.join(tmp, f"{name}-{param}.npy")
            np.save(p, value)
            run += ["--in", f"{param}={p}"]
        run += ["--out", out, "--out", out + "2.npy"]
        for command, args in [("check", [einc, "check", path]), ("run", run)]:
            for p in (out, out + "2.npy"):
                if os.path.exists(p):
                    os.remove(p)
            proc = subprocess.run(args, capture_output=True, text=True)
            why = []
            if proc.returncode != 1:
                why.append(f"exit {proc.returncode}, expected 1")
            if message not in proc.stderr:
                why.append(f"no '{message}' in the message")
            if os.path.exists(out) or os.path.exists(out + "2.npy"):
                why.append("an output was written")
            if why:
                failures += 1
                stderr = " | ".join(l for l in proc.stderr.strip().splitlines() if l.strip())
                print(f"FAIL {name} {command}: {'; '.join(why)}: {stderr}")
            else:
                first = next((l for l in proc.stderr.splitlines() if "error:" in l), "")
                print(f"ok {name} {command}: {first[first.find('error:'):]}")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
