"""Runs an MPI job (einc ... --ranks N) and signals one of its ranks from
outside, as a crash or a stuck host would: SIGKILL (the rank dies) or
SIGSTOP (it stops answering). No hook in einc: the rank's process is found
among the job's processes by its OMPI_COMM_WORLD_RANK.

    signal_rank.py --rank 1 --signal KILL|STOP [--after REGEX]
        [--within SECONDS] -- COMMAND...

--after: signal once a line of the job's output matches (a step line),
else as soon as the rank's process exists. Prints the job's output, then
"exit N" (its exit status) and "ended within S s" or "HANG: ..." when the
job outlived --within (then it is killed). Processes of the job (its session)
still alive after it ended are reported ("left over: ...") and killed.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("--rank", type=int, default=1)
parser.add_argument("--signal", choices=["KILL", "STOP"], required=True)
parser.add_argument("--after", default=None)
parser.add_argument("--within", type=float, default=60)
parser.add_argument("command", nargs=argparse.REMAINDER)
args = parser.parse_args()
command = args.command[1:] if args.command[:1] == ["--"] else args.command


def session_processes(session):
    """The live processes of `session` (the job's: mpirun keeps its ranks
    in it, also once they outlive it): {pid: its environment's bytes}."""
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) != session or fields[0] == "Z":
                continue
            with open(f"/proc/{d}/environ", "rb") as f:
                found[int(d)] = f.read()
        except (OSError, IndexError, ValueError):
            pass
    return found


def rank_pid(root):
    want = f"OMPI_COMM_WORLD_RANK={args.rank}".encode()
    for pid, env in session_processes(root).items():
        if want in env.split(b"\0"):
            return pid
    return None


started = time.monotonic()
job = subprocess.Popen(command, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, start_new_session=True)
lines = []
matched = threading.Event()


def read():
    for raw in job.stdout:
        line = raw.decode("utf-8", "replace")
        lines.append(line)
        if args.after and re.search(args.after, line):
            matched.set()


reader = threading.Thread(target=read, daemon=True)
reader.start()
deadline = started + args.within
signalled = None
while time.monotonic() < deadline and job.poll() is None and not signalled:
    if args.after is None or matched.is_set():
        pid = rank_pid(job.pid)
        if pid:
            os.kill(pid, getattr(signal, "SIG" + args.signal))
            signalled = pid
            continue
    time.sleep(0.005)
try:
    job.wait(timeout=max(0.0, deadline - time.monotonic()))
    hung = False
except subprocess.TimeoutExpired:
    hung = True
left = [p for p in session_processes(job.pid) if p != job.pid]
for pid in left:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
if hung:
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
reader.join(timeout=5)
sys.stdout.write("".join(lines))
print(f"signalled rank {args.rank} with SIG{args.signal}" if signalled else
      f"never signalled rank {args.rank}")
if hung:
    print(f"HANG: the job outlived {args.within:g} s")
else:
    print(f"exit {job.returncode}")
    print(f"ended within {args.within:g} s")
if left:
    print(f"left over: {len(left)} process(es) of the job")
