#!/usr/bin/env python3
"""Tests of the `fbngrad` command-line tool (shared/spec/CONTRACT.md, "The command line").

Needs Python 3 and numpy only (no TensorFlow). Run:

    python3 tests/cli/test_cli.py --cli build/<dir>/bin/fbngrad [-v] [unittest args]

`fbngrad run` round trips, for every dtype x layout x rank x mode x reserve_space_2
convention, are compared with a float64 numpy implementation of the contract's
formulas, evaluated on the same (already rounded) inputs.

Tolerance rule (per output element; derived from the precisions, as in
src/reference/reference.h, then doubled because this test checks the CLI's plumbing,
not the kernels' last bit):
    u  = 2^-24                      float32 arithmetic (all dtypes compute in float32)
    uT = 2^-24, 2^-11, 2^-8         half an ulp of the stored x_backprop type
                                    (float32, float16, bfloat16); tinyT its smallest subnormal
    err(sum of t over M terms) = (16 + 2*sqrt(M)) * u * sum|t|     (blocked float32 sums)
    offset_backprop:  err(sum dy)
    scale_backprop:   err(sum dy*xc) * |inv| + 8u * |exact|
    x_backprop, training:
        |scale*inv| * (8u * (|dy| + |sum_dy/M| + |xc*inv^2*sum_dyxc/M|)
                       + err(sum dy)/M + |xc|*inv^2*err(sum dy*xc)/M)
    x_backprop, inference:  8u * |exact|
    then for x_backprop: (1 + uT) * that + uT * |exact| + tinyT   (the one rounding to T)
    and every tolerance times 2.
A layout or dtype mix-up, a wrong convention or a wrong epsilon is off by orders of
magnitude more than this. NaN must be NaN and an infinity the same infinity.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

CLI = None  # path of the fbngrad binary, from --cli
# The build's CPU ISAs, best first (from the variant table, via --cpu-isas).
CPU_ISAS = ["avx512", "avx2", "sse41"]
# The build's dtype x layout x mode rows (via --rows; a selective build leaves
# some out, docs/edge-builds.md): those left out must fail, naming their option.
ALL_ROWS = [(d, l, m) for d in ("float32", "float16", "bfloat16") for l in ("NHWC", "NCHW")
            for m in ("training", "inference")]
ROWS = list(ALL_ROWS)


def built(dtype, layout, training):
    return (dtype, layout, "training" if training else "inference") in ROWS

U32 = 2.0 ** -24
UNIT = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
TINY = {"float32": 2.0 ** -149, "float16": 2.0 ** -24, "bfloat16": 2.0 ** -133}
DESCR = {"float32": "<f4", "float16": "<f2", "bfloat16": "<u2"}
OUTPUTS = sorted(["x_backprop.npy", "scale_backprop.npy", "offset_backprop.npy",
                  "reserve_space_3.npy", "reserve_space_4.npy"])
DATA_FORMAT_MESSAGE = ("Value for attr 'data_format' of \"{}\" is not in the list of allowed values: "
                       "\"NHWC\", \"NCHW\", \"NDHWC\", \"NCDHW\"")


# ---- bfloat16 as raw bits ----

def to_bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even, NaN kept a quiet NaN."""
    b = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    r[nan] = ((b[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def encode(a, dtype):
    """float32 values -> the array the CLI reads for `dtype`."""
    if dtype == "float32":
        return a.astype(np.float32)
    if dtype == "float16":
        return a.astype(np.float16)
    return to_bf16_bits(a.astype(np.float32))


def decode(a, dtype):
    """The CLI's array for `dtype` -> float64 values."""
    if dtype == "bfloat16":
        return from_bf16_bits(a).astype(np.float64)
    return a.astype(np.float64)


# ---- the contract's formulas in float64, with the tolerances above ----

def reference(dy, x, scale, mean, rs2, epsilon, layout, training, inverse_std, dtype):
    caxis = x.ndim - 1 if layout == "NHWC" else 1
    axes = tuple(a for a in range(x.ndim) if a != caxis)
    C = x.shape[caxis]
    M = x.size // C if C else 0
    b = [1] * x.ndim
    b[caxis] = C
    scale, mean, rs2 = (np.asarray(v, np.float64) for v in (scale, mean, rs2))
    eps = float(np.float32(epsilon))
    with np.errstate(all="ignore"):
        inv = rs2 if inverse_std else 1.0 / np.sqrt(rs2 + eps)
        xc = x - mean.reshape(b)
        sum_dy = dy.sum(axis=axes)
        sum_dyxc = (dy * xc).sum(axis=axes)
        ksum = (16 + 2 * np.sqrt(M)) * U32
        err_dy = ksum * np.abs(dy).sum(axis=axes)
        err_dyxc = ksum * np.abs(dy * xc).sum(axis=axes)
        a = (scale * inv).reshape(b)
        invb = inv.reshape(b)
        if training:
            dy_mean = (sum_dy / M).reshape(b)
            k2 = (inv * inv * sum_dyxc / M).reshape(b)
            dx = a * (dy - dy_mean - xc * k2)
            err = np.abs(a) * (8 * U32 * (np.abs(dy) + np.abs(dy_mean) + np.abs(xc * k2))
                               + (err_dy / M).reshape(b) + np.abs(xc) * invb * invb * (err_dyxc / M).reshape(b))
        else:
            dx = dy * a
            err = 8 * U32 * np.abs(dx)
        dx_tol = 2 * ((1 + UNIT[dtype]) * err + UNIT[dtype] * np.abs(dx) + TINY[dtype])
        ds = sum_dyxc * inv
        ds_tol = 2 * (err_dyxc * np.abs(inv) + 8 * U32 * np.abs(ds))
        do_tol = 2 * err_dy
    return (dx, dx_tol), (ds, ds_tol), (sum_dy, do_tol)


def assert_close(tc, name, got, want, tol):
    got = np.asarray(got, np.float64)
    tc.assertEqual(got.shape, want.shape, name)
    nan = np.isnan(want)
    inf = np.isinf(want)
    tc.assertTrue(np.array_equal(np.isnan(got), nan), f"{name}: NaNs differ")
    tc.assertTrue(np.array_equal(got[inf], want[inf]), f"{name}: infinities differ")
    fin = ~(nan | inf)
    err = np.abs(got[fin] - want[fin])
    bad = err > tol[fin]
    if bad.any():
        i = int(np.argmax(bad))
        tc.fail(f"{name}: {int(bad.sum())} of {err.size} elements off, e.g. got {got[fin][i]!r} "
                f"expected {want[fin][i]!r} +- {tol[fin][i]:.3g}")


# ---- running the CLI ----

def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_text(path):
    with open(path) as f:
        return f.read()


def run_cli(*args, env=None):
    full_env = dict(os.environ)
    full_env.pop("FBNGRAD_ISA", None)
    if env:
        full_env.update(env)
    p = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, env=full_env, timeout=120)
    return p.returncode, p.stdout, p.stderr


class CliCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fbngrad_cli_test_")
        self.rng = np.random.default_rng(1234)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def save(self, name, array):
        p = self.path(name)
        np.save(p, array)
        return p

    def problem(self, shape, layout="NHWC", dtype="float32", inverse_std=False, epsilon=1e-4):
        """Writes a random problem; returns (file args, float64 inputs)."""
        caxis = len(shape) - 1 if layout == "NHWC" else 1
        C = shape[caxis]
        b = [1] * len(shape)
        b[caxis] = C
        dy = encode(self.rng.uniform(-1, 1, shape).astype(np.float32), dtype)
        shift = self.rng.uniform(-0.5, 0.5, C).reshape(b)
        x = encode((self.rng.uniform(-1, 1, shape) * 1.5 + shift).astype(np.float32), dtype)
        xd = decode(x, dtype)
        axes = tuple(a for a in range(len(shape)) if a != caxis)
        mean = (xd.mean(axis=axes) if xd.size else np.zeros(C)).astype(np.float32)
        var = (xd.var(axis=axes) if xd.size else np.ones(C)).astype(np.float32)
        rs2 = (1 / np.sqrt(var.astype(np.float64) + np.float32(epsilon))).astype(np.float32) if inverse_std else var
        scale = self.rng.uniform(0.5, 1.5, C).astype(np.float32)
        files = ["--y-backprop", self.save("dy.npy", dy), "--x", self.save("x.npy", x),
                 "--scale", self.save("scale.npy", scale), "--reserve-space-1", self.save("mean.npy", mean),
                 "--reserve-space-2", self.save("rs2.npy", rs2)]
        return files, dict(dy=decode(dy, dtype), x=xd, scale=scale, mean=mean, rs2=rs2, raw_x=x)

    def assert_fails(self, args, expected, out, code=None):
        """Non-zero exit, `expected` in stderr, and nothing at `out` if it did not exist."""
        existed = os.path.exists(out)
        before = sorted(os.listdir(out)) if existed and os.path.isdir(out) else None
        rc, stdout, stderr = run_cli(*args)
        self.assertNotEqual(rc, 0, f"expected a failure, got rc 0; stdout: {stdout}")
        if code is not None:
            self.assertEqual(rc, code, stderr)
        self.assertIn(expected, stderr)
        if existed:
            if before is not None:
                self.assertEqual(sorted(os.listdir(out)), before, "the output directory changed")
        else:
            self.assertFalse(os.path.exists(out), f"{out} was created")
        return stderr


class RunRoundTrip(CliCase):
    """`fbngrad run` against the float64 formulas, every combination."""

    def setUp(self):
        super().setUp()
        # Every test but the combinations (which checks the rows left out) runs float32 NHWC.
        if self._testMethodName != "test_all_combinations" and not (
                built("float32", "NHWC", True) and built("float32", "NHWC", False)):
            self.skipTest("float32 NHWC was left out of this build")

    SHAPES = {4: (2, 3, 4, 5), 5: (2, 3, 2, 2, 4)}  # logical N,(D,)H,W,C

    def check(self, dtype, layout, rank, training, inverse_std, epsilon=1e-4, shape=None):
        logical = shape or self.SHAPES[rank]
        shape = logical if layout == "NHWC" else (logical[0], logical[-1], *logical[1:-1])
        files, v = self.problem(shape, layout, dtype, inverse_std, epsilon)
        out = self.path("out", "nested")  # created by the CLI, parents too
        data_format = {("NHWC", 4): "NHWC", ("NCHW", 4): "NCHW", ("NHWC", 5): "NDHWC", ("NCHW", 5): "NCDHW"}
        args = ["run", *files, "--out", out, "--data-format", data_format[layout, len(shape)],
                "--is-training", "true" if training else "false",
                "--reserve-space-2-is", "inverse_std" if inverse_std else "variance",
                "--epsilon", repr(epsilon)]
        if dtype == "bfloat16":
            args += ["--dtype", "bfloat16"]
        if not built(dtype, layout, training):  # left out of this build: an error that says so, nothing written
            self.assert_fails(args, "left out of this build of fbngrad", out, code=1)
            return
        rc, stdout, stderr = run_cli(*args)
        self.assertEqual(rc, 0, stderr)
        self.assertEqual(sorted(os.listdir(out)), OUTPUTS, "exactly the five outputs, no temporaries")

        dx = np.load(os.path.join(out, "x_backprop.npy"))
        ds = np.load(os.path.join(out, "scale_backprop.npy"))
        do = np.load(os.path.join(out, "offset_backprop.npy"))
        C = shape[-1] if layout == "NHWC" else shape[1]
        self.assertEqual(dx.dtype.str, DESCR[dtype])
        self.assertEqual(dx.shape, tuple(shape))
        for a in (ds, do):
            self.assertEqual(a.dtype.str, "<f4")
            self.assertEqual(a.shape, (C,))
        for name in ("reserve_space_3.npy", "reserve_space_4.npy"):
            r = np.load(os.path.join(out, name))
            self.assertEqual((r.dtype.str, r.shape), ("<f4", (0,)), name)

        (wdx, tdx), (wds, tds), (wdo, tdo) = reference(
            v["dy"], v["x"], v["scale"], v["mean"], v["rs2"], epsilon, layout, training, inverse_std, dtype)
        assert_close(self, "x_backprop", decode(dx, dtype), wdx, tdx)
        assert_close(self, "scale_backprop", ds, wds, tds)
        assert_close(self, "offset_backprop", do, wdo, tdo)

    def test_all_combinations(self):
        for dtype in ("float32", "float16", "bfloat16"):
            for layout in ("NHWC", "NCHW"):
                for rank in (4, 5):
                    for training in (True, False):
                        for inverse_std in (False, True):
                            with self.subTest(dtype=dtype, layout=layout, rank=rank, training=training,
                                              inverse_std=inverse_std):
                                self.check(dtype, layout, rank, training, inverse_std)
                                shutil.rmtree(self.path("out"), ignore_errors=True)

    def test_defaults(self):
        """No optional flags: NHWC, training, variance, epsilon 0.0001."""
        files, v = self.problem((2, 2, 3, 4))
        out = self.path("out")
        rc, _, stderr = run_cli("run", *files, "--out", out)
        self.assertEqual(rc, 0, stderr)
        (wdx, tdx), (wds, tds), _ = reference(v["dy"], v["x"], v["scale"], v["mean"], v["rs2"], 1e-4,
                                              "NHWC", True, False, "float32")
        assert_close(self, "x_backprop", np.load(os.path.join(out, "x_backprop.npy")), wdx, tdx)
        assert_close(self, "scale_backprop", np.load(os.path.join(out, "scale_backprop.npy")), wds, tds)

    def test_large_epsilon_matters(self):
        self.check("float32", "NHWC", 4, True, False, epsilon=0.5)

    def test_explicit_dtype_matching_files(self):
        if not built("float16", "NHWC", True):
            self.skipTest("float16 NHWC training was left out of this build")
        files, _ = self.problem((1, 2, 2, 3), dtype="float16")
        out = self.path("out")
        rc, _, stderr = run_cli("run", *files, "--out", out, "--dtype", "float16")
        self.assertEqual(rc, 0, stderr)
        self.assertEqual(np.load(os.path.join(out, "x_backprop.npy")).dtype.str, "<f2")

    def test_nan_epsilon_propagates(self):
        files, v = self.problem((2, 2, 2, 3))
        out = self.path("out")
        rc, _, stderr = run_cli("run", *files, "--out", out, "--epsilon", "nan")
        self.assertEqual(rc, 0, stderr)
        self.assertTrue(np.isnan(np.load(os.path.join(out, "x_backprop.npy"))).all())
        self.assertTrue(np.isnan(np.load(os.path.join(out, "scale_backprop.npy"))).all())
        do = np.load(os.path.join(out, "offset_backprop.npy"))  # sum dy: no epsilon in it
        self.assertTrue(np.isfinite(do).all())

    def test_inf_epsilon(self):
        files, _ = self.problem((2, 2, 2, 3))
        out = self.path("out")
        rc, _, stderr = run_cli("run", *files, "--out", out, "--epsilon", "inf", "--is-training", "false")
        self.assertEqual(rc, 0, stderr)
        dx = np.load(os.path.join(out, "x_backprop.npy"))
        self.assertTrue((dx == 0).all())  # dy * scale * 1/sqrt(inf) = +-0

    def test_zero_elements(self):
        files, _ = self.problem((0, 2, 2, 3))
        out = self.path("out")
        rc, _, stderr = run_cli("run", *files, "--out", out)
        self.assertEqual(rc, 0, stderr)
        dx = np.load(os.path.join(out, "x_backprop.npy"))
        self.assertEqual((dx.dtype.str, dx.shape), ("<f4", (0, 2, 2, 3)))
        for name in ("scale_backprop.npy", "offset_backprop.npy"):
            a = np.load(os.path.join(out, name))
            self.assertEqual(a.shape, (3,))
            self.assertTrue((a == 0).all())

    def test_existing_output_dir_is_overwritten(self):
        files, _ = self.problem((1, 2, 2, 3))
        out = self.path("out")
        os.makedirs(out)
        with open(os.path.join(out, "x_backprop.npy"), "w") as f:
            f.write("old")
        with open(os.path.join(out, "unrelated.txt"), "w") as f:
            f.write("keep")
        rc, _, stderr = run_cli("run", *files, "--out", out)
        self.assertEqual(rc, 0, stderr)
        self.assertEqual(np.load(os.path.join(out, "x_backprop.npy")).shape, (1, 2, 2, 3))
        self.assertEqual(sorted(os.listdir(out)), sorted(OUTPUTS + ["unrelated.txt"]))

    def test_npy_versions_2_and_3_are_read(self):
        files, v = self.problem((1, 2, 2, 3))
        # Rewrite x as a version 2.0 and dy as a version 3.0 file.
        for flag, version in (("--x", (2, 0)), ("--y-backprop", (3, 0))):
            p = files[files.index(flag) + 1]
            a = np.load(p)
            with open(p, "wb") as f:
                np.lib.format.write_array(f, a, version=version)
        out = self.path("out")
        rc, _, stderr = run_cli("run", *files, "--out", out)
        self.assertEqual(rc, 0, stderr)


class RunErrors(CliCase):
    """Every error: non-zero exit, the message on stderr, no output files."""

    def files(self, shape=(2, 2, 2, 4), dtype="float32"):
        files, _ = self.problem(shape, dtype=dtype)
        return files

    def replace(self, files, flag, array=None, raw=None):
        p = self.path(flag.strip("-") + "_replaced.npy")
        if raw is not None:
            with open(p, "wb") as f:
                f.write(raw)
        else:
            np.save(p, array)
        files = list(files)
        files[files.index(flag) + 1] = p
        return files, p

    def test_shape_mismatch(self):
        files, _ = self.replace(self.files((2, 2, 2, 2)), "--y-backprop", np.zeros((2, 2, 2, 3), np.float32))
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out],
                          "x and y_backprop must have same shape, but x has shape [2,2,2,2] and "
                          "y_backprop has shape [2,2,2,3]", out)

    def test_scale_wrong_channels(self):
        files, _ = self.replace(self.files((2, 2, 2, 4)), "--scale", np.ones(3, np.float32))
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out],
                          "scale must have the same number of elements as the channels of x, got 3 and 4", out)

    def test_rank_3_input(self):
        files = self.files((2, 2, 2, 2))
        files, _ = self.replace(files, "--y-backprop", np.zeros((2, 2, 2), np.float32))
        files, _ = self.replace(files, "--x", np.zeros((2, 2, 2), np.float32))
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out], "input must be 4 or 5-dimensional[2,2,2]", out)

    def test_bad_data_format(self):
        out = self.path("out")
        for bad in ("NCWH", "nhwc", ""):
            with self.subTest(data_format=bad):
                self.assert_fails(["run", *self.files(), "--out", out, "--data-format", bad],
                                  DATA_FORMAT_MESSAGE.format(bad), out)

    def test_bad_epsilon(self):
        out = self.path("out")
        for bad in ("abc", "1e-4x", ""):
            with self.subTest(epsilon=bad):
                self.assert_fails(["run", *self.files(), "--out", out, "--epsilon", bad], "is not a number", out)

    def test_bad_is_training(self):
        out = self.path("out")
        self.assert_fails(["run", *self.files(), "--out", out, "--is-training", "yes"], "--is-training", out,
                          code=2)

    def test_truncated_data(self):
        files = self.files()
        p = files[files.index("--x") + 1]
        files, p2 = self.replace(files, "--x", raw=read_bytes(p)[:-5])
        out = self.path("out")
        stderr = self.assert_fails(["run", *files, "--out", out], "truncated", out)
        self.assertIn(p2, stderr)

    def test_truncated_header(self):
        files = self.files()
        p = files[files.index("--x") + 1]
        files, p2 = self.replace(files, "--x", raw=read_bytes(p)[:30])
        out = self.path("out")
        stderr = self.assert_fails(["run", *files, "--out", out], "truncated", out)
        self.assertIn(p2, stderr)

    def test_trailing_bytes(self):
        files = self.files()
        p = files[files.index("--scale") + 1]
        files, p2 = self.replace(files, "--scale", raw=read_bytes(p) + b"\0\0\0\0")
        out = self.path("out")
        stderr = self.assert_fails(["run", *files, "--out", out], "unexpected bytes", out)
        self.assertIn(p2, stderr)

    def test_wrong_magic(self):
        files, p = self.replace(self.files(), "--y-backprop", raw=b"NOTNUMPY" + b"\0" * 100)
        out = self.path("out")
        stderr = self.assert_fails(["run", *files, "--out", out], "not a .npy file", out)
        self.assertIn(p, stderr)

    def test_empty_file(self):
        files, p = self.replace(self.files(), "--y-backprop", raw=b"")
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out], p, out)

    def test_malformed_header(self):
        header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }"
        header += b" " * (64 - 10 - len(header) - 1) + b"\n"
        raw = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header
        files, p = self.replace(self.files(), "--x", raw=raw)
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out], "malformed .npy header", out)

    def test_fortran_order(self):
        x = np.asfortranarray(np.zeros((2, 2, 2, 4), np.float32))
        files, p = self.replace(self.files(), "--x", x)
        self.assertIn(b"'fortran_order': True", read_bytes(p)[:128])
        out = self.path("out")
        stderr = self.assert_fails(["run", *files, "--out", out], "Fortran-order", out)
        self.assertIn(p, stderr)

    def test_int32_dtype(self):
        files, p = self.replace(self.files(), "--x", np.zeros((2, 2, 2, 4), np.int32))
        out = self.path("out")
        stderr = self.assert_fails(["run", *files, "--out", out], "unsupported dtype '<i4'", out)
        self.assertIn(p, stderr)

    def test_big_endian(self):
        files, p = self.replace(self.files(), "--x", np.zeros((2, 2, 2, 4), ">f4"))
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out], "unsupported dtype '>f4'", out)

    def test_float64_scale(self):
        files, p = self.replace(self.files(), "--scale", np.ones(4, np.float64))
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out], "unsupported dtype '<f8'", out)

    def test_float16_scale(self):
        files, p = self.replace(self.files(), "--scale", np.ones(4, np.float16))
        out = self.path("out")
        stderr = self.assert_fails(["run", *files, "--out", out], "scale must be float32 ('<f4')", out)
        self.assertIn(p, stderr)

    def test_u2_without_dtype_bfloat16(self):
        files = self.files(dtype="bfloat16")
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out], "only together with --dtype bfloat16", out)
        self.assert_fails(["run", *files, "--out", out, "--dtype", "float16"], "needs '<f2'", out)

    def test_dtype_flag_must_match_files(self):
        out = self.path("out")
        self.assert_fails(["run", *self.files(), "--out", out, "--dtype", "bfloat16"], "needs '<u2'", out)

    def test_mixed_dtypes(self):
        files, _ = self.replace(self.files(), "--x", np.zeros((2, 2, 2, 4), np.float16))
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out], "they must have the same dtype", out)

    def test_rank_9_in_file(self):
        files, p = self.replace(self.files(), "--x", np.zeros((1,) * 9, np.float32))
        out = self.path("out")
        stderr = self.assert_fails(["run", *files, "--out", out], "rank 9", out)
        self.assertIn(p, stderr)

    def test_missing_file(self):
        files = self.files()
        missing = self.path("no_such_file.npy")
        files[files.index("--reserve-space-2") + 1] = missing
        out = self.path("out")
        stderr = self.assert_fails(["run", *files, "--out", out], "No such file or directory", out)
        self.assertIn(missing, stderr)

    def test_directory_as_input(self):
        files = self.files()
        files[files.index("--scale") + 1] = self.tmp
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out], "is a directory", out)

    def test_unwritable_out_dir(self):
        regular = self.path("regular_file")
        with open(regular, "w") as f:
            f.write("x")
        out = os.path.join(regular, "out")
        self.assert_fails(["run", *self.files(), "--out", out], "is not a directory", out)
        self.assertEqual(read_text(regular), "x")
        # --out naming a regular file
        self.assert_fails(["run", *self.files(), "--out", regular], "is not a directory", regular)
        self.assertEqual(read_text(regular), "x")

    @unittest.skipUnless(hasattr(os, "fork"), "needs POSIX resource limits")
    def test_write_failure_rolls_back(self):
        """A write that fails half-way (file size limit) leaves no file and no created directory."""
        import resource
        import signal

        def limit():  # in the child: writes past 140 bytes fail with EFBIG instead of killing it
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (140, 140))

        files = self.files((1, 2, 2, 4))  # x_backprop.npy: 128-byte header + 64 bytes
        for out, existed in ((self.path("new", "deeper"), False), (self.path("existing"), True)):
            with self.subTest(existing=existed):
                if existed:
                    os.makedirs(out)
                p = subprocess.run([CLI, "run", *files, "--out", out], capture_output=True, text=True,
                                   preexec_fn=limit, timeout=60)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn("write failed", p.stderr)
                if existed:
                    self.assertEqual(os.listdir(out), [])
                else:
                    self.assertFalse(os.path.exists(self.path("new")), "created directories were not removed")

    def test_cuda_device(self):
        import json
        out = self.path("out")
        rc, stdout, _ = run_cli("info", "--json")
        if not json.loads(stdout).get("cuda_available"):
            self.assert_fails(["run", *self.files(), "--out", out, "--device", "cuda"],
                              "no CUDA device available", out)
            return
        # On a GPU: the same outputs as on the CPU, within float32 rounding.
        files = self.files(shape=(3, 5, 7, 33))
        cpu = self.path("cpu")
        for d, where in ((cpu, "cpu"), (out, "cuda")):
            rc, _, stderr = run_cli("run", *files, "--out", d, "--device", where)
            self.assertEqual(rc, 0, stderr)
        for name in ("x_backprop.npy", "scale_backprop.npy", "offset_backprop.npy"):
            a, b = np.load(os.path.join(cpu, name)), np.load(os.path.join(out, name))
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4, err_msg=name)

    def test_failure_leaves_existing_dir_untouched(self):
        out = self.path("out")
        os.makedirs(out)
        with open(os.path.join(out, "x_backprop.npy"), "w") as f:
            f.write("old")
        files, _ = self.replace(self.files(), "--scale", np.ones(3, np.float32))
        self.assert_fails(["run", *files, "--out", out], "scale must have the same number", out)
        self.assertEqual(read_text(os.path.join(out, "x_backprop.npy")), "old")

    def test_missing_required_option(self):
        files = self.files()
        out = self.path("out")
        self.assert_fails(["run", *files], "--out", out, code=2)
        i = files.index("--scale")
        self.assert_fails(["run", *(files[:i] + files[i + 2:]), "--out", out], "--scale", out, code=2)



