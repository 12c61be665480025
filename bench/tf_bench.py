#!/usr/bin/env python3
"""TensorFlow's FusedBatchNormGradV2 on the CPU, timed like fbngrad_bench, in its own process.

    build/venv/bin/python bench/tf_bench.py --bench build/cmake/bin/fbngrad_bench \\
        --onednn 1 --filter '/float32/' --out results/tensorflow.json
    build/venv/bin/python bench/tf_bench.py --bench ... --onednn 0 --out results/tensorflow-eigen.json

--onednn 1 sets TF_ENABLE_ONEDNN_OPTS=1 before TensorFlow is imported (TF's oneDNN kernels:
impl `tensorflow`), --onednn 0 sets it to 0 (TF's Eigen kernels: impl `tensorflow-eigen`).
The cases are fbngrad_bench's own (its --benchmark_list_tests, impl fbngrad, narrowed by
--filter, a Python regular expression searched in the name), so the shapes, dtypes,
layouts, modes and /cold variants are the same; the names get the impl above.

Inputs: the same bytes as fbngrad_bench's (the rule in bench/bench_inputs.h, rebuilt here
with numpy; --digest prints the digests that `fbngrad_bench --fbngrad_input_digest` prints,
and the bench_inputs_match_tf_bench test compares them). Each case's outputs are checked
against a float64 evaluation of the op with the parity tests' tolerance before it is timed.

Timing: tf.function around tf.raw_ops.FusedBatchNormGradV2, called from Python (TF's
per-call dispatch cost is included, as it is for a TF user). After a warm-up, each
repetition runs calls for --min-time seconds and reports the mean; /cold writes a 64 MiB
buffer between calls and times each call alone. Output: Google Benchmark's JSON layout
(context, benchmarks: name, run_name, run_type, real_time in ms, GB/s, ...), so
bench_table.py and plot.py read it like fbngrad_bench's.
"""

import argparse
import json
import math
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np

EPSILON = 0.0001
DTYPE_SIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
X_TOL = {"float32": 1e-3, "float16": 2e-3, "bfloat16": 2e-2}  # tests/parity/tf_parity.py
PARAM_TOL = 1e-3
MASK64 = (1 << 64) - 1

# ---- the inputs: bench/bench_inputs.{h,cpp}'s rule ----------------------------------------


def stream_seed(n, h, w, c, stream):
    k = n
    for v in (h, w, c):
        k = (k * 1009 + v) & MASK64
    return (k * 16 + stream) & MASK64


def uniform_pm1(seed, start, count):
    """SplitMix64 outputs start .. start+count-1 of `seed`, 24 bits scaled to [-1, 1) in float32."""
    with np.errstate(over="ignore"):
        i = np.arange(start + 1, start + count + 1, dtype=np.uint64)
        z = np.uint64(seed) + i * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -23) - np.float32(1.0)


def to_storage(f32, dtype):
    """float32 values rounded to the dtype (nearest even): float32, float16, or bfloat16 bits (uint16)."""
    if dtype == "float32":
        return f32
    if dtype == "float16":
        return f32.astype(np.float16)
    b = f32.view(np.uint32)
    return ((b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)


def storage_to_f64(a, dtype):
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def make_inputs(dtype, shape, chunk_rows=1 << 16):
    """dy, x as [M, C] arrays of the dtype's storage in logical NHWC order; scale, mean, var."""
    n, h, w, c = shape
    m = n * h * w
    sdt = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}[dtype]
    dy = np.empty((m, c), sdt)
    x = np.empty((m, c), sdt)
    seed_dy, seed_x = stream_seed(n, h, w, c, 1), stream_seed(n, h, w, c, 2)
    s1 = np.zeros(c, np.int64)
    saa, sab, sbb = (np.zeros(c, np.int64) for _ in range(3))
    for r0 in range(0, m, chunk_rows):
        r1 = min(m, r0 + chunk_rows)
        count = (r1 - r0) * c
        dy[r0:r1] = to_storage(uniform_pm1(seed_dy, r0 * c, count), dtype).reshape(r1 - r0, c)
        xf = (0.25 + 1.5 * uniform_pm1(seed_x, r0 * c, count).astype(np.float64)).astype(np.float32)
        x[r0:r1] = to_storage(xf, dtype).reshape(r1 - r0, c)
        # x = k * 2^-24 exactly; sum k and k^2 exactly (k^2 split as (a*2^13 + b)^2).
        k = np.ldexp(storage_to_f64(x[r0:r1], dtype), 24).astype(np.int64)
        s1 += k.sum(axis=0)
        a, b = k >> 13, k & 8191
        saa += (a * a).sum(axis=0)
        sab += (a * b).sum(axis=0)
        sbb += (b * b).sum(axis=0)
    scale = (0.75 + 0.5 * uniform_pm1(stream_seed(n, h, w, c, 3), 0, c).astype(np.float64)).astype(np.float32)
    mean = np.empty(c, np.float32)
    var = np.empty(c, np.float32)
    for ch in range(c):
        skk = (int(saa[ch]) << 26) + (int(sab[ch]) << 14) + int(sbb[ch])
        mk = float(int(s1[ch])) / float(m)
        v = float(skk) / float(m) - mk * mk
        mean[ch] = np.float32(math.ldexp(mk, -24))
        var[ch] = np.float32(math.ldexp(v if v > 0.0 else 0.0, -48))
    return dy, x, scale, mean, var


