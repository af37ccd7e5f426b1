"""Copies an ELF executable as another build of it would differ: with
another GNU build id (--flip-build-id: the id's bytes inverted, as a
relink of changed code gives a new one), or with none (--drop-build-id:
the note's type cleared, a binary linked without --build-id), and with
--append BYTES added after the last section (other bytes, the same code).

    rebuild_id.py SOURCE DEST [--flip-build-id] [--drop-build-id]
        [--append TEXT]

Prints the build ids SOURCE and DEST have (read from the section
headers, as einc reads its own from the loaded program headers):
"source build id X", then "copy build id Y" or "copy has no build id".
"""
import argparse
import os
import shutil
import struct

parser = argparse.ArgumentParser()
parser.add_argument("source")
parser.add_argument("dest")
parser.add_argument("--flip-build-id", action="store_true")
parser.add_argument("--drop-build-id", action="store_true")
parser.add_argument("--append", default="")
args = parser.parse_args()

data = bytearray(open(args.source, "rb").read())
assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, \
    "a little-endian ELF64 file"
# The section headers; the build id is the note named GNU of type 3
# (NT_GNU_BUILD_ID) in .note.gnu.build-id.
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)


def section(i):
    return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)


names_offset = section(shstrndx)[4]
note = None
for i in range(shnum):
    name, _, _, _, offset, size = section(i)[:6]
    end = data.index(b"\0", names_offset + name)
    if data[names_offset + name:end] == b".note.gnu.build-id":
        note = offset
assert note is not None, "no .note.gnu.build-id section"
namesz, descsz, kind = struct.unpack_from("<III", data, note)
assert kind == 3 and data[note + 12:note + 16] == b"GNU\0"
desc = note + 12 + (namesz + 3) // 4 * 4
print("source build id " + data[desc:desc + descsz].hex())
if args.flip_build_id:
    for k in range(desc, desc + descsz):
        data[k] ^= 0xFF
if args.drop_build_id:
    struct.pack_into("<I", data, note + 8, 0)
data += args.append.encode()
with open(args.dest, "wb") as f:
    f.write(data)
shutil.copymode(args.source, args.dest)
print("copy has no build id" if args.drop_build_id else
      "copy build id " + data[desc:desc + descsz].hex())