def npy_bytes(header_text, data=b"", version=1):
    """A .npy file with this header text (padded to 64 bytes) and data, valid or not."""
    h = header_text.encode("latin-1") if isinstance(header_text, str) else header_text
    pre = 6 + 2 + (2 if version == 1 else 4)
    h += b" " * ((-(pre + len(h) + 1)) % 64) + b"\n"
    size = len(h).to_bytes(2 if version == 1 else 4, "little")
    return b"\x93NUMPY" + bytes([version, 0]) + size + h + data


class RunBadHeaders(CliCase):
    """Headers that lie about the size, or are not what numpy writes: a clean error,
    no outputs, and no attempt to allocate what the header claims (tests/fuzz covers
    the C API; these are the file reader's cases test RunErrors leaves out)."""

    def run_with_x(self, raw, expected):
        files = self.files()
        p = self.path("x_bad.npy")
        with open(p, "wb") as f:
            f.write(raw)
        files[files.index("--x") + 1] = p
        out = self.path("out")
        stderr = self.assert_fails(["run", *files, "--out", out], expected, out)
        self.assertIn(p, stderr)

    def files(self):
        files, _ = self.problem((2, 2, 2, 4))
        return files

    def test_huge_shape_small_file(self):
        # 2^31 float32 elements = 8 GiB claimed, 16 bytes there: refused from the file size.
        hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648, 1, 1, 1), }"
        self.run_with_x(npy_bytes(hdr, b"\0" * 16), "truncated .npy file: the shape needs 8589934592 bytes")

    def test_shape_overflowing_64_bits(self):
        hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296, 1), }"
        self.run_with_x(npy_bytes(hdr), "the array is too large")

    def test_dimension_with_too_many_digits(self):
        hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 1, 1, 1), }"
        self.run_with_x(npy_bytes(hdr), "a dimension is too large")

    def test_negative_dimension(self):
        hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2, 2, 4), }"
        self.run_with_x(npy_bytes(hdr), "the shape must be a tuple of non-negative integers")

    def test_nul_bytes_in_header(self):
        hdr = b"{'descr': '<f4',\0'fortran_order': False, 'shape': (2, 2, 2, 4), }"
        self.run_with_x(npy_bytes(hdr, b"\0" * 128), "malformed .npy header")

    def test_implausible_header_length(self):
        raw = b"\x93NUMPY\x02\x00" + (0xFFFFFFF0).to_bytes(4, "little") + b"{"
        self.run_with_x(raw, "the .npy header is implausibly long")

    def test_missing_shape_key(self):
        self.run_with_x(npy_bytes("{'descr': '<f4', 'fortran_order': False, }"),
                        "the keys 'descr', 'fortran_order' and 'shape' are required")

    def test_unknown_npy_version(self):
        self.run_with_x(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }")[:6] + b"\x04\x00" +
                        b"\x00" * 60, "unsupported .npy format version 4.0")

    def test_scalar_scale(self):
        files = self.files()
        p = self.save("scale0.npy", np.float32(1.0))
        files[files.index("--scale") + 1] = p
        out = self.path("out")
        self.assert_fails(["run", *files, "--out", out], "scale must be 1-dimensional[]", out)

    def fifo_with(self, raw):
        """A named pipe that a thread fills with raw (once the CLI opens it)."""
        import threading
        fifo = self.path("x.fifo")
        os.mkfifo(fifo)

        def feed():
            try:
                with open(fifo, "wb") as f:
                    f.write(raw)
            except BrokenPipeError:  # the CLI stopped reading: fine
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        return fifo, writer

    @unittest.skipUnless(hasattr(os, "mkfifo"), "needs named pipes")
    def test_pipe_claiming_16_gib(self):
        """A pipe has no size to check up front: a header claiming 16 GiB followed by
        16 bytes must fail as truncated, reading only what arrives (not allocating
        16 GiB first), and quickly."""
        import time
        hdr = "{'descr': '<f2', 'fortran_order': False, 'shape': (8589934592, 1, 1, 1), }"
        fifo, writer = self.fifo_with(npy_bytes(hdr, b"\0" * 16))
        files = self.files()
        files[files.index("--x") + 1] = fifo
        out = self.path("out")
        start = time.monotonic()
        self.assert_fails(["run", *files, "--out", out], "truncated .npy file", out)
        self.assertLess(time.monotonic() - start, 20)
        writer.join(5)

    @unittest.skipUnless(hasattr(os, "mkfifo"), "needs named pipes")
    def test_pipe_with_valid_data(self):
        """The same reader takes a valid array from a pipe: the run succeeds."""
        files = self.files()
        i = files.index("--x") + 1
        fifo, writer = self.fifo_with(read_bytes(files[i]))
        files[i] = fifo
        rc, _, stderr = run_cli("run", *files, "--out", self.path("out"))
        self.assertEqual(rc, 0, stderr)
        self.assertEqual(sorted(os.listdir(self.path("out"))), OUTPUTS)
        writer.join(5)