def in_layout(a, shape, layout):
    """[M, C] logical NHWC -> the dense tensor of `layout` (4-D)."""
    n, h, w, c = shape
    t = a.reshape(n, h, w, c)
    return np.ascontiguousarray(t.transpose(0, 3, 1, 2)) if layout == "NCHW" else t


def fnv1a(h, data):
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & MASK64
    return h


def digests():
    shape = (2, 5, 7, 12)
    lines = []
    for dtype in ("float32", "float16", "bfloat16"):
        for layout in ("NHWC", "NCHW"):
            dy, x, scale, mean, var = make_inputs(dtype, shape)
            h = 0xCBF29CE484222325
            for a in (in_layout(dy, shape, layout), in_layout(x, shape, layout), scale, mean, var):
                h = fnv1a(h, np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes())
            lines.append("%s %s %s %016x" % (dtype, layout, ",".join(map(str, shape)), h))
    return "\n".join(lines) + "\n"


# ---- the check: float64 evaluation of the op, parity tolerance ------------------------------


def check(dtype, training, inputs, out, chunk_rows=1 << 16):
    """'' when TF's outputs (x_backprop [M, C] storage, scale/offset_backprop) pass, else why not."""
    dy, x, scale, mean, var = inputs
    dx, sb, ob = out
    m, c = dy.shape
    mean64, scale64 = mean.astype(np.float64), scale.astype(np.float64)
    inv = 1.0 / np.sqrt(var.astype(np.float64) + np.float64(np.float32(EPSILON)))
    sum_dy = np.zeros(c)
    sum_dyxc = np.zeros(c)
    for r0 in range(0, m, chunk_rows):
        g = storage_to_f64(dy[r0:r0 + chunk_rows], dtype)
        sum_dy += g.sum(axis=0)
        sum_dyxc += (g * (storage_to_f64(x[r0:r0 + chunk_rows], dtype) - mean64)).sum(axis=0)

    def bad(got, want, tol):
        return np.flatnonzero(~(np.abs(got - want) <= tol * (1.0 + np.abs(want))))

    for name, got, want in (("scale_backprop", sb, sum_dyxc * inv), ("offset_backprop", ob, sum_dy)):
        idx = bad(got.astype(np.float64), want, PARAM_TOL)
        if idx.size:
            i = idx[0]
            return "%s[%d]: got %r, expected %r" % (name, i, float(got[i]), float(want[i]))
    for r0 in range(0, m, chunk_rows):
        g = storage_to_f64(dy[r0:r0 + chunk_rows], dtype)
        if training:
            xc = storage_to_f64(x[r0:r0 + chunk_rows], dtype) - mean64
            want = scale64 * inv * (g - sum_dy / m - xc * inv * inv * sum_dyxc / m)
        else:
            want = g * scale64 * inv
        got = storage_to_f64(dx[r0:r0 + chunk_rows], dtype)
        idx = bad(got.ravel(), want.ravel(), X_TOL[dtype])
        if idx.size:
            i = idx[0]
            return "x_backprop[%d]: got %r, expected %r" % (r0 * c + i, float(got.ravel()[i]), float(want.ravel()[i]))
    return ""


