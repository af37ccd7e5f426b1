"""Compares two disk caches of the same cold start (jit-parts-deterministic
.test): the same file names and bytes; the largest entry's bundle (magic,
count, sizes: ObjectBundle.h) holds several objects; and the losses."""
import json
import os
import struct
import sys

a, b, log_a, log_b = sys.argv[1:5]
names = sorted(os.listdir(a))
assert names == sorted(os.listdir(b)), (names, sorted(os.listdir(b)))
for name in names:
    with open(os.path.join(a, name), "rb") as fa, \
            open(os.path.join(b, name), "rb") as fb:
        assert fa.read() == fb.read(), f"{name} differs"
objects = [n for n in names if n.endswith(".o")]
print("same entries:", len(objects))
largest = max(objects, key=lambda n: os.path.getsize(os.path.join(a, n)))
with open(os.path.join(a, largest), "rb") as f:
    data = f.read()
assert data[:8] == b"EINOBJS1"
count = struct.unpack("<Q", data[8:16])[0]
print(f"split: {count} objects")
loss_a = [json.loads(line)["loss"] for line in open(log_a)]
loss_b = [json.loads(line)["loss"] for line in open(log_b)]
assert len(loss_a) == 1 and loss_a == loss_b, (loss_a, loss_b)
print("same loss")