class Usage(CliCase):
    def test_unknown_command(self):
        rc, _, stderr = run_cli("frobnicate")
        self.assertEqual(rc, 2)
        self.assertIn("unknown command 'frobnicate'", stderr)

    def test_no_command(self):
        rc, _, stderr = run_cli()
        self.assertEqual(rc, 2)
        self.assertIn("Usage", stderr)

    def test_unknown_flag(self):
        for cmd in ("demo", "run", "info"):
            with self.subTest(command=cmd):
                rc, _, stderr = run_cli(cmd, "--no-such-flag")
                self.assertEqual(rc, 2)
                self.assertIn("--no-such-flag", stderr)

    def test_bad_choice(self):
        rc, _, stderr = run_cli("run", "--device", "tpu")
        self.assertEqual(rc, 2)
        self.assertIn("--device", stderr)

    def test_help(self):
        for cmd, words in ((None, ["demo", "run", "info"]),
                           ("demo", ["--dtype", "--shape", "--iterations", "--threads"]),
                           ("run", ["--y-backprop", "--reserve-space-2-is", "--device", "--dtype", "--out"]),
                           ("info", ["--json"])):
            with self.subTest(command=cmd):
                rc, stdout, _ = run_cli(*([cmd] if cmd else []), "--help")
                self.assertEqual(rc, 0)
                for w in words:
                    self.assertIn(w, stdout)

    def test_version(self):
        rc, stdout, _ = run_cli("--version")
        self.assertEqual(rc, 0)
        self.assertRegex(stdout.strip(), r"^\d+\.\d+\.\d+$")


