# Runs every command of README.md's "A short tour" (the first ```sh block
# after that heading), as written, each with bash in WORKDIR, where
# `examples` links to the repository's, with BINDIR first on PATH, so that
# the tour cannot rot. Each must exit 0, but for what this machine cannot
# do: `--target=cuda` without an NVIDIA GPU must exit 2 saying so (as the
# tour's comment says), and `perf record` is skipped where perf cannot
# record. Prints one line per command (`ok`, `ok (no GPU: ...)`, `skipped`
# or `FAIL`), then `N command(s), M failure(s)`.
# Usage: readme_tour.py BINDIR README.md WORKDIR
import os
import shutil
import subprocess
import sys

bindir, readme, work = (os.path.abspath(a) for a in sys.argv[1:4])
root = os.path.dirname(os.path.abspath(readme))
text = open(readme, encoding="utf-8").read()
section = text[text.index("## A short tour"):]
block = section[section.index("```sh\n") + 6:]
block = block[:block.index("```")]
commands = [line for line in block.splitlines() if line.strip()]

os.makedirs(work, exist_ok=True)
link = os.path.join(work, "examples")
if not os.path.lexists(link):
    os.symlink(os.path.join(root, "examples"), link)
# What the tour writes outside WORKDIR goes into it instead: `einc
# calibrate`'s figures ($XDG_CACHE_HOME/ein) and perf's jitdump files.
env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"],
           XDG_CACHE_HOME=os.path.join(work, "cache"),
           JITDUMPDIR=os.path.join(work, "jitdump"))


def has_gpu():
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run(
        [smi, "-L"], capture_output=True).returncode == 0


def perf_records():
    perf = shutil.which("perf")
    return bool(perf) and subprocess.run(
        [perf, "record", "-o", os.devnull, "true"], capture_output=True,
        cwd=work).returncode == 0


failures = 0
for command in commands:
    if command.startswith("EIN_JIT_PERF=1 perf") and not perf_records():
        print(f"skipped (perf cannot record here): {command}")
        continue
    run = subprocess.run(["bash", "-c", command], cwd=work, env=env,
                         capture_output=True, text=True, errors="replace",
                         timeout=600)
    if "einc run" in command and "--target=cuda " in command + " " \
            and not has_gpu():
        if run.returncode == 2 and ("no NVIDIA GPU" in run.stderr or
                                    "no CUDA device" in run.stderr):
            print(f"ok (no GPU: exit 2 as documented): {command}")
        else:
            failures += 1
            print(f"FAIL (expected exit 2 without a GPU, got "
                  f"{run.returncode}): {command}\n{run.stderr[-2000:]}")
        continue
    if run.returncode == 0:
        print(f"ok: {command}")
    else:
        failures += 1
        print(f"FAIL (exit {run.returncode}): {command}\n"
              f"{run.stderr[-2000:]}")
print(f"{len(commands)} command(s), {failures} failure(s)")
sys.exit(1 if failures else 0)
