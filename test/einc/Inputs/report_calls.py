# Checks that each call row of `einc report` (text) holds the sums of the ops
# that `einc report --json` says were inlined from that call, and that the
# by-function table sums every call of a function; prints one line per row.
import json
import sys

table, report = open(sys.argv[1]).read().splitlines(), json.load(open(sys.argv[2]))
fn = report["functions"][0]
failures = 0
rows = [line.split() for line in table if line.split()[1:2] == ["call"]]
for row in rows:
    line, callee, flops, nbytes = int(row[0]), row[2], int(row[3]), int(row[4])
    ops = [op for op in fn["ops"] if op.get("calls") and op["calls"][0]["line"] == line
           and op["calls"][0]["function"] == callee]
    ok = (sum(op["flops"] for op in ops) == flops and
          sum(op["bytes_read"] + op["bytes_written"] for op in ops) == nbytes)
    failures += not ok
    print(f"{'ok' if ok else 'FAIL'} call {callee} at line {line}: {len(ops)} ops, {flops} FLOPs, {nbytes} bytes")
for entry in fn["by_function"]:
    ops = [op for op in fn["ops"] if any(c["function"] == entry["function"] for c in op.get("calls", []))]
    ok = (sum(op["flops"] for op in ops) == entry["flops"] and
          sum(op["bytes_read"] + op["bytes_written"] for op in ops) == entry["bytes"])
    failures += not ok
    print(f"{'ok' if ok else 'FAIL'} {entry['function']}: {entry['calls']} calls, {len(ops)} ops")
print(f"{failures} failure(s)")