class Demo(CliCase):
    def test_default_problem(self):
        if not built("float32", "NHWC", True):
            self.skipTest("float32 NHWC training was left out of this build")
        rc, stdout, stderr = run_cli("demo")
        self.assertEqual(rc, 0, stdout + stderr)
        self.assertEqual(stdout.strip().splitlines()[-1], "PASS")
        for w in ("[32,56,56,64]", "variant:", "fbng_f32_nhwc_train_", "cpu features:", "threads:",
                  "median time:", "GB/s", "max abs error:", "worst error/tol:"):
            self.assertIn(w, stdout)

    def test_options(self):
        for args in (["--dtype", "bfloat16", "--layout", "NCHW", "--shape", "2,5,5,8", "--is-training", "false"],
                     ["--dtype", "float16", "--shape", "2,3,4,5,6", "--data-format", "NDHWC", "--threads", "1",
                      "--iterations", "3", "--reserve-space-2-is", "inverse_std"],
                     ["--shape", "0,4,4,8"]):
            with self.subTest(args=args):
                dtype = args[args.index("--dtype") + 1] if "--dtype" in args else "float32"
                layout = args[args.index("--layout") + 1] if "--layout" in args else "NHWC"
                if not built(dtype, layout, "false" not in args):
                    continue  # left out of this build
                rc, stdout, stderr = run_cli("demo", *args)
                self.assertEqual(rc, 0, stdout + stderr)
                self.assertIn("PASS", stdout)

    def test_bad_shape(self):
        rc, _, stderr = run_cli("demo", "--shape", "2,3")
        self.assertEqual(rc, 2)
        self.assertIn("--shape", stderr)


