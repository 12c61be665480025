#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_c_api (tests/fuzz/corpus/) in the input
format that tests/fuzz/fuzz_case.h decodes: a few valid calls of each kind,
and a few of the bad inputs the fuzzer must reject cleanly. Run it again
after a change of the format: python3 tests/fuzz/make_seeds.py
The corpus also keeps regression_* files: inputs the fuzzer once failed on
(libFuzzer's crash-* artifacts, renamed), replayed by the fuzz_corpus ctest."""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

F32, F16, BF16 = 0, 1, 2
NHWC, NCHW = 0, 1
# read_dim's special values, by index (0xE0 + index)
SPECIAL = {-1: 0, 2**31 - 1: 4, 2**31: 5, 2**32: 6, 2**62: 10}
EPS = {1e-4: 0, 1e-3: 1, 0.0: 2, "nan": 8, "inf": 9}


def enum(v):
    return bytes([v]) if 0 <= v < 3 else b"\xf0" + struct.pack("<i", v)


def rank(r):
    if r == 4:
        return b"\x00"
    if r == 5:
        return b"\x80"
    if 0 <= r <= 9:
        return bytes([0xC0 + (r - 2) % 10])
    return b"\xf0" + struct.pack("<i", r)


def dim(d):
    if 0 <= d < 8:
        return bytes([d])
    if 8 <= d < 40:
        return bytes([0xC0 + d - 8])
    if d in SPECIAL:
        return bytes([0xE0 + SPECIAL[d]])
    return b"\xf0" + struct.pack("<q", d)


def seed(shape, dtype=F32, layout=NHWC, training=True, inverse_std=False, eps=1e-4, split=False,
         raw_rank=None, damage=b"\0" * 8, settings=0, elements=None):
    out = bytes([settings, 1 if split else 0])
    out += enum(dtype) + enum(layout) + enum(0)
    out += rank(raw_rank if raw_rank is not None else len(shape))
    dims = list(shape) + [0] * (8 - len(shape))
    out += b"".join(dim(d) for d in dims)
    out += b"\x00" if training else b"\x80"
    out += enum(1 if inverse_std else 0)
    out += bytes([EPS[eps]])
    out += damage
    rng = random.Random(len(out) * 31 + sum(dims))
    n = elements if elements is not None else 2 * _prod(shape) + 3 * 8
    # values in [-4, 4] (bytes 0..0xF7), variance-like bytes positive
    out += bytes(rng.randrange(130, 0xF7) for _ in range(n))
    return out


def _prod(shape):
    p = 1
    for d in shape:
        p *= d
    return min(p, 512)


SEEDS = {
    "valid_f32_nhwc_train": seed([2, 3, 4, 5]),
    "valid_f16_nchw_infer_invstd": seed([1, 3, 2, 2], dtype=F16, layout=NCHW, training=False, inverse_std=True),
    "valid_bf16_ndhwc_split_phase": seed([1, 2, 2, 2, 3], dtype=BF16, split=True),
    "valid_f32_nchw_wide_c": seed([1, 17, 3, 5], layout=NCHW, eps=1e-3, settings=0x10),
    "nan_epsilon": seed([2, 2, 2, 2], eps="nan"),
    "zero_elements": seed([0, 3, 3, 4], split=True),
    "rank_9_view": seed([1] * 8, raw_rank=9),
    "negative_dim": seed([2, -1, 2, 2]),
    "more_than_2e31_elements": seed([2**31, 1, 1, 1]),
    "2e31_minus_1_elements": seed([2**31 - 1, 1, 1, 1]),  # over the limit (validate.h kMaxElements)
    "at_the_limit_elements": seed([2**31 - 2**16, 1, 1, 1]),
    "overflowing_product_with_zero": seed([2**62, 4, 0, 1]),
    "invalid_dtype": seed([1, 2, 2, 2], dtype=7),
    "null_data_scale": seed([1, 2, 2, 2], damage=b"\0\0\xc8\0\0\0\0\0"),
}

if __name__ == "__main__":
    d = os.path.join(HERE, "corpus")
    os.makedirs(d, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} seeds to {d}")
