"""README.md's "Train a model": its commands run as written, shortened to 20
steps, and give what the section promises (a loss that falls, a validation
loss, the checkpoint, the log and the picture).

usage: readme_train.py EINC_DIR README OUTDIR
"""
import json
import os
import re
import subprocess
import sys

einc_dir, readme, out = sys.argv[1:4]
root = os.path.dirname(os.path.abspath(readme))
text = open(readme).read()
section = text[text.index("## Train a model"):]
section = section[:section.index("\n## ", 3)]
block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
commands = block.replace("\\\n", " ").strip().split("\n")
ok = True
for command in commands:
    command = command.replace("build/bin/einc", os.path.join(einc_dir, "einc"))
    command = command.replace("examples/", os.path.join(root, "examples") + "/")
    command = command.replace("--steps 500", "--steps 20")
    command = command.replace("--eval-every 50", "--eval-every 10")
    command = command.replace("--warmup 50", "--warmup 5")
    env = dict(os.environ, EIN_CACHE_DIR=os.path.join(out, "cache"))
    proc = subprocess.run(command, shell=True, cwd=out, capture_output=True,
                          text=True, env=env)
    print(f"{'ok' if proc.returncode == 0 else 'FAIL'}: {command[:60]}")
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr)
        ok = False
if ok:
    steps = [json.loads(line) for line in open(os.path.join(out, "gpt.jsonl"))]
    losses = [s["loss"] for s in steps if "loss" in s]
    val = [s["val_loss"] for s in steps if "val_loss" in s]
    print(f"{'ok' if len(losses) == 20 and losses[-1] < losses[0] else 'FAIL'}"
          f": the loss falls, {losses[0]:.3f} -> {losses[-1]:.3f}")
    print(f"{'ok' if len(val) == 2 else 'FAIL'}: {len(val)} validation losses")
    for name in ["gpt.safetensors", "gpt-loss.svg"]:
        print(f"{'ok' if os.path.getsize(os.path.join(out, name)) > 0 else 'FAIL'}"
              f": {name} written")
