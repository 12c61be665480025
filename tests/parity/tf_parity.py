#!/usr/bin/env python3
"""TensorFlow parity test for fbngrad (shared/spec/CONTRACT.md).

For every case: generate inputs with a fixed seed, write them as .npy files, run
`fbngrad run ...` (the CLI given with --cli) in a subprocess, run
tf.raw_ops.FusedBatchNormGradV2 in this process on the same inputs, and compare.
One line per case, then `N passed, M failed, K skipped`; exit status 1 if anything failed.

    python tf_parity.py --cli build/bin/fbngrad [--filter REGEX] [--keep] [-v]

Run it twice: with the default environment (TensorFlow's oneDNN kernels) and with
TF_ENABLE_ONEDNN_OPTS=0 (TensorFlow's Eigen kernels). tests/parity/CMakeLists.txt
registers both as ctests (tf_parity_onednn, tf_parity_eigen).

What TensorFlow 2.21.0 (tensorflow-cpu wheel, x86-64 Linux) does on CPU for V2, measured
by calling it (this script also re-detects the kernel per call):
  * TF_ENABLE_ONEDNN_OPTS=0: Eigen kernel `FusedBatchNormGradV2` for float32, float16
    AND bfloat16 (2.21 has a CPU bf16 kernel for V2; no "No registered kernel").
    Accepts 4-D and 5-D; rejects is_training=False with NCHW; reserve_space_3/4 are [0].
  * oneDNN on (the default): float32 and bfloat16 are rewritten to
    `_MklNativeFusedBatchNormGradV2`: 4-D only ("input must be 4-dimensional[...]"),
    accepts is_training=False with NCHW, reserve_space_3/4 are scalars (shape []).
    float16 stays on the Eigen kernel unless the CPU has oneDNN's fp16 support
    ("oneDNN supports DT_HALF only on platforms with AVX-512 [FP16]"; on the AMD EPYC
    with AVX-512F used to write this, float16 ran on Eigen; on an Intel Xeon with
    AVX512_FP16, 2026-12-07, every dtype ran on oneDNN).
  Which kernel ran is detected per call: the error text names `_MklNative...`, and on
  success oneDNN returns reserve_space_3 of shape [] where Eigen returns [0].

Documented differences (CONTRACT.md) and how they are checked:
  * is_training=False with NCHW/NCDHW: TF's Eigen kernel raises "The implementation of
    FusedBatchNormGrad with is_training=False only support NHWC tensor format for now."
    The script checks that it does (when the Eigen kernel ran), and compares fbngrad's
    result with TF's result on the channels-last transpose of the same problem.
  * 5-D with the oneDNN kernel: TF raises "input must be 4-dimensional"; fbngrad accepts
    5-D (as TF's Eigen kernel does). Compared with TF on the merged 4-D problem
    ([N,D,H*W,C] / [N,C,D,H*W]: exactly what the Eigen kernel does internally).
  * reserve_space_3/4: fbngrad always writes float32 [0] (the Eigen kernel's shape); a
    oneDNN scalar is reported as a note, not a failure.
  * Error messages: fbngrad follows the Eigen kernel's wording. When TF's message came
    from the oneDNN kernel and differs ("input must be 4-dimensional" vs "input must be
    4 or 5-dimensional"), fbngrad must print the Eigen kernel's message for that case:
    taken from a run of the same case that the Eigen kernel served, or, where oneDNN
    served every dtype of it, from this script run once in a child process with
    TF_ENABLE_ONEDNN_OPTS=0 (--eigen-errors; the option is read when TF loads).

Tolerance rule (from TF's nn_fused_batchnorm_test.py, x_backprop atol 1e-3 for float32,
2e-3 for float16, 2e-2 for bfloat16; scale/offset 1e-3), combined numpy-allclose style:
  x_backprop:                 |fbngrad - tf| <= tol_T * (1 + |tf|),  tol_T = 1e-3 / 2e-3 / 2e-2
  scale_backprop, offset_bp.: |fbngrad - tf| <= 1e-3 * (1 + |tf|)
The relative part is needed because both sides round a float32 result to T once, and one
ulp of T at |x_backprop| ~ 4 is already 2e-3 (float16) / 3e-2 (bfloat16). NaN must meet
NaN, an infinity the same infinity.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np

X_TOL = {"float32": 1e-3, "float16": 2e-3, "bfloat16": 2e-2}
PARAM_TOL = 1e-3
NHWC_ONLY_MSG = ("The implementation of FusedBatchNormGrad with is_training=False only support "
                 "NHWC tensor format for now.")

# Physical shapes, in the case's data format (as TF's tests give them).
SHAPES_4D = [
    [1, 1, 6, 1], [1, 1, 6, 2], [1, 2, 1, 6], [5, 7, 11, 4], [2, 3, 5, 17], [2, 8, 8, 64],
    [1, 1, 1, 1], [4, 14, 14, 96], [0, 7, 11, 4],
]
SHAPES_5D = [[1, 2, 6, 1, 3], [2, 3, 4, 5, 6]]

# name, y_backprop shape, x shape, scale, reserve_space_1, reserve_space_2 shapes, format
ERROR_CASES = [
    ("shape_mismatch", [2, 2, 2, 3], [2, 2, 2, 2], [2], [2], [2], "NHWC"),
    ("scale_wrong_c", [2, 2, 2, 4], [2, 2, 2, 4], [3], [4], [4], "NHWC"),
    ("scale_wrong_c_nchw", [2, 3, 4, 5], [2, 3, 4, 5], [5], [3], [3], "NCHW"),
    ("rs1_wrong_c", [2, 2, 2, 2], [2, 2, 2, 2], [2], [3], [2], "NHWC"),
    ("rs2_wrong_c", [2, 2, 2, 2], [2, 2, 2, 2], [2], [2], [3], "NHWC"),
    ("scale_rank2", [2, 2, 2, 2], [2, 2, 2, 2], [2, 1], [2], [2], "NHWC"),
    ("rank3", [2, 2, 2], [2, 2, 2], [2], [2], [2], "NHWC"),
    ("x_rank3", [2, 2, 2, 2], [2, 2, 2], [2], [2], [2], "NHWC"),
    ("rank6", [1, 1, 1, 1, 1, 2], [1, 1, 1, 1, 1, 2], [2], [2], [2], "NHWC"),
]

DTYPES = ["float16", "float32", "bfloat16"]  # float16 first: without AVX512_FP16 its errors come from Eigen


def error_inputs(case):
    """y_backprop, x, scale, mean, variance of one of ERROR_CASES (float32 arrays)."""
    _, ys, xs, ss, m1, m2, _ = case
    return (np.ones(ys, np.float32), np.ones(xs, np.float32), np.ones(ss, np.float32),
            np.zeros(m1, np.float32), np.ones(m2, np.float32))


def core_message(msg):
    """TF's message without the '{{function_node ...}} ' prefix and ' [Op:...]' suffix."""
    msg = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", msg.strip())
    msg = re.sub(r"\s*\[Op:[^\]]*\].*$", "", msg, flags=re.S)
    return msg.strip()


