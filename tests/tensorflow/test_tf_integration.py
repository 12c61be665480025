#!/usr/bin/env python3
"""fbngrad.tensorflow against TensorFlow's own kernels (docs/tensorflow.md, tests/tensorflow/CMakeLists.txt).

A loaded kernel library cannot be unloaded, so the comparison takes two processes:

  1. `--reference FILE` (a child, without fbngrad): TensorFlow's own kernels compute every case
     and write the results (or the error) to FILE;
  2. this process imports fbngrad.tensorflow, computes the same cases, and compares: outputs within
     the parity tests' tolerances (tests/parity/tf_parity.py), the shapes of every output exactly,
     errors by class and message; and, per call, that fbngrad served it (its counters).

Cases: the gradient of tf.compat.v1.nn.fused_batch_norm (FusedBatchNormGradV3) eagerly and in a
tf.function, tf.raw_ops.FusedBatchNormGradV2 eagerly and in a tf.function, for float32, float16,
bfloat16 x NHWC, NCHW, NDHWC, NCDHW x training, inference, on odd shapes and zero-element ones;
fbngrad.tensorflow.fused_batch_norm's gradient against TensorFlow's; bad inputs; and
tf.test.compute_gradient (numeric against analytic) through fbngrad.

With TF_ENABLE_ONEDNN_OPTS=1 (TensorFlow's oneDNN rewrite on), TensorFlow's ops may run oneDNN's
kernels instead: the results must still agree, the wrapper must be served by fbngrad, and the
test reports which ops fbngrad served; --expect-served all|wrapper-only states what must hold.

Prints one line per failure and `N passed, M failed`; exit status 1 on any failure.
"""

import argparse
import os
import pickle
import re
import subprocess
import sys
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

X_TOL = {"float32": 1e-3, "float16": 2e-3, "bfloat16": 2e-2}
PARAM_TOL = 1e-3
DTYPES = {"float32": tf.float32, "float16": tf.float16, "bfloat16": tf.bfloat16}
# Logical (N, spatial..., C) shapes; each is laid out in the case's format.
SHAPES_4D = [(2, 3, 5, 7), (1, 1, 1, 1), (3, 1, 9, 17), (0, 3, 5, 7)]
SHAPES_5D = [(2, 3, 2, 3, 5), (0, 2, 2, 2, 3)]
LAYOUTS = {"NHWC": SHAPES_4D, "NCHW": SHAPES_4D, "NDHWC": SHAPES_5D, "NCDHW": SHAPES_5D}


def physical(shape, fmt):
    return tuple(shape) if fmt in ("NHWC", "NDHWC") else (shape[0], shape[-1]) + tuple(shape[1:-1])


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def inputs(name, shape, fmt, dtype):
    r = rng_for(name)
    phys = physical(shape, fmt)
    c = shape[-1]
    t = DTYPES[dtype]
    return dict(
        dy=tf.cast(r.normal(size=phys).astype(np.float32), t),
        x=tf.cast((r.normal(size=phys) * 2 + 0.5).astype(np.float32), t),
        scale=tf.constant(r.uniform(0.5, 1.5, c).astype(np.float32)),
        offset=tf.constant(r.normal(size=c).astype(np.float32)),
        mean=tf.constant(r.normal(size=c).astype(np.float32)),
        var=tf.constant(r.uniform(0.5, 2.0, c).astype(np.float32)),
    )


def v3_grad(d, fmt, training, bn):
    with tf.GradientTape() as tape:
        tape.watch([d["x"], d["scale"], d["offset"]])
        if training:
            y = bn(d["x"], d["scale"], d["offset"], epsilon=1e-3, data_format=fmt, is_training=True)[0]
        else:
            y = bn(d["x"], d["scale"], d["offset"], mean=d["mean"], variance=d["var"], epsilon=1e-3,
                   data_format=fmt, is_training=False)[0]
    return tape.gradient(y, [d["x"], d["scale"], d["offset"]], output_gradients=d["dy"])


def v2_raw(d, fmt, training):
    # V2's data_format takes NHWC and NCHW only; its eager kernel takes 5-D inputs with them.
    fmt = {"NDHWC": "NHWC", "NCDHW": "NCHW"}.get(fmt, fmt)
    return tf.raw_ops.FusedBatchNormGradV2(
        y_backprop=d["dy"], x=d["x"], scale=d["scale"], reserve_space_1=d["mean"], reserve_space_2=d["var"],
        epsilon=1e-3, data_format=fmt, is_training=training)