class Info(CliCase):
    def test_text(self):
        rc, stdout, stderr = run_cli("info")
        self.assertEqual(rc, 0, stderr)
        # 12 hand-scheduled CPU variants per ISA (x86-64: 36, AArch64: 24), 12 CUDA ones where the
        # build has them, and the tuned ones (generators/tuned/), whose last column names their classes.
        lines = [line.split() for line in stdout.splitlines() if line.strip().startswith("fbng_")]
        hand = [f for f in lines if f[-1] == "-"]
        self.assertIn(len(hand), (len(ROWS) * len(CPU_ISAS), len(ROWS) * len(CPU_ISAS) + len(ROWS)))
        for d, l, m in ALL_ROWS:  # the rows left out say so where the pick would be
            if (d, l, m) not in ROWS:
                self.assertRegex(stdout, rf"\n  {d} +{l} +{m} +\(not built\)")
        self.assertIn(f"compiled variants ({len(lines)},", stdout)
        for f in lines:  # the CPU classes, or the CUDA single pass's (cmake/variants.cmake)
            if f[-1] != "-":
                self.assertTrue(set(f[-1].split(",")) <= {"small_c", "small_nhw", "cache", "dram", "huge"} or
                                (f[-1] == "plane" and f[0].endswith("_cuda_plane")), f)
        self.assertIn("cpu features:", stdout)
        self.assertIn("cuda:", stdout)
        self.assertIn("forced isa:", stdout)

    def test_json(self):
        import json
        rc, stdout, stderr = run_cli("info", "--json")
        self.assertEqual(rc, 0, stderr)
        j = json.loads(stdout)
        cpu = [v for v in j["variants"] if v["device"] == "cpu" and v["shape_classes"] == ""]
        cuda = [v for v in j["variants"] if v["device"] == "cuda" and v["shape_classes"] == ""]
        self.assertEqual(len(cpu), len(ROWS) * len(CPU_ISAS))
        # The CUDA single pass (cmake/variants.cmake): the plane class of an NCHW CUDA row.
        for t in (v for v in j["variants"] if v["device"] == "cuda" and v["shape_classes"]):
            self.assertEqual((t["shape_classes"], t["layout"]), ("plane", "NCHW"), t)
            self.assertTrue(any(t["name"] == v["name"] + "_plane" for v in cuda), t)
        # A tuned variant (generators/tuned/) serves some shape classes of a row whose
        # hand-scheduled variant exists, on the same ISA.
        for t in (v for v in j["variants"] if v["shape_classes"] and v["device"] == "cpu"):
            self.assertTrue(any((v["dtype"], v["layout"], v["mode"], v["isa"]) ==
                                (t["dtype"], t["layout"], t["mode"], t["isa"]) for v in cpu), t)
            self.assertTrue(t["name"].startswith(next(v["name"] for v in cpu if (v["dtype"], v["layout"], v["mode"],
                                                      v["isa"]) == (t["dtype"], t["layout"], t["mode"], t["isa"]))))
        self.assertIn(len(cuda), (0, len(ROWS)))
        self.assertEqual(len({v["name"] for v in j["variants"]}), len(j["variants"]))
        for v in cuda:  # supported exactly when a CUDA device is usable
            self.assertEqual((v["isa"], v["supported"]), ("cuda", j["cuda_available"]), v)
        self.assertEqual(j["cuda_unavailable_reason"] == "", j["cuda_available"])
        combos = {(v["dtype"], v["layout"], v["mode"]) for v in j["variants"]}
        self.assertEqual(len(combos), len(ROWS))
        self.assertEqual(len(j["selected"]), 12)
        for row in j["selected"]:
            self.assertEqual(row["built"], (row["dtype"], row["layout"], row["mode"]) in ROWS, row)
            if not row["built"]:
                self.assertIsNone(row["cpu"], row)
                continue
            name = row["cpu"]
            self.assertIsNotNone(name)
            v = next(v for v in j["variants"] if v["name"] == name)
            self.assertEqual((v["dtype"], v["layout"], v["mode"], v["supported"]),
                             (row["dtype"], row["layout"], row["mode"], True))
            self.assertEqual(row["cuda"] is not None, bool(cuda) and j["cuda_available"], row)
        self.assertEqual(j["forced_isa"], "")
        # Split phase: per ISA row, a reduce per dtype x layout and an apply per row, CUDA's too.
        split = j["split_phase_variants"]
        per_isa = len(ROWS) + len({(d, l) for d, l, _ in ROWS})
        self.assertEqual(len(split), per_isa * (len(CPU_ISAS) + (1 if cuda else 0)))
        self.assertEqual(sum(1 for v in split if v["phase"] == "reduce" and v["mode"] is None), len(split) // 3)
        self.assertEqual({v["device"] for v in split}, {"cpu", "cuda"} if cuda else {"cpu"})

    def test_forced_isa_from_environment(self):
        import json
        baseline = CPU_ISAS[-1]  # sse41, neon: every CPU of the platform has it
        rc, stdout, stderr = run_cli("info", "--json", env={"FBNGRAD_ISA": baseline})
        self.assertEqual(rc, 0, stderr)
        j = json.loads(stdout)
        self.assertEqual(j["forced_isa"], baseline)
        for row in j["selected"]:
            if row["built"]:
                self.assertTrue(row["cpu"].endswith("_" + baseline), row)


def main():
    global CLI
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, help="path of the fbngrad binary")
    parser.add_argument("--cpu-isas", default=",".join(CPU_ISAS),
                        help="the build's CPU ISAs, best first, comma-separated (default: x86-64's)")
    parser.add_argument("--rows", default=",".join("/".join(r) for r in ALL_ROWS),
                        help="the build's rows, dtype/layout/mode comma-separated (default: every one)")
    args, rest = parser.parse_known_args()
    CLI = os.path.abspath(args.cli)
    CPU_ISAS[:] = args.cpu_isas.split(",")
    ROWS[:] = [tuple(r.split("/")) for r in args.rows.split(",")]
    if not os.access(CLI, os.X_OK):
        sys.exit(f"test_cli.py: {CLI} is not an executable")
    prog = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