def shape_str(s):
    return "[" + ",".join(str(d) for d in s) + "]"


class Runner:
    def __init__(self, args, tf):
        self.args = args
        self.tf = tf
        self.bf16 = tf.bfloat16.as_numpy_dtype
        self.tmp = tempfile.mkdtemp(prefix="fbngrad_parity_")
        self.counter = 0
        self.passed = self.failed = self.skipped = 0
        self.eigen_msgs = {}  # error case -> TF Eigen kernel message
        self.asked_eigen = False  # whether the child with TF_ENABLE_ONEDNN_OPTS=0 has run

    # ---- dtypes -------------------------------------------------------------
    def np_dtype(self, dtype):
        return {"float32": np.float32, "float16": np.float16, "bfloat16": self.bf16}[dtype]

    def tf_dtype(self, dtype):
        return {"float32": self.tf.float32, "float16": self.tf.float16, "bfloat16": self.tf.bfloat16}[dtype]

    def to_file_array(self, a, dtype):
        """What the CLI reads: <f4, <f2, or the raw bits of bfloat16 as <u2."""
        if dtype == "bfloat16":
            return np.ascontiguousarray(a.astype(self.bf16)).view("<u2")
        return np.ascontiguousarray(a.astype(self.np_dtype(dtype)))

    # ---- fbngrad --------------------------------------------------------------
    def run_fbngrad(self, dtype, fmt, train, eps, dy, x, scale, mean, var):
        self.counter += 1
        d = os.path.join(self.tmp, "case%04d" % self.counter)
        out = os.path.join(d, "out")
        os.makedirs(out)
        files = {}
        for name, arr, is_t in (("y_backprop", dy, True), ("x", x, True), ("scale", scale, False),
                                ("reserve_space_1", mean, False), ("reserve_space_2", var, False)):
            f = os.path.join(d, name + ".npy")
            np.save(f, self.to_file_array(arr, dtype) if is_t else np.asarray(arr, dtype="<f4"))
            files[name] = f
        cmd = [self.args.cli, "run",
               "--y-backprop", files["y_backprop"], "--x", files["x"], "--scale", files["scale"],
               "--reserve-space-1", files["reserve_space_1"], "--reserve-space-2", files["reserve_space_2"],
               "--out", out, "--epsilon", "%.9g" % np.float32(eps), "--data-format", fmt,
               "--is-training", "true" if train else "false"]
        if dtype == "bfloat16":
            cmd += ["--dtype", "bfloat16"]
        if self.args.verbose:
            print("    $ " + " ".join(cmd))
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        outputs = {}
        if p.returncode == 0:
            for name in ("x_backprop", "scale_backprop", "offset_backprop", "reserve_space_3", "reserve_space_4"):
                f = os.path.join(out, name + ".npy")
                outputs[name] = np.load(f) if os.path.exists(f) else None
        written = sorted(os.listdir(out))
        return p.returncode, p.stderr, outputs, written

    # ---- TensorFlow -------------------------------------------------------------
    def run_tf(self, dtype, tf_fmt, train, eps, dy, x, scale, mean, var):
        tf = self.tf
        t = self.tf_dtype(dtype)
        r = tf.raw_ops.FusedBatchNormGradV2(
            y_backprop=tf.constant(dy.astype(self.np_dtype(dtype)), dtype=t),
            x=tf.constant(x.astype(self.np_dtype(dtype)), dtype=t),
            scale=tf.constant(scale, dtype=tf.float32),
            reserve_space_1=tf.constant(mean, dtype=tf.float32),
            reserve_space_2=tf.constant(var, dtype=tf.float32),
            epsilon=float(eps), data_format=tf_fmt, is_training=train)
        names = ("x_backprop", "scale_backprop", "offset_backprop", "reserve_space_3", "reserve_space_4")
        res = {n: v.numpy() for n, v in zip(names, r)}
        res["kernel"] = "oneDNN" if res["reserve_space_3"].shape == () else "Eigen"
        return res

    def tf_reference(self, dtype, fmt, train, eps, dy, x, scale, mean, var, notes):
        """TF's result for the problem, working around TF's documented refusals."""
        tf = self.tf
        rank = x.ndim
        channels_first = fmt in ("NCHW", "NCDHW")
        tf_fmt = "NCHW" if channels_first else "NHWC"
        try:
            res = self.run_tf(dtype, tf_fmt, train, eps, dy, x, scale, mean, var)
            if channels_first and not train and x.size > 0:
                if res["kernel"] == "Eigen":
                    raise AssertionError("TF's Eigen kernel accepted is_training=False with %s; the contract "
                                         "expects it to raise the NHWC-only error" % fmt)
                notes.append("TF %s accepts inference+%s" % (res["kernel"], fmt))
            return res
        except tf.errors.InvalidArgumentError as e:
            msg = core_message(e.message)
            if NHWC_ONLY_MSG in msg and channels_first and not train:
                notes.append("TF raises the NHWC-only error for inference+%s (documented difference): "
                             "compared with TF on the channels-last transpose" % fmt)
                fwd = (0,) + tuple(range(2, rank)) + (1,)
                back = (0, rank - 1) + tuple(range(1, rank - 1))
                res = self.tf_reference(dtype, "NHWC" if rank == 4 else "NDHWC", train, eps,
                                        dy.transpose(fwd), x.transpose(fwd), scale, mean, var, notes)
                res["x_backprop"] = np.ascontiguousarray(res["x_backprop"].transpose(back))
                return res
            if "input must be 4-dimensional" in msg and rank == 5:
                notes.append("TF oneDNN rejects 5-D ('%s'): compared with TF on the merged 4-D shape" % msg)
                n, a, b, h, w = x.shape  # NCDHW: [N,C,D,H,W] -> [N,C,D,H*W]; NDHWC: [N,D,H,W,C] -> [N,D,H*W,C]
                merged = [n, a, b, h * w] if channels_first else [n, a, b * h, w]
                res = self.tf_reference(dtype, "NCHW" if channels_first else "NHWC", train, eps,
                                        dy.reshape(merged), x.reshape(merged), scale, mean, var, notes)
                res["x_backprop"] = res["x_backprop"].reshape(x.shape)
                return res
            raise

    # ---- reporting ----------------------------------------------------------------
    def report(self, status, name, detail):
        print("%-4s %s  %s" % (status, name, detail), flush=True)
        if status == "PASS":
            self.passed += 1
        elif status == "FAIL":
            self.failed += 1
        else:
            self.skipped += 1

    def selected(self, name):
        return not self.args.filter or re.search(self.args.filter, name)

    # ---- numeric cases --------------------------------------------------------------
    def make_inputs(self, name, dtype, fmt, train, shape):
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        c_axis = 1 if fmt in ("NCHW", "NCDHW") else len(shape) - 1
        C = shape[c_axis]
        t = self.np_dtype(dtype)
        # Round to T first: the statistics below are those of the values both sides see.
        x = (rng.standard_normal(shape) * 1.5 + 0.25).astype(np.float32).astype(t).astype(np.float32)
        dy = rng.standard_normal(shape).astype(np.float32).astype(t).astype(np.float32)
        scale = rng.uniform(-1.5, 1.5, C).astype(np.float32)
        axes = tuple(a for a in range(len(shape)) if a != c_axis)
        if train and x.size > 0:
            xd = x.astype(np.float64)
            mean = xd.mean(axis=axes)
            var = ((xd - np.expand_dims(mean, axes)) ** 2).mean(axis=axes)  # biased, like TF's forward
            mean, var = mean.astype(np.float32), var.astype(np.float32)
        else:
            mean = rng.uniform(-0.5, 0.5, C).astype(np.float32)
            var = rng.uniform(0.5, 2.0, C).astype(np.float32)
        return dy, x, scale, mean, var

    def as_float(self, a, dtype):
        if dtype == "bfloat16" and a.dtype == np.uint16:
            a = a.view(self.bf16)
        return np.asarray(a).astype(np.float64)

    @staticmethod
    def close(got, want, tol):
        """Elementwise |got - want| <= tol * (1 + |want|), NaN == NaN, inf == same inf."""
        got = np.asarray(got, np.float64).ravel()
        want = np.asarray(want, np.float64).ravel()
        nan_ok = np.isnan(got) == np.isnan(want)
        inf_w = np.isinf(want)
        inf_ok = ~inf_w | (got == want)
        fin = np.isfinite(want) & np.isfinite(got)
        bound = tol * (1.0 + np.abs(want))
        err = np.where(fin, np.abs(got - want), 0.0)
        fin_ok = ~np.isfinite(want) | (np.isfinite(got) & (err <= bound))
        ok = nan_ok & inf_ok & fin_ok
        ratio = float(np.max(err / bound)) if err.size else 0.0
        bad = np.flatnonzero(~ok)
        first = None
        if bad.size:
            i = int(bad[0])
            first = "[%d] got %.9g, TF %.9g" % (i, got[i], want[i])
        return bool(ok.all()), ratio, int(bad.size), first

    def numeric_case(self, dtype, fmt, train, shape, eps=1e-4):
        name = "%s/%s/%s/%s" % (dtype, fmt, "train" if train else "infer", shape_str(shape))
        if eps != 1e-4:
            name += "/eps=%g" % eps
        if not self.selected(name):
            return
        notes = []
        dy, x, scale, mean, var = self.make_inputs(name, dtype, fmt, train, shape)
        try:
            ref = self.tf_reference(dtype, fmt, train, eps, dy, x, scale, mean, var, notes)
        except self.tf.errors.NotFoundError as e:
            self.report("SKIP", name, "TF has no kernel here: " + core_message(e.message).splitlines()[0])
            return
        except AssertionError as e:
            self.report("FAIL", name, str(e))
            return
        except self.tf.errors.OpError as e:
            self.report("FAIL", name, "TF raised unexpectedly: " + core_message(e.message))
            return
        rc, err, out, _ = self.run_fbngrad(dtype, fmt, train, eps, dy, x, scale, mean, var)
        if rc != 0:
            self.report("FAIL", name, "fbngrad exited %d: %s" % (rc, err.strip()))
            return
        problems = []
        C = scale.shape[0]
        xb = out.get("x_backprop")
        want_dtype = {"float32": "<f4", "float16": "<f2", "bfloat16": "<u2"}[dtype]
        for n in ("x_backprop", "scale_backprop", "offset_backprop", "reserve_space_3", "reserve_space_4"):
            if out.get(n) is None:
                problems.append("missing %s.npy" % n)
        if problems:
            self.report("FAIL", name, "; ".join(problems))
            return
        if xb.dtype != np.dtype(want_dtype) or xb.shape != x.shape:
            problems.append("x_backprop is %s%s, want %s%s" % (xb.dtype.str, list(xb.shape), want_dtype, list(x.shape)))
        for n in ("scale_backprop", "offset_backprop"):
            if out[n].dtype != np.dtype("<f4") or out[n].shape != (C,):
                problems.append("%s is %s%s, want <f4[%d]" % (n, out[n].dtype.str, list(out[n].shape), C))
        for n in ("reserve_space_3", "reserve_space_4"):
            if out[n].shape != (0,) or out[n].dtype != np.dtype("<f4"):
                problems.append("%s is %s%s, want <f4[0]" % (n, out[n].dtype.str, list(out[n].shape)))
            if ref[n].shape != (0,):
                note = "TF %s reserve_space_3/4 shape %s (fbngrad [0], as TF Eigen)" % (
                    ref["kernel"], list(ref[n].shape))
                if note not in notes:
                    notes.append(note)
        detail = ""
        if not problems:
            ok_x, rx, nx, fx = self.close(self.as_float(xb, dtype), self.as_float(ref["x_backprop"], dtype), X_TOL[dtype])
            ok_s, rs, ns, fs = self.close(out["scale_backprop"], ref["scale_backprop"], PARAM_TOL)
            ok_o, ro, no, fo = self.close(out["offset_backprop"], ref["offset_backprop"], PARAM_TOL)
            if x.size == 0:
                if np.any(out["scale_backprop"] != 0) or np.any(out["offset_backprop"] != 0):
                    problems.append("empty input: scale/offset backprop must be zeros")
            for ok, what, nbad, first in ((ok_x, "x_backprop", nx, fx), (ok_s, "scale_backprop", ns, fs),
                                          (ok_o, "offset_backprop", no, fo)):
                if not ok:
                    problems.append("%s: %d outside tolerance, first %s" % (what, nbad, first))
            detail = "err/tol x %.3g scale %.3g offset %.3g (TF %s)" % (rx, rs, ro, ref["kernel"])
        if notes:
            detail += "; " + "; ".join(notes)
        self.report("FAIL" if problems else "PASS", name, ("; ".join(problems) + "; " if problems else "") + detail)

    # ---- error cases -----------------------------------------------------------------
    def error_case(self, dtype, case):
        cname, fmt = case[0], case[6]
        name = "%s/error/%s" % (dtype, cname)
        if not self.selected(name):
            return
        dy, x, scale, mean, var = error_inputs(case)
        try:
            self.run_tf(dtype, fmt, True, 1e-4, dy, x, scale, mean, var)
            self.report("FAIL", name, "TF accepted an invalid input")
            return
        except self.tf.errors.NotFoundError as e:
            self.report("SKIP", name, "TF has no kernel here: " + core_message(e.message).splitlines()[0])
            return
        except self.tf.errors.OpError as e:
            tf_msg = core_message(e.message)
            onednn = "_MklNative" in e.message
        if not onednn:
            self.eigen_msgs.setdefault(cname, tf_msg)
        rc, err, _, written = self.run_fbngrad(dtype, fmt, True, 1e-4, dy, x, scale, mean, var)
        problems, note = [], ""
        if rc == 0:
            problems.append("fbngrad succeeded")
        if written:
            problems.append("fbngrad wrote %s on an error" % written)
        expected = tf_msg
        if onednn and tf_msg not in err and cname not in self.eigen_msgs:
            self.ask_eigen_kernel()
        if onednn and tf_msg not in err and cname in self.eigen_msgs and self.eigen_msgs[cname] != tf_msg:
            expected = self.eigen_msgs[cname]
            note = "; TF oneDNN says '%s', fbngrad follows TF's Eigen kernel" % tf_msg
        if rc != 0 and expected not in err:
            problems.append("stderr %r lacks TF's %r" % (err.strip(), expected))
        detail = "'%s'%s" % (expected, note)
        self.report("FAIL" if problems else "PASS", name, ("; ".join(problems) + "; " if problems else "") + detail)

    def ask_eigen_kernel(self):
        """The Eigen kernel's messages for ERROR_CASES, from this script in a child process."""
        if self.asked_eigen:
            return
        self.asked_eigen = True
        env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0")
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--eigen-errors"],
                           capture_output=True, text=True, env=env, timeout=600)
        if p.returncode != 0:
            raise RuntimeError("--eigen-errors failed (exit %d): %s" % (p.returncode, p.stderr.strip()[-2000:]))
        for cname, msg in json.loads(p.stdout.strip().splitlines()[-1]).items():
            self.eigen_msgs.setdefault(cname, msg)

    def run_all(self):
        for dtype in DTYPES:
            for fmt in ("NHWC", "NCHW"):
                for train in (True, False):
                    for shape in SHAPES_4D:
                        self.numeric_case(dtype, fmt, train, shape)
            for fmt in ("NDHWC", "NCDHW"):
                for train in (True, False):
                    for shape in SHAPES_5D:
                        self.numeric_case(dtype, fmt, train, shape)
            for train in (True, False):
                self.numeric_case(dtype, "NHWC", train, [5, 7, 11, 4], eps=1e-3)
        for dtype in DTYPES:
            for case in ERROR_CASES:
                self.error_case(dtype, case)