# ---- the cases ------------------------------------------------------------------------------

NAME = re.compile(r"^fbngrad/(float32|float16|bfloat16)/(NHWC|NCHW)/(train|infer)/(\d+),(\d+),(\d+),(\d+)"
                  r"((?:/cold)?)((?:/threads:\d+)?)((?:/iterations:\d+)?)/real_time$")


def list_cases(bench, bench_filter):
    """fbngrad_bench's fbngrad cases: (dtype, layout, training, shape, cold, threads, cold iterations)."""
    names = subprocess.run([bench, "--benchmark_list_tests", "--benchmark_filter=^fbngrad/"],
                           check=True, capture_output=True, text=True).stdout.split()
    cases = []
    for name in names:
        mt = NAME.match(name)
        if not mt or (bench_filter and not re.search(bench_filter, name)):
            continue
        dtype, layout, mode = mt.group(1), mt.group(2), mt.group(3)
        shape = tuple(int(mt.group(i)) for i in range(4, 8))
        threads = int(mt.group(9).split(":")[1]) if mt.group(9) else 0
        iters = int(mt.group(10).split(":")[1]) if mt.group(10) else 0
        cases.append((dtype, layout, mode == "train", shape, bool(mt.group(8)), threads, iters))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--digest", action="store_true", help="print the inputs' digests and exit")
    ap.add_argument("--bench", help="fbngrad_bench, whose case list is used")
    ap.add_argument("--onednn", choices=["0", "1"], default="1", help="TF_ENABLE_ONEDNN_OPTS")
    ap.add_argument("--filter", default="", help="regular expression searched in fbngrad_bench's names")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="TF's intra-op threads")
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds of calls per repetition")
    ap.add_argument("--repetitions", type=int, default=1)
    ap.add_argument("--out", help="JSON file (default: stdout)")
    args = ap.parse_args()
    if args.digest:
        sys.stdout.write(digests())
        return 0
    if not args.bench:
        ap.error("--bench is required (the case list comes from fbngrad_bench)")

    os.environ["TF_ENABLE_ONEDNN_OPTS"] = args.onednn
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    import tensorflow as tf  # after the environment is set: TF reads it at import

    try:  # whether this process really runs TF's oneDNN kernels (TF reads the variable at import)
        from tensorflow.python.util import _pywrap_util_port
        onednn_on = bool(_pywrap_util_port.IsMklEnabled())
    except (ImportError, AttributeError):
        onednn_on = None
    if onednn_on is not None and onednn_on != (args.onednn == "1"):
        print("tf_bench: TF_ENABLE_ONEDNN_OPTS=%s, but TensorFlow reports oneDNN %s" %
              (args.onednn, "on" if onednn_on else "off"), file=sys.stderr)
        return 1
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    impl = "tensorflow" if args.onednn == "1" else "tensorflow-eigen"
    flush = np.zeros((64 << 20) // 8, np.uint64)

    cases = list_cases(args.bench, args.filter)
    results = []
    inputs_key, inputs = None, None
    for dtype, layout, training, shape, cold, threads, cold_iters in cases:
        name = "%s/%s/%s/%s/%s%s%s" % (impl, dtype, layout, "train" if training else "infer",
                                        ",".join(map(str, shape)), "/cold" if cold else "",
                                        "/threads:%d" % threads if threads else "")
        if threads and threads != args.threads:
            print("tf_bench: skipped %s: this process runs %d threads (--threads)" % (name, args.threads),
                  file=sys.stderr)
            continue
        if not training and layout == "NCHW":
            print("tf_bench: skipped %s: TensorFlow's CPU kernel rejects inference in NCHW" % name, file=sys.stderr)
            continue
        if inputs_key != (dtype, shape):
            inputs, inputs_key = None, None
            inputs, inputs_key = make_inputs(dtype, shape), (dtype, shape)
        dy, x, scale, mean, var = inputs

        def tensor(a):
            t = tf.constant(in_layout(a, shape, layout))
            return tf.bitcast(t, tf.bfloat16) if dtype == "bfloat16" else t

        # A graph per case (the attributes are part of it): TF's oneDNN rewrite works on graphs.
        @tf.function
        def op(y_backprop, x, scale, reserve_space_1, reserve_space_2):
            return tf.raw_ops.FusedBatchNormGradV2(y_backprop=y_backprop, x=x, scale=scale,
                                                   reserve_space_1=reserve_space_1, reserve_space_2=reserve_space_2,
                                                   epsilon=EPSILON, data_format=layout, is_training=training)

        args_tf = dict(y_backprop=tensor(dy), x=tensor(x), scale=tf.constant(scale), reserve_space_1=tf.constant(mean),
                       reserve_space_2=tf.constant(var))
        try:
            out = op(**args_tf)
        except Exception as e:  # noqa: BLE001 - TF raises several types; report and go on
            print("tf_bench: %s failed: %s" % (name, str(e).splitlines()[0]), file=sys.stderr)
            results.append({"name": name + "/real_time", "run_name": name + "/real_time", "run_type": "iteration",
                            "error_occurred": True, "error_message": str(e).splitlines()[0]})
            continue
        xb = out[0]
        xb = tf.bitcast(xb, tf.uint16).numpy() if dtype == "bfloat16" else xb.numpy()
        if layout == "NCHW":
            xb = xb.transpose(0, 2, 3, 1)
        why = check(dtype, training, inputs, (xb.reshape(dy.shape), out[1].numpy(), out[2].numpy()))
        if why:
            print("tf_bench: %s disagrees with the float64 evaluation: %s" % (name, why), file=sys.stderr)
            results.append({"name": name + "/real_time", "run_name": name + "/real_time", "run_type": "iteration",
                            "error_occurred": True, "error_message": "disagrees with the float64 evaluation: " + why})
            continue
        del out, xb

        bytes_per_call = 3.0 * dy.size * DTYPE_SIZE[dtype]
        times = []  # seconds per call, one entry per repetition
        iters = cold_iters
        if not cold:
            t0 = time.perf_counter()
            op(**args_tf)
            est = max(time.perf_counter() - t0, 1e-6)
            iters = max(1, int(math.ceil(args.min_time / est)))
        for _ in range(args.repetitions):
            if cold:
                total = 0.0
                for _ in range(iters):
                    flush += np.uint64(1)
                    t0 = time.perf_counter()
                    op(**args_tf)
                    total += time.perf_counter() - t0
            else:
                t0 = time.perf_counter()
                for _ in range(iters):
                    op(**args_tf)
                total = time.perf_counter() - t0
            times.append(total / iters)
        full = name + ("/iterations:%d" % iters if cold else "") + "/real_time"
        label = "TF %s, %s" % (tf.__version__, "oneDNN" if args.onednn == "1" else "Eigen")

        def entry(t, **extra):
            d = {"name": full, "run_name": full, "family_index": 0, "threads": 1, "iterations": iters,
                 "real_time": t * 1e3, "cpu_time": t * 1e3, "time_unit": "ms",
                 "bytes_per_second": bytes_per_call / t, "GB/s": bytes_per_call / t / 1e9, "label": label}
            d.update(extra)
            return d

        for i, t in enumerate(times):
            results.append(entry(t, run_type="iteration", repetitions=args.repetitions, repetition_index=i))
        if args.repetitions > 1:
            for agg, t in (("mean", float(np.mean(times))), ("median", float(np.median(times)))):
                e = entry(t, run_type="aggregate", aggregate_name=agg, repetitions=args.repetitions)
                e["name"] = full + "_" + agg
                results.append(e)
        print("%-60s %10.3f ms %8.2f GB/s" % (name, float(np.median(times)) * 1e3,
                                              bytes_per_call / float(np.median(times)) / 1e9), file=sys.stderr)

    doc = {"context": {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host_name": platform.node(),
                       "executable": "bench/tf_bench.py", "num_cpus": os.cpu_count(),
                       "load_avg": list(os.getloadavg()), "tensorflow_version": tf.__version__,
                       "TF_ENABLE_ONEDNN_OPTS": args.onednn, "tf_onednn_enabled": onednn_on,
                       "tf_intra_op_threads": args.threads},
           "benchmarks": results}
    text = json.dumps(doc, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