def cases(with_wrapper):
    """(name, op served, thunk) for every case; thunk() returns a list of tensors."""
    out = []
    compat_bn = tf.compat.v1.nn.fused_batch_norm
    for dtype in DTYPES:
        for fmt, shapes in LAYOUTS.items():
            for training in (True, False):
                for shape in shapes:
                    base = f"{dtype}/{fmt}/{'train' if training else 'infer'}/{','.join(map(str, shape))}"

                    def mk(path, base=base, shape=shape, fmt=fmt, dtype=dtype, training=training):
                        d = inputs(base, shape, fmt, dtype)
                        if path == "v3_eager":
                            return lambda: v3_grad(d, fmt, training, compat_bn)
                        if path == "v3_function":
                            return lambda: tf.function(lambda: v3_grad(d, fmt, training, compat_bn), autograph=False)()
                        if path == "v2_eager":
                            return lambda: list(v2_raw(d, fmt, training))
                        if path == "v2_function":
                            return lambda: list(tf.function(lambda: v2_raw(d, fmt, training), autograph=False)())
                        if path == "wrapper":  # fbngrad's wrapper here, TensorFlow's op in the reference
                            bn = with_wrapper if with_wrapper else compat_bn
                            return lambda: v3_grad(d, fmt, training, bn)
                        raise ValueError(path)

                    out.append((f"v3_eager/{base}", "FusedBatchNormGradV3", mk("v3_eager")))
                    out.append((f"v3_function/{base}", "FusedBatchNormGradV3", mk("v3_function")))
                    out.append((f"v2_eager/{base}", "FusedBatchNormGradV2", mk("v2_eager")))
                    if len(shape) == 4:  # graph shape inference takes 4-D for NHWC/NCHW only
                        out.append((f"v2_function/{base}", "FusedBatchNormGradV2", mk("v2_function")))
                    out.append((f"wrapper/{base}", "FbngradFusedBatchNormGrad", mk("wrapper")))
    out += error_cases()
    return out


def error_cases():
    """Bad inputs to tf.raw_ops.FusedBatchNormGradV2/V3 (TensorFlow's validation order, steps 3-12)."""
    f = tf.float32

    def z(*s):
        return tf.zeros(s, f)

    def v2(dy, x, sc, m, v, fmt="NHWC", training=True):
        return lambda: list(tf.raw_ops.FusedBatchNormGradV2(
            y_backprop=dy, x=x, scale=sc, reserve_space_1=m, reserve_space_2=v, data_format=fmt,
            is_training=training))

    def v3(dy, x, sc, m, v, fmt="NHWC"):
        return lambda: list(tf.raw_ops.FusedBatchNormGradV3(
            y_backprop=dy, x=x, scale=sc, reserve_space_1=m, reserve_space_2=v, reserve_space_3=z(0),
            data_format=fmt))

    four, c = (2, 2, 2, 3), (3,)
    cs = [
        ("rank3_dy", v2(z(2, 2, 3), z(*four), z(*c), z(*c), z(*c))),
        ("rank3_x", v2(z(*four), z(2, 2, 3), z(*c), z(*c), z(*c))),
        ("rank9_dy", v2(z(1, 1, 1, 1, 1, 1, 1, 1, 3), z(*four), z(*c), z(*c), z(*c))),
        ("rank9_scale", v2(z(*four), z(*four), z(1, 1, 1, 1, 1, 1, 1, 1, 3), z(*c), z(*c))),
        ("rank2_scale", v2(z(*four), z(*four), z(1, 3), z(*c), z(*c))),
        ("rank2_mean", v2(z(*four), z(*four), z(*c), z(1, 3), z(*c))),
        ("rank2_var", v2(z(*four), z(*four), z(*c), z(*c), z(1, 3))),
        ("shape_mismatch", v2(z(2, 2, 2, 3), z(2, 2, 2, 2), z(2), z(2), z(2))),
        ("scale_wrong_c", v2(z(*four), z(*four), z(4), z(*c), z(*c))),
        ("scale_wrong_c_nchw", v2(z(2, 3, 4, 5), z(2, 3, 4, 5), z(5), z(3), z(3), "NCHW")),
        ("mean_wrong_c", v2(z(*four), z(*four), z(*c), z(2), z(*c))),
        ("var_wrong_c", v2(z(*four), z(*four), z(*c), z(*c), z(0))),
        ("empty_scale", v2(z(1, 1, 6, 2), z(1, 1, 6, 2), z(0), z(2), z(2))),
        ("infer_nchw", v2(z(2, 3, 4, 5), z(2, 3, 4, 5), z(3), z(3), z(3), "NCHW", False)),
        ("infer_nchw_5d", v2(z(2, 3, 2, 2, 2), z(2, 3, 2, 2, 2), z(3), z(3), z(3), "NCHW", False)),
        ("infer_nchw_bad_c_first", v2(z(2, 3, 4, 5), z(2, 3, 4, 5), z(4), z(3), z(3), "NCHW", False)),
        ("v3_scale_wrong_c", v3(z(*four), z(*four), z(4), z(*c), z(*c))),
    ]
    return [(f"error/{n}", "FusedBatchNormGradV3" if n.startswith("v3") else "FusedBatchNormGradV2", t)
            for n, t in cs]


