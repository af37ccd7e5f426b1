"""dropout's mask reference (docs/language.md §6): Philox4x64-10 written
from Random123's definition in numpy, checked against Random123's published
known-answer vectors and against numpy's own np.random.Philox (an
independent implementation) before it is used as an oracle."""
import numpy as np

M0, M1 = np.uint64(0xD2E7470EE14C6C93), np.uint64(0xCA5A826395121157)
W0, W1 = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
MASK = (1 << 64) - 1
LO32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)


def _mulhilo(a, b):
    """(hi, lo) of the 128-bit product of uint64 arrays, in 32-bit halves."""
    a0, a1 = a & LO32, a >> S32
    b0, b1 = b & LO32, b >> S32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> S32) + (p01 & LO32) + (p10 & LO32)
    hi = p11 + (p01 >> S32) + (p10 >> S32) + (mid >> S32)
    return hi, a * b


def philox4x64_10(ctr, key):
    """ctr: 4 uint64 arrays, key: 2 ints; the 4 output words."""
    c = [np.asarray(w, dtype=np.uint64) for w in ctr]
    k0, k1 = key[0] & MASK, key[1] & MASK
    with np.errstate(over="ignore"):
        for r in range(10):
            if r:
                k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
            hi0, lo0 = _mulhilo(M0, c[0])
            hi1, lo1 = _mulhilo(M1, c[2])
            c = [hi1 ^ c[1] ^ np.uint64(k0), lo1, hi0 ^ c[3] ^ np.uint64(k1), lo0]
    return c


def keep_mask(n, p, key):
    """Element i kept iff (w0 >> 11) * 2^-53 >= p, w0 = Philox(ctr (i, 0, 0,
    0), key (key, 0)) word 0."""
    i = np.arange(n, dtype=np.uint64)
    z = np.zeros(n, dtype=np.uint64)
    w0 = philox4x64_10([i, z, z, z], [int(key) & MASK, 0])[0]
    u = (w0 >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return u >= p


def dropout(x, p, key):
    """The reference: kept elements times 1 / (1 - p) rounded to x's dtype
    (f32 for narrower floats, computed in f32 and rounded back), others 0."""
    x = np.asarray(x)
    keep = keep_mask(x.size, p, key).reshape(x.shape)
    wide = np.float64 if x.dtype == np.float64 else np.float32
    scale = wide(1.0 / (1.0 - p))
    y = (x.astype(wide) * scale).astype(x.dtype)
    return np.where(keep, y, np.zeros((), x.dtype)), keep


def self_check():
    """Random123's kat_vectors for philox4x64-10, then numpy's Philox."""
    kat = [
        ([0] * 4, [0] * 2, [0x16554d9eca36314c, 0xdb20fe9d672d0fdc,
                            0xd7e772cee186176b, 0x7e68b68aec7ba23b]),
        ([MASK] * 4, [MASK] * 2, [0x87b092c3013fe90b, 0x438c3c67be8d0224,
                                  0x9cc7d7c69cd777b6, 0xa09caebf594f0ba0]),
        ([0x243f6a8885a308d3, 0x13198a2e03707344, 0xa4093822299f31d0,
          0x082efa98ec4e6c89], [0x452821e638d01377, 0xbe5466cf34e90c6c],
         [0xa528f45403e61d95, 0x38c72dbd566e9788, 0xa5a1610e72fd18b5,
          0x57bd43b5e52b7fe6]),
    ]
    for ctr, key, want in kat:
        got = [int(w) for w in philox4x64_10([np.uint64(c) for c in ctr], key)]
        assert got == want, (ctr, key, [hex(g) for g in got])
    for key in [0, 1, 12345, -7]:
        n = 4096
        # numpy's Philox adds one to its counter before each block: start
        # at -1 (mod 2^256) so that block j has counter j; word 0 of each.
        g = np.random.Philox(key=int(key) & MASK, counter=(1 << 256) - 1)
        ref = g.random_raw(4 * n)[0::4]
        i = np.arange(n, dtype=np.uint64)
        z = np.zeros(n, dtype=np.uint64)
        mine = philox4x64_10([i, z, z, z], [int(key) & MASK, 0])[0]
        assert np.array_equal(ref, mine), key


if __name__ == "__main__":
    self_check()
    print("philox ok")