def eigen_errors(runner):
    """Print TF's Eigen-kernel message for each of ERROR_CASES (float32) as one JSON line."""
    if os.environ.get("TF_ENABLE_ONEDNN_OPTS") != "0":
        print("--eigen-errors needs TF_ENABLE_ONEDNN_OPTS=0", file=sys.stderr)
        return 2
    msgs = {}
    for case in ERROR_CASES:
        cname, fmt = case[0], case[6]
        try:
            runner.run_tf("float32", fmt, True, 1e-4, *error_inputs(case))
        except runner.tf.errors.OpError as e:
            if "_MklNative" in e.message:
                print("%s: the oneDNN kernel ran with TF_ENABLE_ONEDNN_OPTS=0" % cname, file=sys.stderr)
                return 1
            msgs[cname] = core_message(e.message)
            continue
        print("%s: TF accepted an invalid input" % cname, file=sys.stderr)
        return 1
    print(json.dumps(msgs))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eigen-errors", action="store_true",
                    help="internal: print the Eigen kernel's error messages as JSON (TF_ENABLE_ONEDNN_OPTS=0)")
    ap.add_argument("--cli", help="path of the fbngrad command-line tool (required)")
    ap.add_argument("--filter", default="", help="only cases whose name matches this regex")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the CLI commands")
    args = ap.parse_args()
    if args.eigen_errors:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf
        r = Runner(args, tf)
        try:
            return eigen_errors(r)
        finally:
            shutil.rmtree(r.tmp, ignore_errors=True)
    if not args.cli:
        ap.error("--cli is required")
    if not os.access(args.cli, os.X_OK):
        print("fbngrad CLI not found or not executable: %s" % args.cli)
        return 2
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    print("TensorFlow %s, TF_ENABLE_ONEDNN_OPTS=%s, numpy %s, CLI %s" % (
        tf.__version__, os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(unset)"), np.__version__, args.cli), flush=True)
    r = Runner(args, tf)
    try:
        r.run_all()
    finally:
        if args.keep:
            print("inputs and outputs kept in " + r.tmp)
        else:
            shutil.rmtree(r.tmp, ignore_errors=True)
    print("%d passed, %d failed, %d skipped" % (r.passed, r.failed, r.skipped))
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