def run_case(thunk):
    try:
        outs = thunk()
        return ("ok", [(np.asarray(tf.cast(o, tf.float32)) if o.dtype != tf.float32 else np.asarray(o))
                       for o in outs], [tuple(o.shape) for o in outs])
    except (tf.errors.OpError, ValueError, TypeError) as e:
        return ("error", type(e).__name__, str(getattr(e, "message", e)))


def core_message(msg):
    """An error's own text, without TensorFlow's '[Op:...]' suffix or graph-mode node context."""
    msg = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", msg.split("\n\t [[")[0].split(" [Op:")[0])
    lines = [line for line in msg.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def close(a, b, tol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return False
    same_nan = np.isnan(a) == np.isnan(b)
    ok = np.abs(a - b) <= tol * (1 + np.abs(b))
    return bool(np.all(same_nan & (ok | np.isnan(b) | (a == b))))


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, name, why=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}: {why}", flush=True)


def compare(res, name, got, ref):
    if ref[0] == "error" or got[0] == "error":
        res.check(got[0] == ref[0] == "error" and got[1] == ref[1] and core_message(got[2]) == core_message(ref[2]),
                  name, f"fbngrad {got} vs TensorFlow {ref}")
        return
    _, outs, shapes = got
    _, routs, rshapes = ref
    res.check(shapes == rshapes, name, f"output shapes {shapes} vs TensorFlow's {rshapes}")
    dtype = name.split("/")[1]
    for i, (o, r) in enumerate(zip(outs, routs)):
        tol = X_TOL.get(dtype, 1e-3) if i == 0 else PARAM_TOL
        if not close(o, r, tol):
            err = np.max(np.abs(o.astype(np.float64) - r)) if o.shape == r.shape and o.size else "shape"
            res.check(False, f"{name} output {i}", f"max |fbngrad - TensorFlow| = {err}")
            return
    res.check(True, name)


def gradient_checks(res, fbt, wrapper_only):
    """tf.test.compute_gradient: the Jacobian by finite differences against the analytic one, which
    runs through fbngrad (counted), for V3 via tf.compat.v1 and for the wrapper."""
    r = np.random.default_rng(7)
    for fmt, training, bn_name in [("NHWC", True, "compat"), ("NCHW", True, "compat"), ("NHWC", False, "compat"),
                                   ("NHWC", True, "wrapper"), ("NCHW", False, "wrapper")]:
        shape = physical((2, 3, 2, 3), fmt)
        c = 3
        x0 = tf.constant(r.normal(size=shape).astype(np.float32))
        scale = tf.constant(r.uniform(0.5, 1.5, c).astype(np.float32))
        offset = tf.constant(r.normal(size=c).astype(np.float32))
        mean = tf.constant(r.normal(size=c).astype(np.float32))
        var = tf.constant(r.uniform(0.5, 2.0, c).astype(np.float32))
        w = tf.constant(r.normal(size=shape).astype(np.float32))
        if wrapper_only and bn_name != "wrapper":
            continue  # oneDNN on: TensorFlow's own kernel computes the analytic side
        bn = fbt.fused_batch_norm if bn_name == "wrapper" else tf.compat.v1.nn.fused_batch_norm

        def f(x, s, o):
            kw = {} if training else dict(mean=mean, variance=var)
            y = bn(x, s, o, data_format=fmt, is_training=training, **kw)[0]
            return tf.reduce_sum(y * w)[None]

        before = fbt.calls_served()
        theoretical, numerical = tf.test.compute_gradient(f, [x0, scale, offset], delta=1e-2)
        name = f"compute_gradient/{bn_name}/{fmt}/{'train' if training else 'infer'}"
        served = fbt.calls_served() - before
        # Each Jacobian row of the analytic side is one backward call.
        res.check(served > 0, name, "no call served by fbngrad")
        for th, nu in zip(theoretical, numerical):
            err = np.max(np.abs(th - nu))
            res.check(err < 5e-2 * (1 + np.max(np.abs(nu))), name, f"max |analytic - numeric| = {err}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", help="compute TensorFlow's results into this file (no fbngrad)")
    ap.add_argument("--expect-served", choices=["all", "wrapper-only"], default="all",
                    help="which calls fbngrad must serve: all (oneDNN off), or the wrapper's only (oneDNN on: "
                         "TensorFlow's oneDNN kernels must then serve the 4-D float32 ones; the rest is reported)")
    ap.add_argument("--work", default=".", help="where to write the reference results")
    args = ap.parse_args()

    if args.reference:
        results = {name: run_case(thunk) for name, _, thunk in cases(None)}
        with open(args.reference, "wb") as fh:
            pickle.dump(results, fh)
        return 0

    ref_file = os.path.join(args.work, "tf_reference.pkl")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--reference", ref_file], check=True)
    with open(ref_file, "rb") as fh:
        reference = pickle.load(fh)

    import fbngrad.tensorflow as fbt

    res = Results()
    print(f"TensorFlow {tf.__version__}, oneDNN rewriting {'on' if fbt.onednn_active() else 'off'}, "
          f"fbngrad library {fbt.LIBRARY}", flush=True)
    served_by_op = {}
    for name, op, thunk in cases(fbt.fused_batch_norm):
        before, failed_before = fbt.calls_served(op), fbt.calls_failed()
        got = run_case(thunk)
        served = fbt.calls_served(op) - before
        failed = fbt.calls_failed() - failed_before
        if name.startswith("wrapper/") and len(name.split("/")[-1].split(",")) == 5 and name.split("/")[-1][0] == "0":
            # An empty 5-D input: TensorFlow's gradient has x_backprop in a merged 4-D shape (its
            # kernel's early return) or fails in its transposes (NCDHW inference); the wrapper's is
            # x's shape, with zero scale and offset gradients (docs/tensorflow.md).
            shape = physical(tuple(int(v) for v in name.split("/")[-1].split(",")), name.split("/")[2])
            res.check(got[0] == "ok" and got[2][0] == shape and not np.any(got[1][1]) and not np.any(got[1][2]),
                      name, f"{got}")
        else:
            compare(res, name, got, reference[name])
        path, dtype = name.split("/")[0], name.split("/")[1]
        rank = len(name.split("/")[-1].split(",")) if path != "error" else 0
        must = op == "FbngradFusedBatchNormGrad" or args.expect_served == "all"
        if got[0] == "ok":
            served_by_op.setdefault((path, dtype, rank), []).append(served)
            if must:
                res.check(served == 1, name, f"fbngrad served {served} calls of {op}, not 1")
            elif dtype == "float32" and rank == 4:
                # oneDNN on: TensorFlow rewrites every 4-D float32 one to its oneDNN kernel; others
                # (5-D, and float16/bfloat16 where the CPU lacks oneDNN's support) are reported.
                res.check(served == 0, name, f"expected TensorFlow's oneDNN kernel, but fbngrad served {op}")
        elif must and not name.startswith(("v3_", "wrapper/")):
            # An error in an op fbngrad serves comes from fbngrad's kernel (V3 cases fail in the forward).
            res.check(failed >= 1, name, "the error did not come from fbngrad's kernel")
    for (path, dtype, rank), counts in sorted(served_by_op.items()):
        print(f"  {path:12s} {dtype:9s} {rank}-D: fbngrad served {sum(1 for n in counts if n)} of {len(counts)} calls")
    gradient_checks(res, fbt, wrapper_only=args.expect_served != "all")
    print(f"{res.passed} passed, {res.failed} failed")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
